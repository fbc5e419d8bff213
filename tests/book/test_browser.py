"""Open the built book in a real browser (headless Chromium through Playwright) and check what a reader sees.

Every page of the table of contents is served over a loopback HTTP server (as on a web host; the search
page needs http to load its index) and must: render all its math with MathJax (no TeX left in the text, no
MathJax error), load every image, log no console error, request nothing outside the book (it works
offline), and show no unresolved reference or citation ("??"). The search page must find "privacy".
At 1280 px no page scrolls sideways and nothing in its text column is wider than the column outside a box that
scrolls on its own (display equations, tables, code, outputs).

Without Chromium or the ``playwright`` package the module is skipped, except under ``CI=true``, where it
fails: CI installs both.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dpsco_book.cli import toc_docnames
from tests.conftest import ROOT

pytestmark = pytest.mark.book

TIMEOUT_MS = 120_000  # generous: the machine may be shared with other jobs


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> None:
    if _in_ci():
        pytest.fail(f"{reason}; CI=true, where the browser test must run (install chromium and playwright)")
    pytest.skip(reason)


def chromium_executable() -> str | None:
    """``$DPSCO_CHROMIUM``, else ``/usr/bin/chromium``, else a chromium on the PATH."""
    candidates = [os.environ.get("DPSCO_CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(name) for name in ("chromium", "chromium-browser")]
    for cand in candidates:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the 'playwright' package is not installed")
    exe = chromium_executable()
    if exe is None:
        _unavailable("no Chromium executable (looked at $DPSCO_CHROMIUM, /usr/bin/chromium and the PATH)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=exe, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


@pytest.fixture(scope="session")
def site(browser, built_html: Path) -> Iterator[str]:
    """The built HTML served on a free loopback port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(built_html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class PageVisit:
    """A browser tab that records console errors, failed requests and requests leaving the site."""

    def __init__(self, browser: Any, site: str, viewport: dict[str, int] | None = None) -> None:
        self.context = browser.new_context(**({"viewport": viewport} if viewport else {}))
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors: list[str] = []
        self.external: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught exception: {exc}"))
        self.page.on("requestfailed", self._on_failed)
        self.site = site
        self.page.route("**/*", self._route)

    def _on_console(self, msg: Any) -> None:
        if msg.type == "error":
            self.errors.append(f"console error: {msg.text}")

    def _on_failed(self, request: Any) -> None:
        if request.url.startswith(self.site):
            self.errors.append(f"request failed: {request.url} ({request.failure})")

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.site) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:  # the book must work offline: nothing may come from a CDN or elsewhere
            self.external.append(url)
            route.abort()

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser, site) -> Iterator[PageVisit]:
    tab = PageVisit(browser, site)
    try:
        yield tab
    finally:
        tab.close()


WAIT_FOR_MATHJAX = "() => !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"

MATH_REPORT = """() => {
  const maths = [...document.querySelectorAll('span.math, div.math')];
  return {
    math: maths.length,
    rendered: document.querySelectorAll('mjx-container').length,
    untypeset: maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
    errors: [...document.querySelectorAll('mjx-merror')].map(
      e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120)),
  };
}"""

# Text a reader sees, outside code, math and scripts.
VISIBLE_PROSE = """() => {
  const root = document.querySelector('main') || document.body;
  const skip = 'pre, code, script, style, textarea, mjx-container, .math, .highlight, .output';
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: n => (n.parentElement && n.parentElement.closest(skip))
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const parts = [];
  while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
  return parts.join(' ');
}"""

