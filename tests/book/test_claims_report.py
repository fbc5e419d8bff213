"""`dpsco claims`: the claims stored by executed notebooks, read back and summarized."""

from __future__ import annotations

import json
from pathlib import Path

from dpsco_book.claims_report import claims_of, collect_claims, format_claims, format_seed_claims, seed_claims


def _row(claim: str, *, accepted: bool = True, power_a: float | None = 1.0, power_b: float = 0.99) -> dict:
    passed = accepted and (power_a is None or power_a >= 0.8) and power_b >= 0.8
    return {"notebook": "05_demo", "claim": claim, "statement": "s", "window": "[-0.58, -0.42]",
            "measured": "slope -0.5", "accepted": accepted, "power_learns_nothing": power_a,
            "power_wrong_regime": power_b, "false_alarm": 0.03, "required_power": 0.8, "resamples": 200,
            "passed": passed, "cite": "BGN21"}


def _executed(path: Path, rows: list[dict], seed: int = 0) -> Path:
    out = {"output_type": "display_data", "data": {"text/plain": "table"},
           "metadata": {"dpsco": {"verdict": "PASS", "summary": "VERDICT 05_demo: PASS (1/1 checks)",
                                  "claims": rows}}}
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [out]}],
          "metadata": {"dpsco": {"profile": "smoke", "seed": seed}}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))
    return path


def test_claims_are_read_back_with_profile_and_seed(tmp_path):
    nb = _executed(tmp_path / "notebooks" / "05_demo.ipynb", [_row("F1 exponent in n")], seed=3)
    rows = claims_of(nb)
    assert rows[0]["claim"] == "F1 exponent in n" and rows[0]["profile"] == "smoke" and rows[0]["seed"] == 3
    assert collect_claims(tmp_path) == rows
    assert claims_of(tmp_path / "missing.ipynb") == []


def test_the_table_names_a_claim_whose_control_passes():
    text = format_claims([_row("F1 exponent in n"), _row("F2 exponent in n", power_a=0.1)])
    assert "1 fail: F2 exponent in n" in text and "0.10" in text
    assert "no claims recorded" in format_claims([])


def test_seed_summary_counts_false_alarms_and_the_weakest_power(tmp_path):
    for seed, ok in enumerate([True, True, False]):
        _executed(tmp_path / "_build" / "seeds" / str(seed) / "notebooks" / "05_demo.ipynb",
                  [_row("F1 exponent in n", accepted=ok, power_b=0.9 + 0.01 * seed)], seed=seed)
    groups = seed_claims(tmp_path)
    assert len(groups[("05_demo", "F1 exponent in n")]) == 3
    line = format_seed_claims(groups).splitlines()[1]
    assert line.split()[-4:] == ["3", "1", "1.00", "0.90"]


def test_seed_summary_counts_the_failed_copies_too(tmp_path):
    _executed(tmp_path / "_build" / "seeds" / "0" / "notebooks" / "05_demo.ipynb", [_row("F1 exponent in n")])
    _executed(tmp_path / "_build" / "failed" / "1" / "notebooks" / "05_demo.ipynb",
              [_row("F1 exponent in n", accepted=False)], seed=1)
    rows = seed_claims(tmp_path)[("05_demo", "F1 exponent in n")]
    assert sorted(r["seed"] for r in rows) == [0, 1] and sum(not r["accepted"] for r in rows) == 1
