"""The notebook contract that can be checked statically."""

from __future__ import annotations

import io
import os
import re
import tokenize

import nbformat
import pytest
import yaml

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


def _launch_cell(nb) -> tuple[int, object]:
    cells = [(i, c) for i, c in enumerate(nb.cells) if "launch" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"needs exactly one cell tagged 'launch' (the Colab and Binder set-up), found {len(cells)}"
    return cells[0]


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_has_the_launch_cell(path):
    """Right after the parameters cell (so after papermill's injected parameters), hidden on the page: in Colab it
    installs the library (exact and plot extras) and the book's package from the book's repository with pip in a
    subprocess (plain Python, no shell magic), and it picks the profile of a launched notebook."""
    nb = nbformat.read(path, as_version=4)
    index, cell = _launch_cell(nb)
    params = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    assert index == params + 1, f"{path.name}: the launch cell must follow the parameters cell"
    assert not any(c.cell_type == "code" for c in nb.cells[:params]), f"{path.name}: code before the parameters"
    assert "remove-cell" in cell.metadata["tags"], f"{path.name}: the launch cell is not hidden on the page"
    src = cell.source
    assert 'if "google.colab" in sys.modules:' in src, f"{path.name}: the install does not run only in Colab"
    assert not re.search(r"^\s*[!%]", src, re.M), f"{path.name}: shell or magic lines in the launch cell"
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert f'REPO = "git+{repo}"' in src, f"{path.name}: the install does not use the repository of _config.yml"
    for spec in ("dpsco-lib[exact,plot] @ {REPO}", "dpsco-book @ {REPO}#subdirectory=book", '"pip", "install"'):
        assert spec in src, f"{path.name}: the launch cell lacks {spec}"


@pytest.mark.parametrize(
    ("injected", "env", "expected"),
    [(None, None, "paper"), (None, "smoke", "smoke"), ("smoke", None, "smoke"), ("full", "smoke", "full"),
     ("smoke", "smoke", "smoke"), (None, "paper", "paper")],
)
def test_launch_cell_picks_the_profile(injected, env, expected, monkeypatch):
    """$DPSCO_PROFILE (Binder's start script, the Colab branch, ``dpsco reproduce``) replaces the default profile;
    a profile other than the default passed by papermill is kept; with neither the notebook runs at paper."""
    nb = nbformat.read(ALL[0], as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    _, launch = _launch_cell(nb)
    if env is None:
        monkeypatch.delenv("DPSCO_PROFILE", raising=False)
    else:
        monkeypatch.setenv("DPSCO_PROFILE", env)
    ns: dict = {}
    exec(params.source, ns)
    if injected is not None:  # papermill's injected-parameters cell runs between the two
        ns["profile"] = injected
    exec(launch.source, ns)
    assert ns["profile"] == expected
    assert os.environ.get("DPSCO_PROFILE") == env, "outside Colab the launch cell changes no environment variable"