BROKEN_IMAGES = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r); })));
  return {count: imgs.length, broken: imgs.filter(i => !(i.naturalWidth > 0)).map(i => i.getAttribute('src'))};
}"""

RAW_INLINE_MATH = re.compile(r"\$[^$\s][^$]{0,200}?\$")


NOTEBOOK_PAGE_REPORT = """() => {
  const se = document.scrollingElement;
  const verdicts = [...document.querySelectorAll('table.dpsco-verdict')];
  const main = document.querySelector('main') || document.body;
  return {
    scrollWidth: se.scrollWidth, clientWidth: se.clientWidth,
    verdicts: verdicts.length,
    verdictRows: verdicts.reduce((n, t) => n + t.querySelectorAll('tbody tr').length, 0),
    failedRows: verdicts.reduce((n, t) => n + t.querySelectorAll('tr.dpsco-verdict-fail').length, 0),
    verdictOverflow: verdicts.filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).length,
    parameterCells: [...main.querySelectorAll('.cell')].filter(
      c => /^\\s*profile\\s*=\\s*["']/m.test((c.querySelector('.cell_input') || {}).textContent || '')).length,
    figures: [...main.querySelectorAll('img')].map(i => ({src: i.getAttribute('src') || '', alt: i.alt || ''})),
    provenance: document.querySelectorAll('.dpsco-provenance').length,
    repository: [...document.querySelectorAll('a[href]')].filter(
      a => a.href.startsWith('https://github.com/dpsco-companion/dpsco-companion')).length,
  };
}"""


# At the viewport's width: how wide the page is, and every element of the text column that sticks out of the column
# without being inside a box that scrolls (or clips) sideways on its own. MathJax's assistive MathML (clipped to
# nothing for screen readers) and invisible elements do not count.
FITS_REPORT = """() => {
  const doc = document.documentElement;
  const column = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const box = column.getBoundingClientRect();
  const scrolls = el => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const fits = r => r.right <= box.right + 1 && r.left >= box.left - 1;
  // inside a box that scrolls or clips sideways and itself fits in the column
  const inScrollBox = el => {
    for (let p = el.parentElement; p && p !== column; p = p.parentElement) {
      if (scrolls(p) && fits(p.getBoundingClientRect())) return true;
    }
    return false;
  };
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const wide = [];
  for (const el of column.querySelectorAll('*')) {
    if (el.closest('mjx-assistive-mml, script, style, template')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    if (fits(r) || inScrollBox(el)) continue;
    const px = x => Math.round(x);
    const edges = `${px(r.left)}..${px(r.right)} px, column ${px(box.left)}..${px(box.right)}`;
    wide.push(`${name(el)} (${edges}): ` + (el.textContent || '').trim().slice(0, 60));
    if (wide.length >= 8) break;
  }
  return {scrollWidth: doc.scrollWidth, innerWidth: window.innerWidth, columnWidth: Math.round(box.width), wide};
}"""


VIEWPORT_1280 = {"width": 1280, "height": 900}


def _layout_problems(page: Any, docname: str) -> list[str]:
    """At 1280 px no page scrolls sideways, and nothing in the text column is wider than the column unless it sits
    in a box that scrolls on its own: display equations (theorem boxes too), tables, code and outputs.
    A notebook page also shows its verdict table with every check passing, no parameter cell, real alt text on
    every figure, the provenance box and a link to the repository."""
    problems = []
    r = page.evaluate(FITS_REPORT)
    if r["scrollWidth"] > r["innerWidth"]:
        problems.append(f"the page scrolls sideways ({r['scrollWidth']} > {r['innerWidth']} px): {r['wide'][:4]}")
    if r["wide"]:
        problems.append(f"wider than the {r['columnWidth']} px text column: " + "; ".join(r["wide"]))
    if not docname.startswith("notebooks/"):
        return problems
    r = page.evaluate(NOTEBOOK_PAGE_REPORT)
    if r["scrollWidth"] > r["clientWidth"]:
        problems.append(f"the page scrolls sideways ({r['scrollWidth']} > {r['clientWidth']} px)")
    if not (r["verdicts"] >= 1 and r["verdictRows"] >= 1):
        problems.append("no verdict table")
    if r["failedRows"]:
        problems.append(f"{r['failedRows']} failed check(s) in the verdict table")
    if r["verdictOverflow"]:
        problems.append("the verdict table is wider than its column")
    if r["parameterCells"]:
        problems.append("a parameter cell is visible")
    figures = [f for f in r["figures"] if "logo" not in f["alt"].lower()]
    if not figures:
        problems.append("no figure")
    for fig in figures:
        alt = fig["alt"].strip()
        if not (alt and alt != fig["src"] and not re.search(r"\.(png|svg|jpe?g)$", alt) and "/" not in alt.split()[0]):
            problems.append(f"figure {fig['src']} has no real alt text ({alt!r})")
    if r["provenance"] != 1:
        problems.append("no 'How this page was produced' box")
    if not r["repository"]:
        problems.append("no link to the repository")
    return problems


def _render_problems(page: Any, docname: str) -> list[str]:
    """All math typeset by MathJax without error, no raw TeX or '??' in the text, every image loaded."""
    problems = []
    math = page.evaluate(MATH_REPORT)
    if (docname.startswith("notebooks/") or docname == "book/intro") and not math["math"]:
        problems.append("no math on the page (expected theorem statements)")
    if math["math"] and not math["rendered"]:
        problems.append(f"MathJax rendered nothing ({math['math']} math elements)")
    if math["untypeset"]:
        problems.append(f"math left as TeX: {math['untypeset'][:5]}")
    if math["errors"]:
        problems.append(f"MathJax errors: {math['errors'][:5]}")
    prose = page.evaluate(VISIBLE_PROSE)
    if "$$" in prose:
        problems.append("raw $$ in the text")
    raw = RAW_INLINE_MATH.findall(prose)
    if raw:
        problems.append(f"unparsed dollar math in the text: {raw[:5]}")
    if "??" in prose:
        problems.append("an unresolved reference or citation ('??') in the text")
    images = page.evaluate(BROKEN_IMAGES)
    if images["broken"]:
        problems.append(f"images that did not load: {images['broken']}")
    if docname.startswith("notebooks/") and not images["count"]:
        problems.append("no figure on a notebook page")
    return problems


@pytest.mark.parametrize("docname", toc_docnames(ROOT))
def test_page_in_browser(browser, site, docname):
    """One load of the page at 1280 x 900 px checks everything a reader sees: its layout (measured once the math is
    typeset, before any lazy image is forced to load), then its math, text and images, and no console error,
    failed request or request leaving the book over the whole visit. Every problem of the page is reported."""
    visit = PageVisit(browser, site, viewport=VIEWPORT_1280)
    try:
        page = visit.page
        response = page.goto(site + docname + ".html", wait_until="load")
        assert response is not None and response.ok, f"{docname}: HTTP {response.status if response else 'none'}"
        has_math = page.evaluate("() => document.querySelectorAll('span.math, div.math').length > 0")
        loads_mathjax = page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')")
        problems = []
        if has_math and not loads_mathjax:
            problems.append("the page has math (maybe only in the sidebar) but does not load MathJax")
        if loads_mathjax:
            page.wait_for_function(WAIT_FOR_MATHJAX)
            page.evaluate("() => MathJax.startup.promise.then(() => true)")
        problems += _layout_problems(page, docname)
        problems += _render_problems(page, docname)
        if visit.external:
            problems.append(f"requests outside the book (it must work offline): {visit.external[:5]}")
        problems += visit.errors[:5]
    finally:
        visit.close()
    assert not problems, f"{docname}: " + "; ".join(problems)


def test_citations_link_to_the_bibliography(visit, site):
    page = visit.page
    page.goto(site + "book/part2-non-euclidean-sco.html", wait_until="load")
    cites = page.evaluate(
        "() => [...document.querySelectorAll('a[href*=\"bibliography.html#\"]')].map(a => a.textContent.trim())"
    )
    assert cites, "no citation links on the Part II chapter"
    assert all(c and c != "??" for c in cites), f"unresolved citations: {cites}"
    assert "BGN21" in cites, f"expected a citation of BGN21, got {sorted(set(cites))[:10]}"


def test_search_finds_privacy(visit, site):
    page = visit.page
    page.goto(site + "search.html?q=privacy", wait_until="load")
    page.wait_for_selector("#search-results li")
    hits = page.locator("#search-results li").count()
    assert hits > 0, "search for 'privacy' returned no result"
    assert not visit.external, f"the search page requested {visit.external[:5]}"
    assert not visit.errors, "; ".join(visit.errors[:5])
