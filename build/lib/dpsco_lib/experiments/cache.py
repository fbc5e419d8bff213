"""On-disk result cache keyed by (function, parameters, seed, library version).

A rerun of a notebook reuses every sweep cell whose key is unchanged; a new library version, a changed
function body or different parameters give a new key. The cache lives in ``$DPSCO_CACHE_DIR`` or
``.dpsco_cache/`` at the project root; ``DPSCO_NO_CACHE=1`` disables it.

Distributed sweeps: ``run_sweep`` sends each task the submitting process's absolute cache directory, so
dask workers read and write the same cache whatever their working directory (``dpsco reproduce`` sets
``DPSCO_CACHE_DIR`` to the checkout's ``.dpsco_cache``). Workers on other machines need that path on a
shared file system, or run with ``DPSCO_NO_CACHE=1`` on the submitting side.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import pickle
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dpsco_lib._version import __version__

__all__ = [
    "cache_dir",
    "cache_enabled",
    "function_fingerprint",
    "library_fingerprint",
    "load",
    "project_root",
    "store",
    "task_key",
]


def project_root() -> Path:
    """The directory holding ``_toc.yml`` above the working directory, else the working directory."""
    env = os.environ.get("DPSCO_ROOT")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for parent in (here, *here.parents):
        if (parent / "_toc.yml").is_file() and (parent / "dpsco_lib").is_dir():
            return parent
    return here


def cache_enabled() -> bool:
    return os.environ.get("DPSCO_NO_CACHE", "").strip() not in {"1", "true", "yes"}


def cache_dir() -> Path:
    env = os.environ.get("DPSCO_CACHE_DIR")
    return Path(env) if env else project_root() / ".dpsco_cache"


def function_fingerprint(fn: Callable[..., Any]) -> str:
    """Qualified name plus a hash of the source, so editing a notebook's function invalidates its cache."""
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = ""
    return name + ":" + hashlib.sha256(src.encode()).hexdigest()[:16]


def canonical(params: Mapping[str, Any]) -> str:
    """A stable text form of a parameter mapping (sorted keys; numpy scalars as Python numbers)."""

    def default(obj: Any) -> Any:
        if hasattr(obj, "item"):
            return obj.item()
        if hasattr(obj, "tolist"):
            return obj.tolist()
        return repr(obj)

    return json.dumps(dict(params), sort_keys=True, default=default, separators=(",", ":"))


@functools.cache
def library_fingerprint() -> str:
    """``__version__`` plus a hash of the library's source, so an edited library never reuses stale results."""
    pkg = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(pkg.rglob("*.py")):
        digest.update(str(path.relative_to(pkg)).encode())
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"


def task_key(fingerprint: str, params: Mapping[str, Any], base_seed: int, replicate: int) -> str:
    text = "|".join([fingerprint, canonical(params), str(base_seed), str(replicate), library_fingerprint()])
    return hashlib.sha256(text.encode()).hexdigest()


def load(key: str, directory: str | Path | None = None) -> dict[str, Any] | None:
    """The cached record of ``key`` (``None`` on a miss); ``directory`` overrides :func:`cache_dir`."""
    if directory is None and not cache_enabled():
        return None
    path = Path(directory or cache_dir()) / key[:2] / f"{key}.pkl"
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError):
        return None


def store(key: str, record: dict[str, Any], directory: str | Path | None = None) -> None:
    """Cache ``record`` under ``key``; ``directory`` overrides :func:`cache_dir`."""
    if directory is None and not cache_enabled():
        return
    folder = Path(directory or cache_dir()) / key[:2]
    folder.mkdir(parents=True, exist_ok=True)
    # Write then rename so a concurrent reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        pickle.dump(record, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, folder / f"{key}.pkl")
