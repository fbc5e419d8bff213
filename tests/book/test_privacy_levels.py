"""Theorem checks run at the privacy people deploy: no notebook sets an epsilon above 10 outside a cell tagged
``ablation`` (whose figure says it is an ablation)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from dpsco_book.cli import toc_notebooks
from tests.conftest import ROOT

NOTEBOOKS = toc_notebooks(ROOT)
_NAME = re.compile(r"^(?:eps\w*|epsilon\w*)$", re.IGNORECASE)


def _number(node: ast.AST) -> float | None:
    """A numeric constant, or the largest numeric constant of a list/tuple literal (an eps grid)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.List | ast.Tuple):
        vals = [v for v in (_number(e) for e in node.elts) if v is not None]
        return max(vals) if vals else None
    return None


def _pairs(tree: ast.AST):
    """(name, value node) of every assignment (element-wise for tuples) and keyword argument."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and node.value is not None:
                    yield t.id, node.value
                elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for el, val in zip(t.elts, node.value.elts, strict=False):
                        if isinstance(el, ast.Name):
                            yield el.id, val
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg, node.value


def large_epsilons(source: str, limit: float = 10.0) -> list[str]:
    """The epsilon-like names (eps..., epsilon...) set to a number above ``limit`` in a cell's source."""
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))
    hits = []
    for name, val in _pairs(ast.parse(code)):
        v = _number(val)
        if _NAME.match(name) and v is not None and v > limit:
            hits.append(f"{name} = {ast.unparse(val)}")
    return hits


def test_the_pattern_finds_large_epsilons():
    assert large_epsilons("EPS_N = 300.0\nEPS_D = 3_000\nrun(epsilon=1e3)\neps0=2") == [
        "EPS_N = 300.0", "EPS_D = 3000", "epsilon = 1000.0"]
    assert large_epsilons("eps = 1.0\nEPSILONS = [0.25, 8]\ndelta = 1e-5\nK, EPS0 = 50, 4.0") == []
    assert large_epsilons("K, EPS0 = 4, 50.0\n%time f()") == ["EPS0 = 50.0"]
    assert large_epsilons("EPS_GRID = [0.25, 1, 32]") == ["EPS_GRID = [0.25, 1, 32]"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_no_large_epsilon_outside_ablation_cells(notebook):
    nb = json.loads(notebook.read_text())
    bad = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or "ablation" in cell.get("metadata", {}).get("tags", []):
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        bad += [f"cell {i}: {hit}" for hit in large_epsilons(src)]
    assert not bad, f"{notebook.name} sets epsilon above 10 outside an 'ablation' cell: {bad}"
