"""The companion book's code on top of :mod:`dpsco_lib`: the experiments of each notebook (sweep tasks, rate
predictions, tables, figures and verdict rows), the book's privacy rule, where results are written, and the
``dpsco`` command that executes the notebooks and builds the book."""
