"""Every declared claim of the book, read back from the executed notebooks: window, power, false alarms.

A notebook's verdict stores its claims (:meth:`dpsco_lib.experiments.Verdict.claim_rows`) in the metadata of the
verdict table's output. This module reads them from the executed copies of one run (``_build/executed`` or the
smoke copies in ``_build/smoke``) or from the copies of a seed sweep (``_build/seeds/<seed>``, written by
``dpsco seeds``) and prints the table of ``dpsco claims``: per claim its window, the measured statistic, its
estimated power against the learns-nothing and the wrong-regime controls, and its false alarms — estimated by
resampling in one run, counted over the seeds of a sweep.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CLAIM_SOURCES", "claims_of", "collect_claims", "format_claims", "format_seed_claims", "seed_claims"]

#: Where ``dpsco claims --from`` reads executed copies: the book's run, the smoke run of ``make test``.
CLAIM_SOURCES = {"executed": Path("_build") / "executed", "smoke": Path("_build") / "smoke"}
SEEDS = Path("_build") / "seeds"
#: Where a failed run's copy goes (``_build/failed/<seed>/`` for a seed run): its claims count too.
FAILED = Path("_build") / "failed"


def claims_of(executed: Path) -> list[dict[str, Any]]:
    """The claim rows stored in one executed notebook (empty if it has none or cannot be read)."""
    try:
        nb = json.loads(executed.read_text())
    except (OSError, ValueError):
        return []
    rows: list[dict[str, Any]] = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            meta = out.get("metadata", {}).get("dpsco", {})
            if isinstance(meta, dict) and isinstance(meta.get("claims"), list):
                rows = [dict(r) for r in meta["claims"] if isinstance(r, dict)]
    profile = nb.get("metadata", {}).get("dpsco", {}).get("profile")
    seed = nb.get("metadata", {}).get("dpsco", {}).get("seed")
    return [{**r, "profile": profile, "seed": seed} for r in rows]


def collect_claims(folder: Path) -> list[dict[str, Any]]:
    """The claims of every executed notebook under ``folder`` (``<folder>/notebooks/*.ipynb``), in order."""
    return [r for nb in sorted((folder / "notebooks").glob("*.ipynb")) for r in claims_of(nb)]


def _pct(v: Any) -> str:
    return "  n/a" if v is None else f"{float(v):5.2f}"


def format_claims(rows: Sequence[dict[str, Any]]) -> str:
    """One run's claims: ID, window, measured, power vs learns-nothing and wrong-regime, false alarm, result."""
    if not rows:
        return "no claims recorded (run the notebooks first: dpsco reproduce, or make test for the smoke copies)"
    lines = [f"{'claim':<34} {'profile':<7} {'power(a)':>8} {'power(b)':>8} {'false':>6}  result  window | measured"]
    for r in rows:
        word = "PASS" if r.get("passed") else "FAIL"
        lines.append(f"{str(r['claim'])[:34]:<34} {str(r.get('profile') or '?'):<7} "
                     f"{_pct(r.get('power_learns_nothing')):>8} {_pct(r.get('power_wrong_regime')):>8} "
                     f"{_pct(r.get('false_alarm')):>6}  {word:<6}  {r['window']} | {r['measured']}")
    bad = [r["claim"] for r in rows if not r.get("passed")]
    lines.append(f"{len(rows)} claims; " + (f"{len(bad)} fail: {', '.join(map(str, bad))}" if bad else "all pass")
                 + " (power(a): against learning nothing, power(b): against the neighbouring regime; "
                   "false: estimated false-alarm probability)")
    return "\n".join(lines)


def seed_claims(root: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The claims of every seed run under ``_build/seeds`` (passing copies) and ``_build/failed`` (failed ones: a
    false alarm fails the verdict, so its copy is kept there), grouped by (notebook, claim)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    seeds = sorted({p.name for base in (root / SEEDS, root / FAILED) for p in base.glob("*")
                    if p.is_dir() and p.name.isdigit()}, key=int)
    for seed in seeds:
        # a seed's latest run: its passing copy, or its failed copy (kept apart by dpsco seeds), whichever is newer
        latest: dict[str, Path] = {}
        for folder in (root / SEEDS / seed / "notebooks", root / FAILED / seed / "notebooks"):
            for nb in folder.glob("*.ipynb"):
                if nb.stem not in latest or nb.stat().st_mtime > latest[nb.stem].stat().st_mtime:
                    latest[nb.stem] = nb
        for stem in sorted(latest):
            for r in claims_of(latest[stem]):
                out.setdefault((str(r["notebook"]), str(r["claim"])), []).append(r)
    return out


def format_seed_claims(groups: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    """Per claim over the seeds: false alarms (seeds where the real records were rejected), the smallest power
    against each control, and the seeds where a control was not rejected with the required power."""
    if not groups:
        return "no seed runs with claims (run: dpsco seeds <notebooks> --count 20)"
    lines = [f"{'claim':<34} {'seeds':>5} {'false alarms':>12} {'min power(a)':>12} {'min power(b)':>12}"]
    for (_, claim), rows in groups.items():
        alarms = sum(1 for r in rows if not r.get("accepted"))
        pa = [float(r["power_learns_nothing"]) for r in rows if r.get("power_learns_nothing") is not None]
        pb = [float(r["power_wrong_regime"]) for r in rows if r.get("power_wrong_regime") is not None]
        lines.append(f"{claim[:34]:<34} {len(rows):>5} {alarms:>12} {_pct(min(pa) if pa else None):>12} "
                     f"{_pct(min(pb) if pb else None):>12}")
    return "\n".join(lines)
