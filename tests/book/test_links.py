"""Every internal link of the built book resolves: each href/src names an existing file, and each
fragment (``page.html#anchor``) names an element id (or ``<a name>``) of that file.

External links (http, mailto, ...) are not followed: the test runs offline.
"""

from __future__ import annotations

from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.book

LINK_ATTRS = {"href", "src"}
EXTERNAL_SCHEMES = {"http", "https", "mailto", "data", "javascript", "tel", "ftp"}


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str, int]] = []  # (tag, url, line)
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.anchors.add(value)
            elif name in LINK_ATTRS:
                self.links.append((tag, value, self.getpos()[0]))

    handle_startendtag = handle_starttag


@cache
def _parse(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser


def _is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme in EXTERNAL_SCHEMES or parts.netloc or url.startswith("//"))


def book_pages(html_root: Path) -> list[Path]:
    """The pages Sphinx wrote (``_static`` holds theme templates such as ``webpack-macros.html``, not pages)."""
    return sorted(p for p in html_root.rglob("*.html") if "_static" not in p.relative_to(html_root).parts)


def broken_links(html_root: Path) -> list[str]:
    """All unresolved internal links of the HTML tree, as ``page:line: <tag> url (why)``."""
    problems: list[str] = []
    for page in book_pages(html_root):
        for tag, url, line in _parse(page).links:
            url = url.strip()
            if not url or _is_external(url):
                continue
            parts = urlsplit(url)
            if parts.scheme:  # an unknown scheme is not a file path either
                problems.append(f"{page.relative_to(html_root)}:{line}: <{tag}> {url} (unknown scheme)")
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(html_root)}:{line}: <{tag}> {url}"
            if not target.is_file():
                problems.append(f"{where} (no such file)")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in _parse(target).anchors:
                problems.append(f"{where} (no anchor #{fragment} in {target.name})")
    return problems


def test_html_tree_has_pages(built_html):
    pages = book_pages(built_html)
    assert len(pages) >= 10, f"only {len(pages)} HTML pages built"


def test_every_internal_link_resolves(built_html):
    problems = broken_links(built_html)
    shown = "\n".join(problems[:40])
    assert not problems, f"{len(problems)} broken internal link(s):\n{shown}"


def test_link_checker_detects_breakage(tmp_path):
    """The checker itself can fail: a missing file, a missing anchor and a good link."""
    (tmp_path / "a.html").write_text(
        '<html><body><h1 id="top">A</h1><a href="b.html#here">ok</a><a href="b.html#gone">x</a>'
        '<img src="missing.png"><a href="#top">self</a><a href="https://example.org/x">ext</a></body></html>'
    )
    (tmp_path / "b.html").write_text('<html><body><p id="here">B</p></body></html>')
    problems = broken_links(tmp_path)
    assert len(problems) == 2, problems
    assert any("b.html#gone" in p and "no anchor" in p for p in problems)
    assert any("missing.png" in p and "no such file" in p for p in problems)
