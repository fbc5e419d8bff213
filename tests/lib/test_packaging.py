"""The library is a library: its wheel holds only ``dpsco_lib``, importing it and running an algorithm loads no
plotting, solver or notebook machinery (matplotlib and cvxpy are the ``plot`` and ``exact`` extras, and a call that
needs a missing one names it), and no module of it names a notebook or the book's package (``dpsco_book``)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT

LIB = ROOT / "dpsco_lib"
# Modules the book owns; none of them may reach the library's wheel.
BOOK_MODULE = re.compile(r"(_checks|/atlas|/crossover|/cli|/tables|/results|/privacy_rule)\.py$")
NOTEBOOK_REF = re.compile(r"notebooks?\W{0,3}\d{2}", re.IGNORECASE)
# Loading any of these on `import dpsco_lib` or on running an algorithm would tie the library to the book, or
# to an extra the core install leaves out (cvxpy and Clarabel: `exact`; matplotlib: `plot`).
HEAVY = ("matplotlib", "cvxpy", "clarabel", "papermill", "nbclient", "nbformat", "jupyter", "IPython", "dpsco_book")


def _notebook_stems() -> list[str]:
    return sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def _setuptools_major() -> int:
    return int(importlib.metadata.version("setuptools").split(".")[0])


def test_library_wheel_holds_only_the_library(tmp_path):
    if _setuptools_major() < 77:
        why = "building the wheel offline needs setuptools>=77 (the pyproject's build requirement, test extra)"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    src = tmp_path / "src"
    src.mkdir()
    for item in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / item, src / item)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(LIB, src / "dpsco_lib", ignore=skip)
    # The book's package sits beside the library, as in the checkout: the wheel must still leave it out.
    shutil.copytree(ROOT / "book" / "dpsco_book", src / "book" / "dpsco_book", ignore=skip)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("dpsco_lib-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    outside = [n for n in names if not n.startswith("dpsco_lib/") and ".dist-info/" not in n]
    assert not outside, f"the wheel holds files outside dpsco_lib/: {outside}"
    book = [n for n in names if BOOK_MODULE.search(n)]
    assert not book, f"the wheel holds the book's modules: {book}"
    stems = _notebook_stems()
    named = [n for n in names if any(s in n for s in stems)]
    assert not named, f"the wheel holds modules named after a notebook: {named}"
    assert not [n for n in names if re.search(r"/\d{2}_", n)], "a module named like a notebook (NN_...)"
    entry = [n for n in names if n.endswith("entry_points.txt")]
    scripts = zipfile.ZipFile(wheel).read(entry[0]).decode() if entry else ""
    assert "dpsco_book" not in scripts and "cli:" not in scripts, f"the library declares the book's command: {scripts}"


def test_importing_and_running_the_library_loads_no_notebook_machinery():
    code = "\n".join([
        "import json, sys",
        "import numpy as np",
        "import dpsco_lib",
        "import dpsco_lib.algorithms",
        "from dpsco_lib.algorithms.registry import get_algorithm",
        "rec = get_algorithm('S1 SMD')",
        "ex = rec.example(np.random.default_rng(0))",
        "kw = dict(ex.kwargs)",
        "if rec.private:",
        "    kw.update(epsilon=ex.epsilon, delta=ex.delta)",
        "res = rec.runner(*ex.args, rng=np.random.default_rng(1), **kw)",
        "assert res is not None",
        "print(json.dumps(sorted(sys.modules)))",
    ])
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["PYTHONPATH"] = str(ROOT)  # the library only: the book's package is not on the path
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[0].startswith(HEAVY)]
    assert not heavy, f"import dpsco_lib / running an algorithm loaded: {heavy}"


def test_a_missing_extra_is_named_where_it_is_needed():
    """Without cvxpy or matplotlib (blocked in a fresh interpreter) the algorithms still run; an exact optimum
    raises ImportError naming ``dpsco-lib[exact]`` and the figure style one naming ``dpsco-lib[plot]``."""
    code = "\n".join([
        "import sys",
        "sys.modules.update(cvxpy=None, matplotlib=None, clarabel=None)",
        "import numpy as np",
        "from dpsco_lib.algorithms.registry import get_algorithm",
        "from dpsco_lib.problems import hard_least_squares",
        "rec = get_algorithm('S1 SMD')",
        "ex = rec.example(np.random.default_rng(0))",
        "kw = dict(ex.kwargs)",
        "if rec.private:",
        "    kw.update(epsilon=ex.epsilon, delta=ex.delta)",
        "assert rec.runner(*ex.args, rng=np.random.default_rng(1), **kw) is not None",
        "problem = hard_least_squares(1.0, 3, set_kind='l1ball')",
        "for what, call in [('exact', problem.cvxpy_optimum), ('plot', lambda: __import__('dpsco_lib.plotting'))]:",
        "    try:",
        "        call()",
        "    except ImportError as exc:",
        "        print(what, exc)",
        "    else:",
        "        print(what, 'no ImportError')",
    ])
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert "pip install 'dpsco-lib[exact]'" in lines["exact"], lines
    assert "pip install 'dpsco-lib[plot]'" in lines["plot"], lines


def test_the_library_names_no_notebook_and_not_the_book_package():
    bad = []
    stems = _notebook_stems()
    for path in sorted(LIB.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if NOTEBOOK_REF.search(line) or "dpsco_book" in line or any(s in line for s in stems):
                bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "library modules that name a notebook or the book's package:\n" + "\n".join(bad)


def test_the_patterns_find_what_they_look_for():
    assert NOTEBOOK_REF.search("Experiments of notebook 05") and NOTEBOOK_REF.search("notebooks 14-16")
    assert NOTEBOOK_REF.search("(Notebook 09)") and not NOTEBOOK_REF.search("a notebook kernel")
    assert BOOK_MODULE.search("dpsco_lib/experiments/gg_checks.py") and BOOK_MODULE.search("dpsco_lib/cli.py")
    assert not BOOK_MODULE.search("dpsco_lib/experiments/sweep.py")
