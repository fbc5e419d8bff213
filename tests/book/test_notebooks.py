"""Every notebook of the book, executed at the smoke profile; a failed verdict fails the test."""

from __future__ import annotations

import json

import pytest

from dpsco_book.cli import toc_notebooks
from tests._nbtools import execute_smoke
from tests.conftest import ROOT

NOTEBOOKS = toc_notebooks(ROOT)

#: The notebooks whose rates are declared claims at the smoke profile (each claim runs its negative controls there;
#: a control the claim fails to reject with the required power fails the verdict, hence this test).
CLAIMS_AT_SMOKE = ("03_", "05_", "06_", "07_", "09_", "10_", "11_", "12_", "13_", "14_", "17_")


def test_book_lists_notebooks():
    assert NOTEBOOKS, "_toc.yml lists no notebooks"
    missing = [str(nb) for nb in NOTEBOOKS if not nb.is_file()]
    assert not missing, f"_toc.yml lists notebooks that do not exist: {missing}"


@pytest.mark.notebooks
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_notebook_smoke(notebook):
    run = execute_smoke(ROOT, notebook)
    assert run.error is None, f"{notebook.name} failed at {run.error} (executed copy: {run.output})"
    nb = json.loads(run.output.read_text())
    text = "".join(
        out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"])
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
    )
    assert "VERDICT" in text and ": PASS (" in text, f"{notebook.name} printed no passing verdict line"
    claims = [row for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell.get("outputs", [])
              for row in out.get("metadata", {}).get("dpsco", {}).get("claims", [])]
    if notebook.stem.startswith(CLAIMS_AT_SMOKE):
        assert claims, f"{notebook.name} recorded no declared claim at the smoke profile"
    assert all(row["passed"] for row in claims), f"{notebook.name}: a claim failed or a control passed: {claims}"
    # A figure cell must show only its figure: a trailing expression's value (an execute_result) next to a
    # named figure gives the book a second copy of the figure's target ("Duplicate explicit target name").
    for i, cell in enumerate(nb["cells"]):
        outputs = cell.get("outputs", []) if cell["cell_type"] == "code" else []
        if any("image/png" in out.get("data", {}) for out in outputs):
            extra = [out["output_type"] for out in outputs if out["output_type"] == "execute_result"]
            assert not extra, f"{notebook.name} cell {i}: a figure cell also displays a value (end it with plt.show())"
