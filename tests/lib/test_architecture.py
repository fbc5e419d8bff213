"""The layout rules of the library and of the book's package, checked on their source: no private-name imports
across modules, no function over 80 code lines, every algorithm module reachable from the registry, and the tests
mirroring the packages (each module's tests in one file at the mirrored path)."""

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


# ---------------------------------------------------------------------------------------------------------------
# The tests mirror the packages: dpsco_lib/<pkg>/<m>.py -> tests/lib/<pkg>/test_<m>.py,
# book/dpsco_book/<m>.py -> tests/book/test_<m>.py (tests/README.md).
# ---------------------------------------------------------------------------------------------------------------
TESTS = ROOT / "tests"

#: Library modules without a test file of their own, and where their code is tested instead.
UNMIRRORED_MODULES = {
    "dpsco_lib/plotting.py": "figure helpers, drawn by the book's module tests (tests/book)",
    "dpsco_lib/algorithms/samplers.py": "the proximal sampler, checked against quadrature with the mechanism that "
                                        "uses it (tests/lib/algorithms/test_regularized_exponential.py)",
    "dpsco_lib/problems/hard_games.py": "the hidden-vertex games of notebook 10 (tests/book/"
                                        "test_bias_reduced_boosted_saddle.py)",
    "dpsco_lib/problems/hard_groups.py": "the planted group losses of X2 (tests/lib/algorithms/test_applications.py)",
    "dpsco_lib/problems/lecture.py": "the lecture problems, run by their algorithms' tests (tests/lib/algorithms/"
                                     "test_sparse.py, test_regularized_exponential.py)",
    "dpsco_lib/problems/lifted.py": "the l1-lifted max of losses of X2 (tests/lib/algorithms/test_applications.py)",
}

#: Test files that check a rule over the whole library or the whole book rather than one module.
WHOLE_PACKAGE_TESTS = {
    "lib/test_architecture.py", "lib/test_packaging.py", "lib/test_fuzz_bad_inputs.py", "lib/test_readme_example.py",
    "lib/test_benchmarks.py", "lib/test_mutation_fast.py", "lib/test_add_algorithm.py",
    "lib/test_bad_inputs.py",  # bad input at the public boundaries, one regression test each
    "lib/privacy/accounting/test_package.py",  # the accounting package's exports and bad input across it
    "lib/experiments/test_sweep_distributed.py",  # sweep.py on a dask cluster (the optional 'dist' extra)
    "book/test_book.py", "book/test_browser.py", "book/test_links.py", "book/test_notebooks.py",
    "book/test_notebook_format.py", "book/test_privacy_levels.py", "book/test_seed_sweep.py",
    "book/test_full_profile.py", "book/test_reach.py",
}


def _home(module: Path) -> Path:
    """The test file of a library or book module."""
    if BOOK in module.parents:
        return TESTS / "book" / f"test_{module.name}"
    rel = module.relative_to(LIB)
    return TESTS / "lib" / rel.parent / f"test_{rel.name}"


def _public_modules() -> list[Path]:
    return [p for p in SOURCES if not p.name.startswith("_")]


def test_every_module_has_its_test_file():
    missing = [f"{p.relative_to(ROOT)} -> {_home(p).relative_to(ROOT)}" for p in _public_modules()
               if not _home(p).is_file() and str(p.relative_to(ROOT)) not in UNMIRRORED_MODULES]
    assert not missing, "modules without their test file:\n" + "\n".join(missing)


def test_unmirrored_modules_are_still_unmirrored():
    stale = [m for m in UNMIRRORED_MODULES if not (ROOT / m).is_file() or _home(ROOT / m).is_file()]
    assert not stale, f"remove from UNMIRRORED_MODULES (gone, or it has its test file now): {stale}"


def test_every_test_file_mirrors_a_module_or_checks_a_whole_package():
    homes = {_home(p) for p in _public_modules()}
    files = sorted(TESTS.glob("lib/**/test_*.py")) + sorted(TESTS.glob("book/**/test_*.py"))
    stray = [str(f.relative_to(TESTS)) for f in files
             if f not in homes and str(f.relative_to(TESTS)) not in WHOLE_PACKAGE_TESTS]
    assert not stray, "test files that mirror no module (rename, or list in WHOLE_PACKAGE_TESTS):\n" + "\n".join(stray)
    assert not [f for f in TESTS.glob("test_*.py")], "test files belong in tests/lib or tests/book"


def test_every_test_folder_is_a_package():
    folders = [d for d in TESTS.rglob("*") if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))]
    missing = [str(d.relative_to(ROOT)) for d in folders if not (d / "__init__.py").is_file()]
    assert not missing, f"test folders without __init__.py (their modules would clash by basename): {missing}"
