"""The README's "Your data" example runs and prints a sane comparison table.

The python block of the section is extracted and run in a fresh interpreter (scikit-learn and diffprivlib, both
test-only dependencies, must be installed): the table must have the rows the README shows, every certified epsilon
must be at most the target 1, every test RMSE finite and positive, the non-private fit must beat the constant
prediction, and the private fits must stay within a factor 1.5 of the constant prediction's error (they are
constrained to the declared geometry).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

SECTION = "## Your data"
ROWS = ("dpsco", "dpsco", "diffprivlib LinearRegression", "non-private least squares", "constant 200")


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(rf"^```{lang}\n(.*?)^```$", text[start:end if end >= 0 else None], flags=re.S | re.M)


def _table(text: str) -> list[tuple[str, str]]:
    """(label, rest) of each data row; the label is everything before the delta column."""
    lines = text.strip().splitlines()
    assert lines[0].split()[:2] == ["model", "(epsilon"], lines[0]
    return [(ln[:32].strip(), ln[32:]) for ln in lines[1:]]


def test_readme_your_data_example_prints_a_sane_table(tmp_path):
    pytest.importorskip("sklearn")
    if importlib.util.find_spec("diffprivlib") is None:  # not imported here: the example shims its import
        pytest.skip("diffprivlib is not installed (test extra)")
    code = _blocks("python")
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
    shown = _table(_blocks("text")[0])
    assert [lab for lab, _ in shown] == [lab for lab, _ in rows], "the README's printed table is out of date"
