"""The README's library example (Poly-SFW, Spec F1; Bassily, Guzmán and Nandi, COLT 2021) runs as printed and learns.

The python block of the section "Use the library" is extracted and run in a fresh interpreter (about 8 s of CPU):
it must print the labelled numbers the README shows below it, with the excess risk under half the trivial error
(x = 0) and the certified epsilon at most the target.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT

SECTION = "## Use the library"


def _blocks(lang: str) -> list[str]:
    """The fenced ``lang`` blocks of the README section :data:`SECTION`, in order."""
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
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
