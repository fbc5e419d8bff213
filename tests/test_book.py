"""Build the book from the smoke-executed notebooks with warnings as errors, and look at the HTML."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpsco_lib.cli import _stage_book_sources, _stage_mathjax, toc_notebooks

from ._nbtools import SMOKE_DIR, execute_smoke
from .conftest import ROOT

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def built_html(tmp_path_factory) -> Path:
    smoke = ROOT / SMOKE_DIR
    for nb in toc_notebooks(ROOT):
        executed = smoke / nb.relative_to(ROOT)
        # Reuse the copies tests/test_notebooks.py executed; execute the ones that are missing or stale.
        if not executed.is_file() or executed.stat().st_mtime < nb.stat().st_mtime:
            run = execute_smoke(ROOT, nb)
            assert run.error is None, f"{nb.name} failed at {run.error}"
    _stage_book_sources(ROOT, smoke)  # refresh config, toc and prose
    _stage_mathjax(ROOT, smoke)
    out = tmp_path_factory.mktemp("book")
    exe = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert exe, "jupyter-book is not installed in this environment"
    proc = subprocess.run(
        [exe, "build", str(smoke), "--path-output", str(out), "-W", "--keep-going", "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"jupyter-book build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return out / "_build" / "html"


def test_index_exists(built_html):
    index = built_html / "index.html"
    assert index.is_file()
    assert "dpsco-companion" in index.read_text()


@pytest.mark.parametrize("nb", toc_notebooks(ROOT), ids=lambda p: p.stem)
def test_notebook_page_has_verdict_and_figures(built_html, nb):
    page = built_html / nb.relative_to(ROOT).with_suffix(".html")
    assert page.is_file(), f"no HTML page for {nb.name}"
    html = page.read_text()
    assert re.search(r"VERDICT \S+: PASS", html), f"{page.name} shows no passing verdict"
    images = re.findall(r'<img[^>]+src="([^"]+)"', html)
    assert images, f"{page.name} has no figure"
    for src in images:
        if not src.startswith(("http", "data:")):
            assert (page.parent / src).resolve().is_file(), f"{page.name}: broken image {src}"
    assert "prf:theorem" in html or "proof theorem" in html, f"{page.name} shows no theorem box"
