"""Helpers for tests that execute notebooks: where the smoke copies go, and how to run one."""

from __future__ import annotations

from pathlib import Path

import nbformat

from dpsco_book.cli import EXECUTED, NotebookRun, _execute, _stage_book_sources

SMOKE_DIR = Path("_build") / "smoke"


def execute_smoke(root: Path, notebook: Path, out_dir: Path | None = None) -> NotebookRun:
    """Execute one notebook at the smoke profile into ``_build/smoke`` (a staged book tree)."""
    out = out_dir or root / SMOKE_DIR
    _stage_book_sources(root, out)
    return _execute(notebook, root, out, "smoke", 1, False)


def make_notebook(path: Path, code_cells: list[str], *, title: str = "# Test notebook") -> Path:
    """Write a minimal contract-following notebook (markdown title, parameters cell, code cells)."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "paper"\nseed = 1\nn_jobs = 1')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(title), params, *(nbformat.v4.new_code_cell(c) for c in code_cells)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


__all__ = ["EXECUTED", "SMOKE_DIR", "execute_smoke", "make_notebook"]
