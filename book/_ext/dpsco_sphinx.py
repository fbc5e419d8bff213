r"""Sphinx extension of the book: the API page's docstrings, and two fixes to the HTML head.

**MathJax on every page.** Sphinx loads MathJax only on pages whose body has math, but the navigation
sidebar of *every* page shows chapter titles with math (``Stochastic mirror descent in $\ell_p$ setups``),
which stayed raw TeX on pages such as the bibliography. The extension sets the HTML assets policy to
``always``.

**Duplicate inline scripts.** With Sphinx 7.4, an inline script that an extension registers after the
builder started (sphinx-thebe's ``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) is emitted
twice, once as registered by the builder (file name ``''``) and once by the application (``None``), so the
browser throws "Identifier 'THEBE_JS_URL' has already been declared" on every page. ``dedupe_scripts``
drops the second copy.

**The algorithm registry.** The ``algorithm-registry`` directive renders the table of
:data:`dpsco_lib.algorithms.registry.REGISTRY` (key, theorem, runner, relation, notebook) and the API of every
registered algorithm module, so the API page lists exactly the registered algorithms.

**How to cite each notebook.** Every notebook page ends with a "How to cite this page" box that names the
results it checks (read off its own ``thm-*`` and ``crit-*`` labels) and gives a BibTeX entry for it.

**Docstrings.**
The library's docstrings are numpy style (turned into reST by ``sphinx.ext.napoleon``) and state the
math in plain text, for instance ``||g||_q <= L0`` or ``|phi'| <= 2``. In reST a ``|word|`` is a
substitution reference, so that notation would make the ``-W`` build fail although the library never
uses substitutions. This extension runs after napoleon on every docstring and

* escapes ``|`` outside inline literals, roles (``:math:`...```), literal blocks, directives and
  doctest blocks, so the text shows as written;
* in simple tables (``=====  =====`` borders) replaces ``|`` by the look-alike U+2223 instead, since
  a backslash would shift the columns;
* turns a free-standing section heading that napoleon does not know (``Contents``, ``Model``,
  ``Limitations`` ...) into a ``.. rubric::``, because a heading inside an autodoc block would clash
  with the page's own sections (duplicate ids, inconsistent title levels).

Everything else (malformed indentation, unbalanced emphasis markers) still fails the build, on purpose:
such a docstring is wrong and is fixed in the library. Until it is, the config value
``dpsco_verbatim_docstrings`` (in ``_config.yml``, each entry with the reason) can name the objects whose
docstring is shown verbatim, as a literal block.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.util.docutils import SphinxDirective

_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")
# Directives whose body is not reST text (code, math, raw output): copied verbatim. The bodies of all other
# directives (napoleon's ``.. attribute::``, admonitions, ...) are text and are escaped like the rest.
_VERBATIM_DIRECTIVE = re.compile(
    r"^\s*\.\.\s+(code|code-block|sourcecode|math|literalinclude|raw|parsed-literal|doctest|testcode|testoutput"
    r"|highlight|productionlist|graphviz)::"
)
# Inline literals, roles with their content, and default-role interpreted text are left untouched.
_PROTECTED = re.compile(r"(``.+?``|:[\w:+.-]+:`[^`]*`|`[^`]*`_{0,2})")
_PIPE = re.compile(r"(?<!\\)\|")
_TABLE_BORDER = re.compile(r"^\s*=+( +=+)+\s*$")
_MID = "\u2223"  # DIVIDES, drawn like a vertical bar


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def headings_to_rubrics(lines: list[str]) -> None:
    """Replace ``Title`` + underline (with a blank line or the start above) by ``.. rubric:: Title``."""
    for i in range(len(lines) - 1):
        title, under = lines[i], lines[i + 1]
        if not title.strip() or not _UNDERLINE.match(under) or _UNDERLINE.match(title):
            continue
        if _indent(title) != _indent(under) or len(under.strip()) < len(title.strip()):
            continue
        if i > 0 and lines[i - 1].strip():
            continue
        lines[i] = " " * _indent(title) + ".. rubric:: " + title.strip()
        lines[i + 1] = ""


def _escape_text(line: str, replacement: str = r"\\|") -> str:
    parts = _PROTECTED.split(line)
    # re.split with one capturing group: even indices are plain text, odd ones the protected matches.
    return "".join(part if k % 2 else _PIPE.sub(replacement, part) for k, part in enumerate(parts))


def escape_pipes(lines: list[str]) -> None:
    """Escape ``|`` in running text; literal blocks, directives and doctests are copied verbatim."""
    verbatim_indent: int | None = None  # inside a literal block / directive body indented deeper than this
    in_doctest = False
    in_table = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _TABLE_BORDER.match(line) and verbatim_indent is None and not in_doctest:
            # A simple table: top border, header rule, bottom border (followed by a blank line or the end).
            last = i + 1 == len(lines) or not lines[i + 1].strip()
            in_table = not (in_table and last)
            continue
        if in_table:
            lines[i] = _escape_text(line, _MID)
            continue
        if verbatim_indent is not None:
            if not stripped or _indent(line) > verbatim_indent:
                continue
            verbatim_indent = None
        if in_doctest:
            if stripped:
                continue
            in_doctest = False
            continue
        if stripped.startswith(">>>"):
            in_doctest = True
            continue
        if _VERBATIM_DIRECTIVE.match(line):
            verbatim_indent = _indent(line)
            continue
        lines[i] = _escape_text(line)
        if stripped.endswith("::"):
            verbatim_indent = _indent(line)


def process_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if name in app.config.dpsco_verbatim_docstrings:
        lines[:] = ["::", "", *("    " + line for line in lines), ""]
        return
    headings_to_rubrics(lines)
    escape_pipes(lines)


def _script_key(script: Any) -> tuple[Any, ...]:
    attrs = getattr(script, "attributes", {}) or {}
    return (str(getattr(script, "filename", script) or ""), getattr(script, "priority", None), sorted(attrs.items()))


def dedupe_scripts(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Keep the first of several identical ``<script>`` entries (same file or body, attributes, priority)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[str] = set()
    unique = []
    for script in scripts:
        key = repr(_script_key(script))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


# --------------------------------------------------------------------------------------------------------
# "How to cite this page" on every notebook page
# --------------------------------------------------------------------------------------------------------

#: Labels of the boxes a notebook checks: theorems (``thm-F1``) and engineering criteria (``crit-perf-floor``).
_CHECKED_LABEL = re.compile(r"^(thm|crit)-[A-Za-z0-9-]+$")


def checked_labels(doctree: Any) -> list[str]:
    """Labels of the sphinx-proof boxes (``thm-*``, ``crit-*``) defined on a page, in page order."""
    from docutils import nodes

    found: list[str] = []
    for node in doctree.findall(nodes.Element):
        for node_id in node.get("ids", []):
            if _CHECKED_LABEL.match(node_id) and node_id not in found:
                found.append(node_id)
    return found


def notebook_bibtex(number: str, title: str, labels: list[str], version: str, url: str = "") -> str:
    """A BibTeX entry for one notebook of the book (the book's own entry is on the How-to-cite page)."""
    checks = ", ".join(label.split("-", 1)[1] for label in labels) or "none"
    title_tex = title.replace("{", "").replace("}", "").replace("&", r"\&")
    return (
        f"@misc{{dpsco_companion_nb{number},\n"
        f"  author  = {{{{dpsco-companion contributors}}}},\n"
        f"  title   = {{Notebook {number}: {title_tex}}},\n"
        f"  howpublished = {{In dpsco-companion, version {version}, notebook {number}}},\n"
        f"  year    = {{2026}},\n"
        + (f"  url     = {{{url}}},\n" if url else "")
        + f"  note    = {{Checks {checks}; state the profile and seed of the numbers you cite}}\n"
        f"}}"
    )


def add_citation_box(app: Any, doctree: Any) -> None:
    """Append "How to cite this page" to every notebook page: its checks and a BibTeX entry.

    Runs on ``doctree-read``, so the box is part of the page's text (searchable, in every output format).
    The checked results are read off the page's own theorem and criterion labels, so the box cannot
    drift from the notebook.
    """
    from docutils import nodes

    docname = app.env.docname
    if not docname.startswith("notebooks/"):
        return
    sections = [child for child in doctree.children if isinstance(child, nodes.section)]
    if not sections:
        return
    page = sections[0]
    title = page[0].astext() if page.children and isinstance(page[0], nodes.title) else docname
    number = docname.split("/", 1)[1].split("_", 1)[0]
    labels = checked_labels(doctree)
    try:
        from dpsco_lib._version import __version__ as version
    except ImportError:  # the library is not importable: the book still builds
        version = "unknown"
    checks = ", ".join(label.split("-", 1)[1] for label in labels)
    box = nodes.admonition(classes=["dpsco-cite"])
    box += nodes.title(text="How to cite this page")
    box += nodes.paragraph(
        text=(
            f"This is notebook {number} of dpsco-companion (version {version}). "
            + (f"It checks {checks}. " if labels else "")
            + "Cite the book (see the How to cite page), this notebook with the entry below, and the papers "
            "whose results it checks (named in its theorem boxes). Numbers depend on the profile and seed set "
            "in the notebook's parameter cell: state both."
        )
    )
    base = (getattr(app.config, "html_baseurl", "") or "").rstrip("/")
    bib = notebook_bibtex(number, title, labels, version, f"{base}/{docname}.html" if base else "")
    literal = nodes.literal_block(bib, bib)
    literal["language"] = "bibtex"
    box += literal
    page += box


class AlgorithmRegistry(SphinxDirective):
    """``{algorithm-registry}`` (in a MyST page): the registry table, then ``automodule`` of each registered module.

    The generated content is MyST Markdown (a ``{list-table}``, ``{py:func}`` and ``{doc}`` roles and
    ``{eval-rst}`` blocks for autodoc), because inside a MyST page a directive's nested content is parsed by MyST
    (and a backtick fence's title may not contain backticks).
    """

    has_content = False

    def _lines(self) -> list[str]:
        from dpsco_book.catalogue import notebook_of
        from dpsco_lib.algorithms.registry import REGISTRY

        out = ["```{list-table} The registered algorithms (dpsco_lib.algorithms.registry.REGISTRY)",
               ":header-rows: 1", ":widths: 32 7 35 13 13", "",
               "* - Algorithm", "  - Result", "  - Runner", "  - Neighbours", "  - Notebook"]
        for r in REGISTRY:
            rel = (r.relation or "non-private").replace("_", "-")
            out += [f"* - {r.name}", f"  - {r.spec}", f"  - {{py:func}}`~{r.runner.__module__}.{r.runner.__name__}`",
                    f"  - {rel}", f"  - {{doc}}`notebook {notebook_of(r.key)[:2]} </notebooks/{notebook_of(r.key)}>`"]
        out += ["```", ""]
        modules = ["dpsco_lib.algorithms._result", "dpsco_lib.algorithms.registry"]
        modules += [m for m in dict.fromkeys(r.runner.__module__ for r in REGISTRY) if m not in modules]
        for m in modules:
            out += [f"```{{rubric}} {m}", "```", "", "```{eval-rst}", f".. automodule:: {m}", "   :members:",
                    "```", ""]
        return out

    def run(self) -> list[Any]:
        from docutils import nodes
        from docutils.statemachine import StringList

        container = nodes.container()
        self.state.nested_parse(StringList(self._lines(), source="algorithm-registry"), self.content_offset,
                                container)
        return list(container.children)


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("algorithm-registry", AlgorithmRegistry)
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.add_config_value("dpsco_verbatim_docstrings", [], "env", [list])
    # napoleon listens with the default priority 500; run after it, on the reST it produced.
    app.connect("autodoc-process-docstring", process_docstring, priority=600)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("doctree-read", add_citation_box)
    app.set_html_assets_policy("always")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
