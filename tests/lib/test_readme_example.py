"""The README's library example (Poly-SFW, Spec F1; Bassily, Guzmán and Nandi, COLT 2021) runs as printed and learns.

The python block of the section "Use the library" is extracted and run in a fresh interpreter (about 8 s of CPU):
it must print the labelled numbers the README shows below it, with the excess risk under half the trivial error
(x = 0) and the certified epsilon at most the target.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SECTION = "## Use the library"


def _blocks(lang: str, heading: str = SECTION) -> list[str]:
    """The fenced ``lang`` blocks of the README section under ``heading``, in order."""
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    section = text[start:end if end >= 0 else None]
    return re.findall(rf"^```{lang}\n(.*?)^```$", section, flags=re.S | re.M)


def _value(lines: list[str], label: str) -> float:
    line = next(ln for ln in lines if ln.startswith(label))
    return float(line[len(label):].split()[0])


def test_readme_library_example_runs_learns_and_prints_what_the_readme_shows(tmp_path):
    code = _blocks("python")
    assert len(code) == 1, "the section must hold exactly one python block"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", code[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    excess, trivial = _value(lines, "excess risk"), _value(lines, "trivial (x = 0)")
    assert excess < 0.5 * trivial, f"the example does not learn: excess {excess} against trivial {trivial}"
    assert _value(lines, "certified epsilon") <= 1.0 + 1e-9
    assert "replace_one neighbours" in lines[-1]
    shown = _blocks("text")
    assert shown and shown[0].strip().splitlines() == lines, "the README's printed output is out of date"


# ---------------------------------------------------------------------------------------------------------------
# The README's "Your data" example runs and prints a sane comparison table.
#
# The python block of the section is extracted and run in a fresh interpreter (scikit-learn and diffprivlib, both
# test-only dependencies, must be installed): the table must have the rows the README shows, every certified epsilon
# must be at most the target 1, every test RMSE finite and positive, the non-private fit must beat the constant
# prediction, and the private fits must stay within a factor 1.5 of the constant prediction's error (they are
# constrained to the declared geometry).
# ---------------------------------------------------------------------------------------------------------------
YOUR_DATA = "## Your data"
ROWS = ("dpsco", "dpsco", "diffprivlib LinearRegression", "non-private least squares", "constant 200")


def _table(text: str) -> list[tuple[str, str]]:
    """(label, rest) of each data row; the label is everything before the delta column."""
    lines = text.strip().splitlines()
    assert lines[0].split()[:2] == ["model", "(epsilon"], lines[0]
    return [(ln[:32].strip(), ln[32:]) for ln in lines[1:]]


def test_readme_your_data_example_prints_a_sane_table(tmp_path):
    pytest.importorskip("sklearn")
    if importlib.util.find_spec("diffprivlib") is None:  # not imported here: the example shims its import
        why = "diffprivlib is not installed (test extra)"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    code = _blocks("python", YOUR_DATA)
    assert len(code) == 1, "the section must hold exactly one python block"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", code[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr
    rows = _table(run.stdout)
    assert len(rows) == len(ROWS) and all(lab.startswith(want) for (lab, _), want in zip(rows, ROWS, strict=True))
    rmse = {}
    for label, rest in rows:
        fields = rest.split()
        rmse[label] = float(fields[-1])
        assert math.isfinite(rmse[label]) and rmse[label] > 0
        if "certified" in fields:
            assert 0 < float(fields[fields.index("certified") - 1]) <= 1.0 + 1e-9
    constant = rmse[rows[-1][0]]
    assert rmse["non-private least squares"] < constant
    for label, _ in rows[:2]:
        assert rmse[label] <= 1.5 * constant, f"{label}: test RMSE {rmse[label]} against {constant} for a constant"
    shown = _table(_blocks("text", YOUR_DATA)[0])
    assert [lab for lab, _ in shown] == [lab for lab, _ in rows], "the README's printed table is out of date"
