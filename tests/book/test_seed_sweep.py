"""The seed sweep: every notebook's smoke verdict passes for 20 consecutive seeds on correct code.

Slow (about 20 x the smoke run of the whole book); left out of ``make test``. Run it with
``make seeds`` (the ``dpsco seeds`` command) or ``.venv/bin/python -m pytest -m slow tests/book/test_seed_sweep.py``.
"""

from __future__ import annotations

import os

import pytest

from dpsco_book.cli import seed_sweep, toc_notebooks
from tests.conftest import ROOT

NOTEBOOKS = toc_notebooks(ROOT)
COUNT = int(os.environ.get("DPSCO_SEED_COUNT", "20"))


@pytest.mark.slow
@pytest.mark.notebooks
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_smoke_verdict_passes_for_consecutive_seeds(notebook):
    out = seed_sweep([str(notebook)], count=COUNT, start=0, profile="smoke", jobs=2, root=ROOT)
    verdicts = out[notebook.stem]
    failing = {s: v for s, v in verdicts.items() if ": PASS (" not in v}
    assert len(verdicts) == COUNT
    assert not failing, f"{notebook.stem} fails for seeds {failing}"
