"""Build the book from the smoke-executed notebooks with warnings as errors, and look at the HTML."""

from __future__ import annotations

import re

import pytest

from dpsco_book.cli import toc_notebooks
from tests.conftest import ROOT

pytestmark = pytest.mark.book


def test_index_exists(built_html):
    index = built_html / "index.html"
    assert index.is_file()
    # Jupyter Book writes index.html as a redirect to the root page of the table of contents.
    target = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', index.read_text())
    assert target, "index.html is neither the book's front page nor a redirect to it"
    front = built_html / target.group(1)
    assert front.is_file(), f"index.html redirects to a missing page {target.group(1)}"
    assert "dpsco-companion" in front.read_text()


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
    # A theorem box, or for the atlas and the performance page the remark / criterion box they check.
    assert re.search(r'class="[^"]*proof (theorem|criterion|remark)', html), f"{page.name} shows no theorem box"


@pytest.mark.parametrize("nb", toc_notebooks(ROOT), ids=lambda p: p.stem)
def test_notebook_page_says_how_to_cite_it(built_html, nb):
    """Each notebook page ends with its citation box, naming every theorem it checks and a BibTeX entry."""
    import json

    page = built_html / nb.relative_to(ROOT).with_suffix(".html")
    import html as html_lib

    # The text of the page: the BibTeX block is syntax-highlighted, i.e. split by <span> tags.
    text_of_page = html_lib.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
    assert "How to cite this page" in text_of_page, f"{page.name} has no citation box"
    box = text_of_page[text_of_page.index("How to cite this page"):]
    number = nb.stem.split("_", 1)[0]
    assert f"@misc{{dpsco_companion_nb{number}," in box, f"{page.name}: no BibTeX entry for notebook {number}"
    text = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown")
    for label in re.findall(r":label:\s*((?:thm|crit)-[\w-]+)", text):
        assert label.split("-", 1)[1] in box.split("@misc", 1)[0], f"{page.name}: citation box omits {label}"


# The book's Sphinx extension and the run-time table: fast checks, no build needed.


def _book_extension():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dpsco_sphinx", ROOT / "book" / "_ext" / "dpsco_sphinx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_pipes_are_escaped_outside_literals_and_math():
    ext = _book_extension()
    lines = [
        "Bound ||g||_q <= L0 and |phi'| <= 2, ``|x|`` and :math:`\\|x\\|_1` untouched.",
        "",
        "Example::",
        "",
        "    |raw| stays",
        "",
        ">>> abs(-1) | 0",
        "1",
        "",
        "After |it|.",
    ]
    ext.escape_pipes(lines)
    assert lines[0] == (
        "Bound \\|\\|g\\|\\|_q <= L0 and \\|phi'\\| <= 2, ``|x|`` and :math:`\\|x\\|_1` untouched."
    )
    assert lines[4] == "    |raw| stays"
    assert lines[6] == ">>> abs(-1) | 0"
    assert lines[9] == "After \\|it\\|."


def test_docstring_tables_and_headings():
    ext = _book_extension()
    table = ["====  =====", "a     b", "====  =====", "|V|   ln d", "====  =====", ""]
    ext.escape_pipes(table)
    assert table[3] == "\u2223V\u2223   ln d"  # same width: the columns stay aligned
    doc = ["Summary.", "", "Contents", "--------", "* item", "", "Parameters", "----------"]
    ext.headings_to_rubrics(doc)
    assert doc[2:4] == [".. rubric:: Contents", ""]
    assert doc[6] == ".. rubric:: Parameters"  # after napoleon no known section heading is left


def test_duplicate_inline_scripts_are_dropped():
    ext = _book_extension()

    class Script:
        def __init__(self, filename, body):
            self.filename, self.priority, self.attributes = filename, 500, {"body": body}

    scripts = [Script("", "const A = 1"), Script("x.js", ""), Script(None, "const A = 1"), Script(None, "let B")]
    ext.dedupe_scripts(None, "page", "page.html", {"script_files": scripts}, None)
    assert [s.attributes["body"] for s in scripts] == ["const A = 1", "", "let B"]


def test_timings_table(tmp_path):
    import json

    from dpsco_book.cli import EXECUTED, timings_table

    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/01_a\n  - file: notebooks/02_b\n"
    )
    assert "No run times" in timings_table(tmp_path)
    (tmp_path / EXECUTED).mkdir(parents=True)
    (tmp_path / EXECUTED / "timings-smoke.json").write_text(json.dumps({"notebooks/01_a.ipynb": 12.345}))
    (tmp_path / EXECUTED / "timings-paper.json").write_text("not json")
    table = timings_table(tmp_path).splitlines()
    assert table[0] == "| notebook | smoke (s) | full (s) | paper (s) |"
    assert table[2] == "| `01_a` | 12.3 | \u2014 | \u2014 |"
    assert table[3] == "| `02_b` | \u2014 | \u2014 | \u2014 |"


def test_every_figure_cell_has_a_caption_and_alt_text():
    """A code cell that shows a figure (``plt.show()``) carries ``mystnb.figure`` (name, caption) and
    ``mystnb.image.alt``: without them the page shows an unlabelled image whose alt text is its file name."""
    import json

    missing = []
    for nb in toc_notebooks(ROOT):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] != "code" or "plt.show()" not in "".join(cell["source"]):
                continue
            meta = cell.get("metadata", {}).get("mystnb", {})
            figure, alt = meta.get("figure", {}), meta.get("image", {}).get("alt", "")
            if not (figure.get("name") and figure.get("caption") and alt.strip()):
                missing.append(f"{nb.stem} cell {i}")
    assert not missing, f"figure cells without a caption, a name or alt text: {missing}"


def test_every_theorem_box_is_in_a_part_summary_table():
    """Each ``thm-*`` label of a notebook in the book is linked from the summary table of a part chapter."""
    import json

    labels: dict[str, str] = {}
    for nb in toc_notebooks(ROOT):
        cells = json.loads(nb.read_text())["cells"]
        for cell in cells:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                labels.update({lab: nb.stem for lab in re.findall(r":label:\s*(thm-[\w-]+)", text)})
    referenced: set[str] = set()
    for chapter in sorted((ROOT / "book").glob("part*.md")):
        referenced |= set(re.findall(r"\{prf:ref\}`(?:[^`<]*<)?(thm-[\w-]+)>?`", chapter.read_text()))
    missing = sorted(f"{lab} ({stem})" for lab, stem in labels.items() if lab not in referenced)
    assert labels, "no theorem labels found in the notebooks"
    assert not missing, f"theorems missing from the part chapters' summary tables (book/part*.md): {missing}"
