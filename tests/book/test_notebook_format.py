"""The notebook contract that can be checked statically."""

from __future__ import annotations

import io
import re
import tokenize

import nbformat
import pytest

from dpsco_book.cli import toc_notebooks
from tests.conftest import ROOT

ALL = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_contract(path):
    import json

    raw = json.loads(path.read_text())
    # nbformat >= 4.5 requires cell ids (missing ones are only a warning today, "a hard error in future versions")
    no_id = [i for i, c in enumerate(raw["cells"]) if "id" not in c]
    assert not no_id, f"{path.name}: cells {no_id} have no id (nbformat 4.5 cell ids)"
    ids = [c["id"] for c in raw["cells"]]
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate cell ids"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    stored = [i for i, c in enumerate(code) if c.outputs or c.execution_count is not None]
    assert not stored, f"{path.name}: code cells {stored} have stored outputs (commit notebooks without outputs)"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name}: needs exactly one cell tagged 'parameters', found {len(params)}"
    for name in ("profile", "seed", "n_jobs"):
        assert re.search(rf"^{name}\s*=", params[0].source, re.M), f"{path.name}: parameters cell lacks {name}"
    assert re.search(r'^profile\s*=\s*"paper"', params[0].source, re.M), "default profile must be 'paper'"
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("# "), "first cell: markdown title"
    assert "{prf:theorem}" in first.source or "{prf:" in first.source, f"{path.name}: no theorem statement"
    assert "{cite" in first.source, f"{path.name}: the opening cell cites no source"
    assert "Verdict(" in code[-1].source and ".finish()" in code[-1].source, f"{path.name}: last cell is no verdict"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


def test_every_notebook_is_in_the_book():
    listed = {p.resolve() for p in toc_notebooks(ROOT)}
    orphans = [p.name for p in ALL if p.resolve() not in listed]
    assert not orphans, f"notebooks missing from _toc.yml: {orphans}"


def code_lines(source: str) -> int:
    """Logical lines of code (statements, a decorator or a compound statement's header each count one; blank
    lines, comments and the continuation lines of a statement wrapped at the line length do not)."""
    magics = [ln for ln in source.splitlines() if ln.lstrip().startswith(("%", "!"))]
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))
    tokens = tokenize.generate_tokens(io.StringIO(code + "\n").readline)
    return len(magics) + sum(1 for tok in tokens if tok.type == tokenize.NEWLINE)


def test_code_lines_counts_statements_not_wrapped_lines():
    assert code_lines("x = f(\n    1,\n    2,\n)\n# c\n\nfor i in x:\n    y = i\n%time g()") == 4


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_is_glue(path):
    """The notebook contract: at most 150 lines of code per notebook and 20 per code cell (logical lines, so
    wrapping a statement at the notebooks' line length does not count); each notebook's sweep tasks, fits,
    figures and tables live in the library and in the book's package (``dpsco_book``)."""
    nb = nbformat.read(path, as_version=4)
    counts = [code_lines(c.source) for c in nb.cells if c.cell_type == "code"]
    assert sum(counts) <= 150, f"{path.name}: {sum(counts)} code lines (at most 150)"
    big = [(i, n) for i, n in enumerate(counts) if n > 20]
    assert not big, f"{path.name}: code cells (index among code cells, lines) over 20 lines: {big}"
