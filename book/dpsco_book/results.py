"""Where the book's figure data goes: ``results/<profile>/<notebook>/`` CSV files, each with a provenance record
(profile, seed, library version and source hash, numpy and scipy versions, commit, date)."""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpsco_lib.experiments.cache import project_root

__all__ = ["provenance", "results_dir", "write_csv"]


def _current_parameters() -> dict[str, Any]:
    """``profile`` and ``seed`` of the running notebook (its parameters cell), when run in IPython."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    ns = getattr(shell, "user_ns", None) or {}
    return {k: ns[k] for k in ("profile", "seed") if isinstance(ns.get(k), str | int)}


def _profile_name() -> str:
    return str(_current_parameters().get("profile") or os.environ.get("DPSCO_PROFILE") or "paper")


def results_dir(notebook: str) -> Path:
    """``$DPSCO_RESULTS_DIR/<notebook>/`` if set, else ``results/<profile>/<notebook>/`` at the project root.

    Kept per profile (the running notebook's ``profile``, else ``$DPSCO_PROFILE``, else paper), so a smoke run
    never overwrites the paper profile's figure data; ``dpsco reproduce`` sets ``DPSCO_RESULTS_DIR`` to
    ``results/<profile>``. Created if needed.
    """
    if not notebook or "/" in notebook or notebook.startswith("."):
        raise ValueError(f"notebook must be a plain notebook name like '01_mechanisms', got {notebook!r}")
    env = os.environ.get("DPSCO_RESULTS_DIR")
    base = Path(env) if env else project_root() / "results" / _profile_name()
    out = base / notebook
    out.mkdir(parents=True, exist_ok=True)
    return out


@functools.cache
def _git_commit(root: Path) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def provenance() -> dict[str, Any]:
    """Where figure data comes from: profile, seed, library (version and source hash), numpy, scipy, commit, date."""
    import datetime
    import platform

    import scipy

    from dpsco_lib._version import __version__
    from dpsco_lib.experiments.cache import library_fingerprint

    params = _current_parameters()
    return {
        "profile": _profile_name(),
        "seed": params.get("seed"),
        "dpsco_lib": __version__,
        "library_fingerprint": library_fingerprint(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "commit": _git_commit(project_root()),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def write_csv(
    records: Iterable[Mapping[str, Any]], path: str | Path, *, provenance_info: Mapping[str, Any] | None = None
) -> Path:
    """Write records (dicts) as CSV with the union of their keys as columns, in first-seen order.

    Next to ``x.csv`` goes ``x.provenance.json``: profile, seed, library and numpy/scipy versions, commit and
    date (:func:`provenance`, or ``provenance_info``), so a figure can be rebuilt with the versions that made it.
    """
    rows = [dict(r) for r in records]
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()})
    info = dict(provenance_info) if provenance_info is not None else provenance()
    info.update(file=path.name, rows=len(rows), columns=cols)
    side = path.with_name(path.stem + ".provenance.json")
    side.write_text(json.dumps(info, indent=1, default=str) + "\n")
    return path
