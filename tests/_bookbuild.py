"""Build the book once per test session, from the smoke-executed notebooks, with warnings as errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from dpsco_book.cli import _stage_mathjax, notebook_status, prepare_book, toc_notebooks

from ._nbtools import SMOKE_DIR, execute_smoke


def build_smoke_book(root: Path, out: Path) -> Path:
    """Execute missing or stale smoke copies, stage the sources, build into ``out``; return the HTML dir."""
    smoke = root / SMOKE_DIR
    for nb in toc_notebooks(root):
        # Reuse the copies tests/book/test_notebooks.py executed; execute the ones that are missing, failed or stale
        # (the notebook, the library or the book package changed since their run: prepare_book refuses those).
        if not notebook_status(root, nb, smoke).publishable:
            run = execute_smoke(root, nb)
            assert run.error is None, f"{nb.name} failed at {run.error}"
    # The same staging as `dpsco build`: config, toc, prose, run-time table, provenance boxes, hidden parameters;
    # every notebook must be publishable (ran, passing verdict), so the smoke book is the whole book.
    plan = prepare_book(root, smoke)
    assert not plan.partial, f"not publishable: missing {plan.missing}, refused {plan.refused}"
    _stage_mathjax(root, smoke)
    exe = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert exe, "jupyter-book is not installed in this environment"
    proc = subprocess.run(
        [exe, "build", str(smoke), "--path-output", str(out), "-W", "--keep-going", "--quiet"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode == 0, f"jupyter-book build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return out / "_build" / "html"
