"""The layout rules of the library and of the book's package, checked on their source: no private-name imports
across modules, no function over 80 code lines, every algorithm module reachable from the registry."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from tests.conftest import ROOT

LIB = ROOT / "dpsco_lib"
BOOK = ROOT / "book" / "dpsco_book"
PACKAGES = {"dpsco_lib": LIB, "dpsco_book": BOOK}
SOURCES = sorted(LIB.rglob("*.py")) + sorted(BOOK.rglob("*.py"))
MAX_CODE_LINES = 80


def _module_name(path: Path) -> str:
    rel = path.relative_to(BOOK.parent if BOOK in path.parents else ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _private_imports(path: Path) -> list[str]:
    """Private names this module imports from another module where the rules forbid it.

    Forbidden: any private name imported into an algorithm module from another module, and any private name
    imported across sub-packages (``dpsco_lib.privacy.accounting`` may share helpers inside itself).
    """
    tree = ast.parse(path.read_text())
    me = _module_name(path)
    mine = _package(me, path)
    bad = []
    for node in ast.walk(tree):
        top = (node.module or "").partition(".")[0] if isinstance(node, ast.ImportFrom) else ""
        if not isinstance(node, ast.ImportFrom) or node.level or top not in PACKAGES:
            continue
        is_package = (PACKAGES[top] / "/".join(node.module.split(".")[1:])).is_dir()
        src_pkg = node.module if is_package else node.module.rpartition(".")[0]
        for alias in node.names:
            name = alias.name
            if not name.startswith("_") or name.startswith("__"):
                continue
            if mine == "dpsco_lib.algorithms" or src_pkg != mine:
                bad.append(f"{me}: from {node.module} import {name}")
    return bad


def test_no_private_names_imported_across_modules():
    bad = [b for p in SOURCES for b in _private_imports(p)]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def _comment_or_blank_lines(source: str) -> set[int]:
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    return set(range(1, source.count("\n") + 2)) - code_lines


def _docstring_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = fn.body[0] if fn.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return set(range(first.lineno, first.end_lineno + 1))  # type: ignore[operator]
    return set()


def code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip: set[int]) -> int:
    """Body lines that are not blank, not comment-only and not the docstring (nested defs count)."""
    body = set(range(fn.body[0].lineno, fn.end_lineno + 1))  # type: ignore[operator]
    return len(body - skip - _docstring_lines(fn))


def _long_functions(path: Path) -> list[str]:
    source = path.read_text()
    skip = _comment_or_blank_lines(source)
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = code_lines(child, skip)
                if n > MAX_CODE_LINES:
                    out.append(f"{path.relative_to(ROOT)}:{child.lineno} {prefix}{child.name}: {n} code lines")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return out


def test_no_function_over_80_code_lines():
    long = [f for p in SOURCES for f in _long_functions(p)]
    assert not long, f"functions over {MAX_CODE_LINES} code lines:\n" + "\n".join(long)


@pytest.mark.parametrize("source", ["def f():\n    '''doc\n\n    more'''\n    # c\n\n    x = 1\n    return x\n"])
def test_code_line_counter_skips_docstring_comments_and_blanks(source):
    fn = ast.parse(source).body[0]
    assert code_lines(fn, _comment_or_blank_lines(source)) == 2  # type: ignore[arg-type]


def test_every_algorithm_module_is_registered():
    from dpsco_lib.algorithms.registry import REGISTRY

    used = {r.runner.__module__ for r in REGISTRY}
    modules = {_module_name(p) for p in (LIB / "algorithms").glob("*.py")}
    support = {"dpsco_lib.algorithms", "dpsco_lib.algorithms._result", "dpsco_lib.algorithms.registry",
               "dpsco_lib.algorithms.samplers", "dpsco_lib.algorithms.mean_estimation",
               "dpsco_lib.algorithms.vr_sensitivity"}
    assert modules - used - support == set(), "algorithm modules without a registered runner"
