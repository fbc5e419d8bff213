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


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.add_config_value("dpsco_verbatim_docstrings", [], "env", [list])
    # napoleon listens with the default priority 500; run after it, on the reST it produced.
    app.connect("autodoc-process-docstring", process_docstring, priority=600)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.set_html_assets_policy("always")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
