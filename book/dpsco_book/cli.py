"""The ``dpsco`` command: list, reproduce and build the book's notebooks.

Examples
--------
::

    dpsco list
    dpsco reproduce notebooks/01_mechanisms.ipynb --profile smoke
    dpsco reproduce --profile paper --jobs 2          # every notebook in _toc.yml
    dpsco reproduce 5 --scheduler tcp://127.0.0.1:8786
    dpsco build                                       # jupyter-book build of the executed copies

Exit codes: 0 success, 1 a notebook or the build failed, 2 bad command-line input, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from dpsco_book.claims_report import CLAIM_SOURCES, collect_claims, format_claims, format_seed_claims, seed_claims
from dpsco_lib.experiments.cache import project_root
from dpsco_lib.experiments.profiles import PROFILES

EXECUTED = Path("_build") / "executed"
MATHJAX_VERSION = "3.2.2"
# The parts of MathJax's es5 build the book uses (tex input, CommonHTML output, menu, a11y), no speech.
MATHJAX_PARTS = ("tex-chtml.js", "tex-mml-chtml.js", "input", "output", "ui", "a11y", "adaptors")


class UsageError(Exception):
    """Bad command-line input: reported on one line, exit code 2."""


@dataclass(frozen=True)
class NotebookRun:
    source: Path
    output: Path
    seconds: float
    error: str | None


def toc_docnames(root: Path) -> list[str]:
    """The ``root`` and every ``file`` entry of ``_toc.yml``, in book order, without suffix (``notebooks/01_x``)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                val = node.get(key)
                if isinstance(val, str):
                    names.append(val)
            for val in node.values():
                if isinstance(val, list | dict):
                    walk(val)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return [str(Path(n).with_suffix("")) if n.endswith((".md", ".ipynb")) else n for n in names]


def toc_notebooks(root: Path) -> list[Path]:
    """Notebooks listed in ``_toc.yml`` (entries under ``notebooks/``), in book order."""
    return [root / f"{name}.ipynb" for name in toc_docnames(root) if name.startswith("notebooks/")]


def resolve_notebooks(root: Path, names: Sequence[str]) -> list[Path]:
    """Map command-line names (path, file name, stem or number like ``01`` or ``1``) to notebooks."""
    available = toc_notebooks(root)
    if not names:
        return available
    chosen: list[Path] = []
    for name in names:
        path = Path(name)
        cand = [
            nb
            for nb in available
            if nb.resolve() == (Path.cwd() / path).resolve()
            or nb.name == path.name
            or nb.stem == path.name
            or nb.stem.split("_", 1)[0] == name
            or (name.isdigit() and nb.stem.split("_", 1)[0].isdigit() and int(nb.stem.split("_", 1)[0]) == int(name))
        ]
        if len(cand) != 1:
            listing = ", ".join(nb.stem for nb in available) or "none"
            why = "is ambiguous" if cand else "is not a notebook of the book"
            raise UsageError(f"notebook {name!r} {why} (available: {listing})")
        chosen.append(cand[0])
    return chosen


def _stage_book_sources(root: Path, out: Path) -> None:
    """Copy the book's non-notebook sources next to the executed notebooks and turn execution off there."""
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    for name in ("_toc.yml", "references.bib"):
        if (root / name).exists():
            shutil.copy2(root / name, out / name)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    if (root / "book").is_dir():
        shutil.copytree(root / "book", out / "book", dirs_exist_ok=True)
        _stage_timings(root, out)


TIMINGS_PAGE = Path("book") / "_timings.md"


def timings_table(root: Path) -> str:
    """The run-time table of the reproducibility appendix, from ``_build/executed/timings-<profile>.json``.

    ``dpsco reproduce`` records the wall-clock seconds of every notebook it executes there (merged over
    runs); a notebook that was never executed at a profile shows a dash.
    """
    measured: dict[str, dict[str, float]] = {}
    for profile in PROFILES:
        path = root / EXECUTED / f"timings-{profile}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        measured[profile] = data if isinstance(data, dict) else {}
    notebooks = [str(nb.relative_to(root)) for nb in toc_notebooks(root)]
    if not any(measured[p].get(nb) is not None for p in PROFILES for nb in notebooks):
        return (
            "No run times have been recorded on the machine that built this copy of the book: run\n"
            "`dpsco reproduce --profile smoke` and `dpsco reproduce --profile paper`, then rebuild.\n"
        )

    def cell(value: object) -> str:
        return f"{float(value):.1f}" if isinstance(value, int | float) else "\u2014"

    profiles = sorted(PROFILES, key=lambda p: (p != "smoke", p))  # smoke, then paper
    lines = [
        "| notebook | " + " | ".join(f"{p} (s)" for p in profiles) + " |",
        "|---|" + "---:|" * len(profiles),
    ]
    for nb in notebooks:
        lines.append(f"| `{Path(nb).stem}` | " + " | ".join(cell(measured[p].get(nb)) for p in profiles) + " |")
    return "\n".join(lines) + "\n"


def _stage_timings(root: Path, out: Path) -> None:
    """Write the run-time table into the staged book (the repository's copy holds a placeholder)."""
    if (out / "book").is_dir() and out.resolve() != root.resolve():
        (out / TIMINGS_PAGE).write_text(timings_table(root))


FAILED = Path("_build") / "failed"
RUNNING = Path("_build") / "running"
PROVENANCE_TAG = "dpsco-provenance"
HIDDEN_TAGS = ("parameters", "injected-parameters")  # cells a reader need not see (the profile, the seed)
# Sphinx reference warnings that only mean "the page this points to is not in a partial build".
PARTIAL_BUILD_SUPPRESS = ["ref.ref", "ref.doc", "ref.numref", "ref.any", "ref.prf", "ref.citation", "toc.excluded"]


def require_book(root: Path) -> Path:
    """``root`` if it holds the book (``_toc.yml``), else a one-line usage error (not a traceback)."""
    if not (root / "_toc.yml").is_file():
        raise UsageError(
            f"no _toc.yml in {root} or its parents: run dpsco inside the dpsco-companion checkout "
            "(or set DPSCO_ROOT to it)"
        )
    return root


def notebook_title(nb: Path) -> str:
    """The first ``# `` heading of the notebook's first markdown cell ('' when there is none)."""
    try:
        cells = json.loads(nb.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
            return ""
    return ""


def _cell_tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def notebook_parameters(cells: Sequence[dict]) -> dict[str, object]:
    """Literal assignments of the ``parameters`` cell, overridden by papermill's ``injected-parameters`` cell."""
    import ast

    values: dict[str, object] = {}
    for tag in HIDDEN_TAGS:
        for cell in cells:
            if cell.get("cell_type") != "code" or tag not in _cell_tags(cell):
                continue
            try:
                tree = ast.parse("".join(cell.get("source", "")))
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    try:
                        values[node.targets[0].id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
    return values


@dataclass(frozen=True)
class PageStatus:
    """What an executed notebook shows: ``state`` is pass, fail, no-verdict or missing; ``detail`` says why."""

    state: str
    detail: str

    @property
    def publishable(self) -> bool:
        return self.state == "pass"


def _output_text(out: dict) -> str:
    if out.get("output_type") == "stream":
        text = out.get("text", "")
    else:
        text = out.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text)


def page_status(executed: Path) -> PageStatus:
    """Whether the executed copy may be published: it ran without error and its verdict passed."""
    if not executed.is_file():
        return PageStatus("missing", "not executed")
    try:
        nb = json.loads(executed.read_text())
    except (OSError, ValueError) as exc:
        return PageStatus("fail", f"unreadable executed copy ({exc})")
    verdict = None
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error":
                return PageStatus("fail", f"{out.get('ename', 'error')}: {out.get('evalue', '')}".strip())
            meta = out.get("metadata", {}).get("dpsco", {})
            if isinstance(meta, dict) and meta.get("verdict"):
                verdict = meta.get("summary") or f"VERDICT: {meta['verdict']}"
            for line in _output_text(out).splitlines():
                if re.match(r"VERDICT \S+: (PASS|FAIL)", line.strip()):
                    verdict = line.strip()
    if nb.get("metadata", {}).get("papermill", {}).get("exception"):
        return PageStatus("fail", "the run stopped at an exception")
    if verdict is None:
        return PageStatus("no-verdict", "no verdict in the executed copy (the verdict cell never ran)")
    if re.match(r"VERDICT \S+: PASS", verdict):
        return PageStatus("pass", verdict)
    return PageStatus("fail", verdict)


def notebook_fingerprint(nb: Path) -> str:
    """A hash of the notebook's cells (type and source), blind to outputs and metadata; '' if unreadable."""
    try:
        cells = json.loads(nb.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    digest = hashlib.sha256()
    for cell in cells:
        source = cell.get("source", "")
        digest.update(json.dumps([cell.get("cell_type"), "".join(source) if isinstance(source, list) else source])
                      .encode())
    return digest.hexdigest()[:16]


# The code a notebook's results depend on: the library and the book's experiment modules. The command itself
# (this module) only executes and stages notebooks, so editing it does not make a page stale.
CODE_PACKAGES = {"library": Path("dpsco_lib"), "book package": Path("book") / "dpsco_book"}
COMMAND_MODULE = Path("book") / "dpsco_book" / "cli.py"


def code_fingerprints(root: Path) -> dict[str, str]:
    """A hash of the ``*.py`` sources of each of :data:`CODE_PACKAGES` under ``root`` (path and content)."""
    out: dict[str, str] = {}
    for name, rel in CODE_PACKAGES.items():
        digest = hashlib.sha256()
        for path in sorted((root / rel).rglob("*.py")):
            if path.relative_to(root) == COMMAND_MODULE or "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
        out[name] = digest.hexdigest()[:16]
    return out


def failed_copy(root: Path, executed: Path) -> Path:
    """Where a failed run of the notebook whose executed copy is ``executed`` keeps its copy (``_build/failed``)."""
    out_dir = executed
    while out_dir.parent != out_dir and out_dir.name != "notebooks":
        out_dir = out_dir.parent
    return root / FAILED / out_dir.parent.name / executed.relative_to(out_dir.parent)


def _dpsco_meta(executed: Path) -> dict:
    try:
        meta = json.loads(executed.read_text()).get("metadata", {}).get("dpsco", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return meta if isinstance(meta, dict) else {}


def staleness(root: Path, nb: Path, executed: Path) -> str | None:
    """Why the executed copy no longer shows what ``nb`` computes now (``None`` when it still does).

    The copy records the hashes of the notebook's cells and of the library and book package sources it ran
    with (:func:`notebook_fingerprint`, :func:`code_fingerprints`); any difference makes the page stale.
    """
    meta = _dpsco_meta(executed)
    recorded = meta.get("fingerprints")
    if not isinstance(recorded, dict):
        return "its executed copy records no source hashes (it predates them): rerun it"
    if recorded.get("notebook") != notebook_fingerprint(nb):
        return "the notebook changed since its run"
    now = code_fingerprints(root)
    changed = [name for name in CODE_PACKAGES if recorded.get(name) != now[name]]
    if changed:
        return f"the {' and the '.join(changed)} changed since its run"
    return None


def notebook_status(root: Path, nb: Path, executed_dir: Path | None = None) -> PageStatus:
    """The state of a notebook's executed copy in ``executed_dir`` (default ``_build/executed``).

    ``failed`` when its latest run failed (a failed copy in ``_build/failed`` newer than the executed copy),
    ``stale`` when the notebook or the code changed since its passing run, else :func:`page_status`.
    """
    executed = (executed_dir or root / EXECUTED) / nb.relative_to(root)
    failed = failed_copy(root, executed)
    if failed.is_file() and (not executed.is_file() or failed.stat().st_mtime >= executed.stat().st_mtime):
        why = _dpsco_meta(failed).get("error") or page_status(failed).detail
        return PageStatus("failed", f"its latest run failed ({why}); the failed copy: {_rel(failed, root)}")
    status = page_status(executed)
    if status.publishable:
        why = staleness(root, nb, executed)
        if why:
            return PageStatus("stale", why)
    return status


def _git_commit(root: Path) -> str | None:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "dpsco_lib", "book/dpsco_book", "notebooks"],
                               cwd=root, capture_output=True, text=True, timeout=10)
        return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def run_provenance(root: Path, profile: str) -> dict[str, object]:
    """Where a run comes from: profile, library and numerical stack versions, commit, date (UTC)."""
    import datetime
    import platform

    import numpy
    import scipy

    from dpsco_lib._version import __version__

    return {
        "profile": profile,
        "dpsco_lib": __version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "commit": _git_commit(root),
        "fingerprints": code_fingerprints(root),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _provenance_markdown(nb_path: Path, meta: dict) -> str:
    profile = meta.get("profile", "?")
    number = nb_path.stem.split("_", 1)[0]
    seed = meta.get("seed")
    parts = [f"Executed at the **{profile}** profile"]
    if seed is not None:
        parts.append(f" with seed `{seed}`")
    date = str(meta.get("date", ""))[:10]
    if date:
        parts.append(f" on {date}")
    parts.append(f", `dpsco_lib` {meta.get('dpsco_lib', '?')}")
    if meta.get("commit"):
        parts.append(f" (commit `{meta['commit']}`)")
    if meta.get("numpy"):
        parts.append(f", numpy {meta['numpy']}, scipy {meta.get('scipy', '?')}")
    text = "".join(parts) + f". Rerun: `dpsco reproduce {number} --profile {profile}`."
    if profile == "smoke":
        text += " The smoke profile uses small sizes and coarser checks; the paper profile gives the book's figures."
    return f"```{{admonition}} How this page was produced\n:class: dropdown dpsco-provenance\n{text}\n```"


def prepare_page(executed: Path) -> None:
    """Make an executed copy ready to publish (idempotent): hide the parameter cells, show the provenance box."""
    nb = json.loads(executed.read_text())
    cells = nb.get("cells", [])
    meta = dict(nb.get("metadata", {}).get("dpsco", {}))
    if not meta:  # a copy executed before provenance was recorded: say what is known
        pm = nb.get("metadata", {}).get("papermill", {})
        meta = {"profile": pm.get("parameters", {}).get("profile", "?"), "date": pm.get("end_time") or ""}
    meta.setdefault("seed", notebook_parameters(cells).get("seed"))
    for cell in cells:
        tags = _cell_tags(cell)
        if any(t in tags for t in HIDDEN_TAGS) and "remove-cell" not in tags:
            cell.setdefault("metadata", {})["tags"] = [*tags, "remove-cell"]
    cells[:] = [c for c in cells if PROVENANCE_TAG not in _cell_tags(c)]
    box = {
        "cell_type": "markdown",
        "id": PROVENANCE_TAG,
        "metadata": {"tags": [PROVENANCE_TAG]},
        "source": _provenance_markdown(executed, meta),
    }
    cells.insert(1 if cells and cells[0].get("cell_type") == "markdown" else 0, box)
    executed.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def interactive() -> bool:
    """Whether a person watches the run: stdout and stderr are terminals (not a log file or a pipe)."""
    try:
        return sys.stdout.isatty() and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class _Progress:
    """One bar over the cells of every notebook of a run, with the sweeps in progress as its postfix.

    Kernels report sweep progress through small JSON files in ``$DPSCO_PROGRESS_DIR`` (see
    ``dpsco_lib.experiments.sweep``), so nothing of it lands in the executed notebooks.
    """

    def __init__(self, total: int, desc: str, enabled: bool, progress_dir: Path) -> None:
        import threading

        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="cell", disable=not enabled, dynamic_ncols=True,
                        file=sys.stderr)
        self.enabled = enabled
        self.dir = progress_dir
        self.running: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        if enabled:
            self.thread.start()

    def cell(self, stem: str, index: int | None, n_cells: int) -> None:
        with self.lock:
            if index:  # the first cell_start (index 0) moves nothing: the bar counts finished cells
                self.bar.update(1)
            self.running[stem] = f"{stem.split('_', 1)[0]}: cell {(index or 0) + 1}/{n_cells}"
            self._refresh()

    def finished(self, stem: str, cells_left: int, line: str) -> None:
        with self.lock:
            self.running.pop(stem, None)
            self.bar.update(max(0, cells_left))
            self.bar.write(line, file=sys.stderr)
            self._refresh()

    def _sweeps(self) -> list[str]:
        now = time.time()
        shown = []
        for path in sorted(self.dir.glob("*.json")) if self.dir.is_dir() else []:
            try:
                rec = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if now - float(rec.get("time", 0)) < 30 and rec.get("done", 0) < rec.get("total", 0):
                shown.append(f"sweep {rec.get('label', '?')} {rec['done']}/{rec['total']}")
        return shown

    def _refresh(self) -> None:
        if self.enabled:
            self.bar.set_postfix_str(" | ".join([*self.running.values(), *self._sweeps()]), refresh=True)

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            with self.lock:
                self._refresh()

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2)
        self.bar.close()


INTERRUPTED = "interrupted (Ctrl-C)"
_CANCEL = threading.Event()  # set by Ctrl-C during a run: queued notebooks never start, running ones stop
_KERNELS: set = set()  # the kernel managers of this process's running notebooks
_KERNELS_LOCK = threading.Lock()
_KERNEL_DIR: list[Path] = []


class Interrupted(Exception):
    """Ctrl-C stopped a run: the kernels are gone and no executed copy was saved."""


class _Cancelled(Exception):
    """Raised inside a notebook run (between cells) once Ctrl-C was pressed."""


def _kernel_dir() -> Path:
    """A private directory (mode 0700) for the kernels' connection files and IPC sockets, removed at exit."""
    if not _KERNEL_DIR:
        import atexit

        path = Path(tempfile.mkdtemp(prefix="dpsco-kernels-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _KERNEL_DIR.append(path)
    return _KERNEL_DIR[0]


def _kill_kernel(km: object) -> None:
    """Kill a kernel and the processes it started (its process group: jupyter_client gives it a session)."""
    provisioner = getattr(km, "provisioner", None)
    process = getattr(provisioner, "process", None)
    if process is None or process.poll() is not None:
        return
    pgid = getattr(provisioner, "pgid", None)
    try:
        if pgid and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


def kill_kernels() -> None:
    """Kill every kernel this process started that still runs."""
    with _KERNELS_LOCK:
        managers = list(_KERNELS)
    for km in managers:
        _kill_kernel(km)


def kernel_manager_class() -> type:
    """The kernel manager of the notebook runs: IPC sockets in a private directory instead of TCP ports.

    With TCP, the client picks free ports and the kernel binds them later; two kernels starting at once can
    pick the same port (``ZMQError: Address already in use``, "Kernel died before replying to kernel_info").
    Unix sockets named after each kernel's unique connection file cannot collide. Each manager registers its
    kernel so that Ctrl-C can stop it at once (:func:`kill_kernels`).
    """
    import uuid

    from jupyter_client.manager import AsyncKernelManager

    class DpscoKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)
            if os.name != "nt":  # no Unix sockets on Windows: TCP there
                self.transport = "ipc"
            self.connection_file = str(_kernel_dir() / f"kernel-{uuid.uuid4().hex[:16]}.json")

        async def start_kernel(self, **kwargs: object) -> None:
            await super().start_kernel(**kwargs)
            with _KERNELS_LOCK:
                _KERNELS.add(self)
            if _CANCEL.is_set():
                _kill_kernel(self)

        async def cleanup_resources(self, restart: bool = False) -> None:
            with _KERNELS_LOCK:
                _KERNELS.discard(self)
            await super().cleanup_resources(restart=restart)

    return DpscoKernelManager


class _StopOnSigint:
    """During a run, Ctrl-C (SIGINT) kills the kernels and stops the run; a second one exits at once (130)."""

    def __enter__(self) -> _StopOnSigint:
        _CANCEL.clear()
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)
        return self

    first: list[float] = []

    @classmethod
    def _handler(cls, signum: int, frame: object) -> None:
        if _CANCEL.is_set():
            # `timeout -s INT` delivers the signal twice at once (to the command and to its process group):
            # only a second Ctrl-C a moment later means "do not wait for the kernels' clean-up".
            if time.monotonic() - cls.first[0] < 2.0:
                return
            kill_kernels()
            for path in _KERNEL_DIR:
                shutil.rmtree(path, ignore_errors=True)
            os.write(2, b"dpsco: interrupted twice: stopped without cleaning up\n")
            os._exit(130)
        cls.first[:] = [time.monotonic()]
        _CANCEL.set()
        import logging

        # nbclient logs "Kernel died while waiting for execute reply" through papermill's logger: expected now
        logging.getLogger("papermill").setLevel(logging.CRITICAL)
        kill_kernels()

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


_ENGINE = "dpsco"


def _register_engine() -> None:
    """A papermill engine that reports each cell start (for the progress bar) and stops there after Ctrl-C."""
    from papermill.engines import NBClientEngine, papermill_engines

    class DpscoEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, on_cell=None, **kwargs):  # noqa: ANN001
            start = nb_man.cell_start

            def cell_start(cell, cell_index=None, **kw):  # noqa: ANN001
                if _CANCEL.is_set():
                    raise _Cancelled
                if on_cell is not None:
                    on_cell(cell_index, len(nb_man.nb.cells))
                return start(cell, cell_index, **kw)

            nb_man.cell_start = cell_start
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register(_ENGINE, DpscoEngine)


def _execute(
    nb: Path,
    root: Path,
    out_dir: Path,
    profile: str,
    n_jobs: int,
    progress: bool,
    *,
    timeout: float | None = None,
    on_cell=None,  # noqa: ANN001 - callable(index, n_cells)
    provenance: dict | None = None,
    seed: int | None = None,
) -> NotebookRun:
    """Execute one notebook; only a successful run replaces the executed copy (a failed one goes to _build/failed).

    ``timeout`` bounds the whole notebook (seconds, kernel start excluded). A run stopped by Ctrl-C saves
    nothing. The copy records the hashes of the notebook and of the code it ran with (see :func:`staleness`).
    """
    rel = nb.relative_to(root)
    output = out_dir / rel
    if _CANCEL.is_set():
        return NotebookRun(nb, output, 0.0, INTERRUPTED)
    scratch = root / RUNNING / out_dir.name / rel
    scratch.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(provenance or run_provenance(root, profile))
    meta["fingerprints"] = {"notebook": notebook_fingerprint(nb), **dict(meta.get("fingerprints") or {})}
    start = time.perf_counter()
    error = _papermill_run(nb, scratch, profile, n_jobs, timeout, on_cell, seed, progress)
    seconds = time.perf_counter() - start
    if _CANCEL.is_set():  # whatever the kernel got to, the run did not finish on its own: keep nothing
        scratch.unlink(missing_ok=True)
        return NotebookRun(nb, output, seconds, INTERRUPTED)
    if scratch.is_file():
        try:
            data = json.loads(scratch.read_text())
            meta.update(profile=profile, seed=notebook_parameters(data.get("cells", [])).get("seed"),
                        seconds=round(seconds, 2), status="ok" if error is None else "failed")
            if error is not None:
                meta["error"] = error
            data.setdefault("metadata", {})["dpsco"] = meta
            scratch.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        except (OSError, ValueError):
            pass
    failed = root / FAILED / out_dir.name / rel
    if error is None:
        output.parent.mkdir(parents=True, exist_ok=True)
        os.replace(scratch, output)
        failed.unlink(missing_ok=True)  # the latest run passed: an older failure no longer holds the page back
    else:
        # Never overwrite a good executed copy with a failed run: keep the failed one aside, with its traceback.
        # It also records the failure for `dpsco build` and `dpsco list` (see notebook_status).
        failed.parent.mkdir(parents=True, exist_ok=True)
        if scratch.is_file():
            os.replace(scratch, failed)
        else:
            failed.write_text(json.dumps({"cells": [], "metadata": {"dpsco": {**meta, "status": "failed",
                                                                               "error": error}}}) + "\n")
        output = failed
    return NotebookRun(nb, output, seconds, error)


def source_cell_number(executed_cells: Sequence[dict], index: int) -> int:
    """The 1-based position, in the source notebook, of the executed notebook's cell ``index``.

    Papermill inserts its ``injected-parameters`` cell after the ``parameters`` cell; cells after it move one
    place down in the executed copy but not in the notebook the reader edits.
    """
    shift = sum(1 for cell in executed_cells[:index] if "injected-parameters" in _cell_tags(cell))
    return index - shift + 1


def _papermill_run(nb: Path, scratch: Path, profile: str, n_jobs: int, timeout: float | None,
                   on_cell, seed: int | None, progress: bool = False) -> str | None:  # noqa: ANN001
    """Run papermill from ``nb`` into ``scratch``; the error (one line) or ``None``."""
    import papermill as pm

    _register_engine()
    deadline = None if timeout is None else time.monotonic() + timeout

    def time_left(cell: object) -> int | None:
        # nbclient asks before every cell: the notebook's remaining budget becomes the cell's timeout.
        return None if deadline is None else max(1, int(deadline - time.monotonic()))

    try:
        pm.execute_notebook(
            str(nb),
            str(scratch),
            parameters={"profile": profile, "n_jobs": n_jobs, **({} if seed is None else {"seed": seed})},
            engine_name=_ENGINE,
            kernel_name="python3",
            kernel_manager_class=kernel_manager_class(),
            cwd=str(nb.parent),
            progress_bar=progress,
            log_output=False,
            on_cell=on_cell,
            timeout_func=time_left if deadline is not None else None,
            # The Makefile and the test suite export MPLBACKEND=Agg, which the kernel inherits and which would
            # silently drop every inline figure from the executed notebook (and so from the book). The log level
            # silences ipykernel's start-up warnings.
            extra_arguments=["--matplotlib=inline", "--IPKernelApp.log_level=ERROR"],
        )
    except pm.PapermillExecutionError as exc:
        try:
            # papermill wrote the copy with its error-marker cells added: the index is of the cells without them
            cells = [c for c in json.loads(scratch.read_text())["cells"]
                     if "papermill-error-cell-tag" not in _cell_tags(c)]
            where = f"cell {source_cell_number(cells, exc.cell_index)}"
        except (OSError, ValueError, KeyError):
            where = f"cell [{exc.exec_count}]"
        return f"{where}: {exc.ename}: {exc.evalue}".strip()
    except Exception as exc:  # kernel died, bad notebook JSON, timeout, Ctrl-C ...
        if _CANCEL.is_set():
            return INTERRUPTED
        if deadline is not None and time.monotonic() >= deadline - 1:
            return f"timed out after {timeout:g} s (--timeout)"
        return f"{type(exc).__name__}: {exc}"
    return None


def check_scheduler(address: str, timeout: float = 10.0) -> int:
    """Connect to a dask scheduler before any kernel starts; the number of its workers (at least one)."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'dpsco-lib[dist]'") from None
    try:
        with Client(address, timeout=timeout) as client:
            workers = len(client.nthreads())
    except Exception as exc:  # OSError / TimeoutError on a wrong address, ValueError on a malformed one
        raise UsageError(
            f"cannot reach a dask scheduler at {address!r} within {timeout:g} s "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
            "start one with 'dask scheduler' or drop --scheduler"
        ) from None
    if workers == 0:
        raise UsageError(f"the dask scheduler at {address} has no worker: start some with 'dask worker {address}'")
    return workers


def _count_cells(nb: Path) -> int:
    try:
        return len(json.loads(nb.read_text())["cells"]) + 1  # + papermill's injected-parameters cell
    except (OSError, ValueError, KeyError):
        return 1


def _prepare_environment(root: Path, profile: str, scheduler: str | None) -> Path:
    """The environment the notebook kernels inherit (root, profile, results, cache, progress, BLAS threads)."""
    from dpsco_lib.experiments.cache import cache_dir

    os.environ["DPSCO_ROOT"] = str(root)
    os.environ["DPSCO_PROFILE"] = profile
    # Figure data per profile, so a smoke run never overwrites the paper profile's CSVs.
    os.environ["DPSCO_RESULTS_DIR"] = str(root / "results" / profile)
    # An absolute cache location: the kernels pass it on to dask workers, whatever their working directory.
    os.environ["DPSCO_CACHE_DIR"] = str(cache_dir().resolve())
    progress_dir = root / RUNNING / f"progress-{os.getpid()}"
    shutil.rmtree(progress_dir, ignore_errors=True)
    progress_dir.mkdir(parents=True, exist_ok=True)
    os.environ["DPSCO_PROGRESS_DIR"] = str(progress_dir)
    # Sweeps parallelize over processes; multi-threaded BLAS inside each of them oversubscribes the cores.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if scheduler:
        os.environ["DPSCO_SCHEDULER"] = scheduler
    return progress_dir


def reproduce(
    names: Sequence[str],
    *,
    profile: str,
    jobs: int,
    scheduler: str | None,
    out_dir: Path | None = None,
    root: Path | None = None,
    timeout: float | None = None,
    progress: bool = True,
) -> list[NotebookRun]:
    """Execute notebooks with papermill (``jobs`` notebooks at a time) and stage the book sources."""
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (choose from {', '.join(sorted(PROFILES))})")
    if jobs < 1:
        raise UsageError(f"--jobs must be a positive integer, got {jobs}")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout}")
    root = require_book(root or project_root())
    notebooks = resolve_notebooks(root, names)
    if not notebooks:
        raise UsageError("_toc.yml lists no notebooks")
    if scheduler:
        workers = check_scheduler(scheduler)
        print(f"dpsco: dask scheduler {scheduler}: {workers} worker(s)", file=sys.stderr)
    out_dir = out_dir or root / EXECUTED
    _stage_book_sources(root, out_dir)
    progress_dir = _prepare_environment(root, profile, scheduler)
    per_notebook_jobs = max(1, (os.cpu_count() or 1) // min(jobs, len(notebooks)))
    provenance = run_provenance(root, profile)
    runs: list[NotebookRun] = []
    cells = {nb: _count_cells(nb) for nb in notebooks}
    bar = _Progress(sum(cells.values()), f"{len(notebooks)} notebook(s), {profile}", progress and interactive(),
                    progress_dir)
    seen: dict[Path, int] = {}

    def run_one(nb: Path) -> NotebookRun:
        def on_cell(index: int | None, n_cells: int) -> None:
            seen[nb] = (index or 0) + 1
            bar.cell(nb.stem, index, n_cells)

        return _execute(nb, root, out_dir, profile, per_notebook_jobs, False, timeout=timeout, on_cell=on_cell,
                        provenance=provenance)

    try:
        with _StopOnSigint(), ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(run_one, nb) for nb in notebooks]
            for fut in as_completed(futures):
                run = fut.result()
                runs.append(run)
                if run.error == INTERRUPTED:
                    continue
                status = "ok" if run.error is None else "FAILED"
                left = cells[run.source] - max(0, seen.get(run.source, 0) - 1)
                bar.finished(run.source.stem, left, f"{run.source.relative_to(root)}: {status} in {run.seconds:.1f} s")
    finally:
        bar.close()
        shutil.rmtree(progress_dir, ignore_errors=True)
    order = {nb: i for i, nb in enumerate(notebooks)}
    runs.sort(key=lambda r: order[r.source])
    if _CANCEL.is_set():
        stopped = [r.source.stem for r in runs if r.error == INTERRUPTED]
        raise Interrupted(f"stopped {', '.join(stopped) or 'the run'}; no executed copy was saved for "
                          f"{'them' if len(stopped) > 1 else 'it'}")
    # Merge into the timings of earlier runs, so that rerunning one notebook keeps the others' numbers.
    timings_path = out_dir / f"timings-{profile}.json"
    try:
        timings = json.loads(timings_path.read_text())
    except (OSError, ValueError):
        timings = {}
    if not isinstance(timings, dict):
        timings = {}
    timings.update({str(r.source.relative_to(root)): round(r.seconds, 2) for r in runs if r.error is None})
    timings_path.parent.mkdir(parents=True, exist_ok=True)
    timings_path.write_text(json.dumps(dict(sorted(timings.items())), indent=2) + "\n")
    _stage_timings(root, out_dir)
    return runs


SEEDS = Path("_build") / "seeds"


def seed_sweep(names: Sequence[str], *, count: int, start: int = 0, profile: str = "smoke", jobs: int = 2,
               root: Path | None = None) -> dict[str, dict[int, str]]:
    """Execute each notebook once per seed ``start, ..., start + count - 1``; returns notebook -> seed -> verdict.

    A theorem check must not depend on its seed: every randomized check states its false-alarm probability,
    and its verdict must pass for consecutive seeds on correct code. The executed copies go to
    ``_build/seeds/<seed>/`` (never to the book); the summary to ``_build/seeds/summary-<profile>.json``.
    """
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (choose from {', '.join(sorted(PROFILES))})")
    if count < 1 or jobs < 1 or start < 0:
        raise UsageError(f"--count and --jobs must be positive and --start >= 0, got {count}, {jobs}, {start}")
    root = require_book(root or project_root())
    notebooks = resolve_notebooks(root, names)
    progress_dir = _prepare_environment(root, profile, None)
    tasks = [(nb, seed) for nb in notebooks for seed in range(start, start + count)]
    out: dict[str, dict[int, str]] = {nb.stem: {} for nb in notebooks}

    def run_one(task: tuple[Path, int]) -> tuple[Path, int, str]:
        nb, seed = task
        out_dir = root / SEEDS / str(seed)
        run = _execute(nb, root, out_dir, profile, 1, False, seed=seed)
        verdict = page_status(run.output).detail if run.error is None else f"FAILED: {run.error}"
        return nb, seed, verdict

    try:
        for seed in range(start, start + count):
            _stage_book_sources(root, root / SEEDS / str(seed))
        with _StopOnSigint(), ThreadPoolExecutor(max_workers=jobs) as pool:
            for fut in as_completed([pool.submit(run_one, t) for t in tasks]):
                nb, seed, verdict = fut.result()
                if _CANCEL.is_set():
                    continue
                out[nb.stem][seed] = verdict
                print(f"{nb.stem} seed {seed}: {verdict}", flush=True)
    finally:
        shutil.rmtree(progress_dir, ignore_errors=True)
    if _CANCEL.is_set():
        raise Interrupted("stopped the seed runs; no summary was written")
    summary = root / SEEDS / f"summary-{profile}.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps({k: dict(sorted(v.items())) for k, v in out.items()}, indent=1) + "\n")
    return out


def run_summary(root: Path, runs: Sequence[NotebookRun], profile: str) -> str:
    """What a run produced: each notebook's verdict, where its executed copy and its figure data went."""
    lines = [f"summary (profile {profile}):"]
    width = max(len(r.source.stem) for r in runs)
    for r in runs:
        if r.error is None:
            verdict = page_status(r.output).detail
            lines.append(f"  {r.source.stem.ljust(width)}  ok      {r.seconds:7.1f} s  {verdict}")
        else:
            lines.append(f"  {r.source.stem.ljust(width)}  FAILED  {r.seconds:7.1f} s  {r.error}")
    results = root / "results" / profile
    data = []
    for r in runs:
        folder = results / r.source.stem
        n_csv = len(list(folder.glob("*.csv"))) if folder.is_dir() else 0
        if n_csv:
            data.append(f"  {_rel(folder, root)}/ ({n_csv} CSV file{'s' if n_csv > 1 else ''}, with provenance)")
    if data:
        lines.append("figure data:")
        lines.extend(data)
    ok = [r for r in runs if r.error is None]
    if ok:
        lines.append(f"executed copies: {_rel(ok[0].output.parent, root)}/  (build the HTML: dpsco build)")
    return "\n".join(lines)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def ensure_mathjax(root: Path) -> Path | None:
    """A local MathJax for the book, fetched once from the npm registry (``npm pack``) into the cache.

    The HTML then renders math without any CDN, so the book works offline and in the browser test.
    Returns the es5 directory, or ``None`` (the book falls back to the CDN) when npm is unavailable.
    """
    import fcntl

    base = root / ".dpsco_cache" / f"mathjax-{MATHJAX_VERSION}"
    base.mkdir(parents=True, exist_ok=True)
    # Two builds at once (the test workers: the smoke book and a partial build) fetch and unpack it once.
    with open(base.with_name(base.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch_mathjax(base)


def _fetch_mathjax(base: Path) -> Path | None:
    """The es5 directory of MathJax under ``base``, unpacked from ``npm pack`` unless it is there already."""
    es5 = base / "package" / "es5"
    if (es5 / "tex-chtml.js").is_file():
        return es5
    npm = shutil.which("npm")
    if npm is None:
        print("dpsco: npm not found; the book loads MathJax from its CDN", file=sys.stderr)
        return None
    proc = subprocess.run(
        [npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent", "--pack-destination", str(base)],
        capture_output=True,
        text=True,
    )
    tarball = base / f"mathjax-{MATHJAX_VERSION}.tgz"
    if proc.returncode != 0 or not tarball.is_file():
        print(f"dpsco: could not fetch MathJax with npm ({proc.stderr.strip()[:200]}); using its CDN", file=sys.stderr)
        return None
    import tarfile

    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("package/es5/")]
        tar.extractall(base, members=members, filter="data")
    return es5 if (es5 / "tex-chtml.js").is_file() else None


MATHJAX_STATIC = "_mathjax"  # a static path of its own: see _stage_mathjax


def _stage_mathjax(root: Path, src: Path) -> None:
    """Copy MathJax into the staged book and point Sphinx at it (``_static/mathjax/tex-chtml.js`` in the HTML).

    Not under the source's ``_static``: Jupyter Book adds every ``.js`` file it finds in the static paths as a
    ``<script>`` to every page when the source has a ``_static`` folder, which loaded each MathJax component a
    second time and broke the page's JavaScript.
    """
    import yaml

    legacy = src / "_static" / "mathjax"  # a stale copy under the source's _static (see above) is removed
    if legacy.is_dir():
        shutil.rmtree(legacy)
        if not any((src / "_static").iterdir()):
            (src / "_static").rmdir()
    es5 = ensure_mathjax(root)
    if es5 is None:
        return
    dest = src / MATHJAX_STATIC / "mathjax"
    for part in MATHJAX_PARTS:
        item = es5 / part
        if item.is_dir():
            shutil.copytree(item, dest / part, dirs_exist_ok=True)
        elif item.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, dest / part)
    config_path = src / "_config.yml"
    config = yaml.safe_load(config_path.read_text())
    sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx_config["mathjax_path"] = "mathjax/tex-chtml.js"  # relative to the HTML's _static
    static = list(sphinx_config.get("html_static_path", []))
    if MATHJAX_STATIC not in static:
        static.append(MATHJAX_STATIC)
    sphinx_config["html_static_path"] = static
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


@dataclass(frozen=True)
class BookPlan:
    """The notebook pages of a build: published (passing verdict), missing (never executed), refused (failed)."""

    published: list[Path]
    missing: list[Path]
    refused: list[tuple[Path, PageStatus]]

    @property
    def partial(self) -> bool:
        return bool(self.missing or self.refused)


def _prune_toc(node: object, keep: set[str]) -> object:
    """The table of contents without the notebook entries outside ``keep`` (and without emptied parts)."""
    if isinstance(node, list):
        items = [_prune_toc(item, keep) for item in node]
        return [item for item in items if item is not None]
    if isinstance(node, dict):
        name = node.get("file")
        if isinstance(name, str) and name.startswith("notebooks/") and str(Path(name).with_suffix("")) not in keep:
            return None
        pruned = {key: _prune_toc(val, keep) for key, val in node.items()}
        for key in ("chapters", "sections"):
            if key in node and not pruned.get(key):
                if "file" not in node:  # a part whose every chapter is gone
                    return None
                pruned.pop(key)
        return pruned
    return node


def prepare_book(root: Path, src: Path) -> BookPlan:
    """Stage the book in ``src`` from its executed notebooks, publishing only pages whose verdict passed.

    Notebooks that were never executed, whose latest run failed, whose copy shows no passing verdict, or whose
    copy is stale (:func:`notebook_status`) are left out of a pruned ``_toc.yml`` (and named in the plan); every
    published page gets its provenance box and hidden parameters.
    """
    import yaml

    _stage_book_sources(root, src)
    published, missing, refused = [], [], []
    for nb in toc_notebooks(root):
        executed = src / nb.relative_to(root)
        status = notebook_status(root, nb, src)
        if status.publishable:
            prepare_page(executed)
            published.append(nb)
        elif status.state == "missing":
            missing.append(nb)
        else:
            refused.append((nb, status))
    plan = BookPlan(published, missing, refused)
    if plan.partial:
        keep = {str(nb.relative_to(root).with_suffix("")) for nb in published}
        toc = _prune_toc(yaml.safe_load((root / "_toc.yml").read_text()), keep)
        (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        config_path = src / "_config.yml"
        config = yaml.safe_load(config_path.read_text())
        sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
        # Prose chapters point at theorems of the notebooks left out: those links stay plain text.
        sphinx_config["suppress_warnings"] = [*sphinx_config.get("suppress_warnings", []), *PARTIAL_BUILD_SUPPRESS]
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        unlink_missing_theorems(src, [*(src / "book").rglob("*.md"), *(src / nb.relative_to(root) for nb in published)])
    return plan


_PRF_REF = re.compile(r"\{prf:ref\}`(?:([^`<]*?)\s*<([^`>]+)>|([^`]+))`")
_LABEL = re.compile(r"^\s*:label:\s*(\S+)", re.MULTILINE)


def _markdown_texts(page: Path) -> list[str]:
    """The MyST text of a page: a Markdown file whole; for a notebook its markdown cells and Markdown outputs."""
    if page.suffix != ".ipynb":
        return [page.read_text()]
    texts = []
    for cell in json.loads(page.read_text()).get("cells", []):
        source = cell.get("source", "")
        if cell.get("cell_type") == "markdown":
            texts.append("".join(source) if isinstance(source, list) else source)
        for out in cell.get("outputs", []):
            md = out.get("data", {}).get("text/markdown")
            if md:
                texts.append("".join(md) if isinstance(md, list) else md)
    return texts


def unlink_missing_theorems(src: Path, pages: Sequence[Path]) -> dict[str, set[str]]:
    """In a partial build, a link to a theorem of a page left out becomes plain text; returns page -> labels.

    The theorem labels (``:label:`` of a ``prf`` directive) are collected from ``pages`` (the staged prose
    chapters and published notebooks); every ``{prf:ref}`` in them to any other label is rewritten as its
    text (``F3`` for ``thm-F3``), in prose chapters and in the markdown cells and Markdown outputs of
    notebooks alike. sphinx-proof reports such a reference with an untyped warning (which ``-W`` turns into
    an error and ``suppress_warnings`` cannot silence), so the staged copies are rewritten instead.
    """
    defined: set[str] = set()
    for page in pages:
        for text in _markdown_texts(page):
            defined.update(_LABEL.findall(text))
    unlinked: dict[str, set[str]] = {}

    def plain(match: re.Match[str], page: Path) -> str:
        label = (match.group(2) or match.group(3)).strip()
        if label in defined:
            return match.group(0)
        unlinked.setdefault(str(page.relative_to(src)), set()).add(label)
        return match.group(1) or label.split("-", 1)[-1]

    for page in pages:
        if page.suffix != ".ipynb":
            text = page.read_text()
            new = _PRF_REF.sub(lambda m, page=page: plain(m, page), text)
            if new != text:
                page.write_text(new)
            continue
        nb = json.loads(page.read_text())
        for cell in nb.get("cells", []):
            fields = [(cell, "source")] if cell.get("cell_type") == "markdown" else []
            fields += [(out["data"], "text/markdown") for out in cell.get("outputs", [])
                       if out.get("data", {}).get("text/markdown")]
            for holder, key in fields:
                text = "".join(holder[key]) if isinstance(holder[key], list) else holder[key]
                new = _PRF_REF.sub(lambda m, page=page: plain(m, page), text)
                if new != text:
                    holder[key] = new
        page.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return unlinked


def _executed_profile(src: Path, notebooks: Sequence[Path], root: Path) -> str:
    """The profile most executed copies ran at (to suggest the command that completes the book)."""
    from collections import Counter

    seen: Counter[str] = Counter()
    for nb in notebooks:
        try:
            seen[json.loads((src / nb.relative_to(root)).read_text())["metadata"]["dpsco"]["profile"]] += 1
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return seen.most_common(1)[0][0] if seen else "paper"


def build_book(
    root: Path | None = None, out_dir: Path | None = None, *, require_all: bool = False, html_dir: Path | None = None
) -> int:
    """``jupyter-book build`` of the executed copies, warnings as errors; HTML in ``_build/html``.

    Builds the pages whose notebook ran with a passing verdict (a pruned table of contents) and says which
    are missing and how to produce them. A notebook whose latest run failed, that shows no passing verdict, or
    whose executed copy is stale (the notebook or the code changed since its run) is never published: its
    page is left out (any older HTML page of it is deleted) and the command exits 1.
    With ``require_all`` nothing is built unless every notebook of the book can be published.
    """
    root = require_book(root or project_root())
    src = out_dir or root / EXECUTED
    if not src.is_dir():
        raise UsageError(f"{_rel(src, root)} has no executed notebooks: run 'dpsco reproduce' first")
    exe = shutil.which("jupyter-book", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if exe is None:
        raise UsageError("jupyter-book is not installed: pip install 'dpsco-lib[book]'")
    plan = prepare_book(root, src)
    profile = _executed_profile(src, plan.published, root)
    for nb, status in plan.refused:
        print(f"dpsco: refusing to publish {nb.stem}: {status.detail}", file=sys.stderr)
    if plan.refused:
        numbers = " ".join(nb.stem.split("_", 1)[0] for nb, _ in plan.refused)
        print(f"       fix what failed, then rerun: dpsco reproduce {numbers} --profile {profile}", file=sys.stderr)
    if plan.missing:
        names = ", ".join(nb.stem for nb in plan.missing)
        numbers = " ".join(nb.stem.split("_", 1)[0] for nb in plan.missing)
        print(f"dpsco: {len(plan.missing)} notebook page(s) not executed yet: {names}", file=sys.stderr)
        print(f"       produce them with: dpsco reproduce {numbers} --profile {profile}", file=sys.stderr)
    if require_all and plan.partial:
        print("dpsco: error: --all: the whole book needs every notebook executed with a passing verdict; "
              "nothing was built", file=sys.stderr)
        return 1
    if not plan.published:
        print("dpsco: error: no notebook can be published: run 'dpsco reproduce' first", file=sys.stderr)
        return 1
    _stage_mathjax(root, src)
    html_root = html_dir or root / "_build" / "html"
    # A page left out of this build must not survive from an earlier one.
    for nb in [*plan.missing, *(nb for nb, _ in plan.refused)]:
        stale = html_root / nb.relative_to(root).with_suffix(".html")
        if stale.is_file():
            stale.unlink()
    what = "the whole book" if not plan.partial else (
        f"{len(plan.published)} of {len(plan.published) + len(plan.missing) + len(plan.refused)} notebook pages")
    print(f"dpsco: building {what} ...", file=sys.stderr)
    cmd = [exe, "build", str(src), "--path-output", str(html_root.parent.parent), "-W", "--keep-going", "--quiet"]
    code = subprocess.call(cmd, cwd=root)
    index = html_root / "index.html"
    if code != 0:
        print(f"dpsco: error: jupyter-book build failed (exit {code}); see the messages above", file=sys.stderr)
        return 1
    print(f"book built ({what}): {index}")
    return 1 if plan.refused else 0


HELP_DESCRIPTION = "List, execute (reproduce) and build the notebooks of the dpsco companion book."
HELP_EPILOG = """examples:
  dpsco list                                  the notebooks and the state of their executed copies
  dpsco reproduce 1 --profile smoke           execute notebook 01 quickly (a smaller, still checked run)
  dpsco reproduce --profile paper --jobs 2    every notebook of _toc.yml, two at a time
  dpsco reproduce 5 --scheduler tcp://127.0.0.1:8786
  dpsco build                                 the HTML book of the pages that ran and passed
  dpsco claims                                every claim: window, power against its controls, false alarms
  dpsco seeds 5 --count 20 && dpsco claims --seeds   false alarms of notebook 05's claims over 20 seeds

exit codes: 0 success, 1 a notebook or the build failed (or a page was refused), 2 bad command-line input,
130 interrupted (Ctrl-C)"""


def _parser() -> argparse.ArgumentParser:
    from dpsco_lib._version import __version__

    parser = argparse.ArgumentParser(prog="dpsco", description=HELP_DESCRIPTION, epilog=HELP_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dpsco {__version__} (dpsco_lib {__version__})")
    sub = parser.add_subparsers(dest="command")
    lst = sub.add_parser("list", help="the book's notebooks, their titles and the state of their executed copies")
    lst.add_argument("--paths", action="store_true", help="print only the notebook paths")
    rep = sub.add_parser("reproduce", help="execute notebooks with papermill into _build/executed",
                         description="Execute notebooks with papermill into _build/executed/notebooks. A failed "
                         "run never replaces a good executed copy: it goes to _build/failed, and dpsco build "
                         "refuses the notebook until a rerun passes. Ctrl-C stops the kernels at once (exit 130).")
    rep.add_argument("notebooks", nargs="*", help="paths, names or numbers (1 or 01; default: all in _toc.yml)")
    rep.add_argument("--profile", default="paper", help="smoke, paper or full (default: paper)")
    rep.add_argument("--jobs", default="2", help="notebooks executed at once (default: 2)")
    rep.add_argument("--timeout", default=None, help="seconds allowed to each notebook (default: no limit)")
    rep.add_argument("--scheduler", default=None, help="dask.distributed scheduler address for the sweeps")
    rep.add_argument("--no-progress", action="store_true",
                     help="no progress bar (it is shown only when the output is a terminal anyway)")
    rep.add_argument("--build", action="store_true", help="build the HTML book afterwards")
    sds = sub.add_parser("seeds", help="run notebooks once per seed (a verdict must not depend on its seed)")
    sds.add_argument("notebooks", nargs="*", help="paths, names or number prefixes (default: all in _toc.yml)")
    sds.add_argument("--count", default="20", help="number of consecutive seeds (default: 20)")
    sds.add_argument("--start", default="0", help="first seed (default: 0)")
    sds.add_argument("--profile", default="smoke", help="smoke, paper or full (default: smoke)")
    sds.add_argument("--jobs", default="2", help="notebook runs at once (default: 2)")
    clm = sub.add_parser("claims", help="every declared claim: window, power against its controls, false alarms",
                         description="Print every claim recorded by the executed notebooks: its window, the "
                         "measurement, its power against the learns-nothing control (a) and the wrong-regime "
                         "control (b), and its false-alarm probability. --seeds summarizes the runs of "
                         "dpsco seeds instead (false alarms counted over the seeds). Exit 1 if a claim fails.")
    clm.add_argument("--from", dest="source", default="executed", choices=sorted(CLAIM_SOURCES),
                     help="executed: the copies of dpsco reproduce (default); smoke: those of make test")
    clm.add_argument("--seeds", action="store_true", help="summarize the seed runs of dpsco seeds")
    bld = sub.add_parser("build", help="build the HTML book from the executed notebooks (warnings are errors)",
                         description="Build the HTML book (_build/html) from the executed notebooks that ran with "
                         "a passing verdict. A notebook whose latest run failed, whose copy shows no passing "
                         "verdict, or whose source or code (library, book package) changed since its run is "
                         "refused: it is named with the reason and the command exits 1.")
    bld.add_argument("--all", action="store_true", dest="require_all",
                     help="build only if every notebook ran with a passing verdict (default: the pages that did)")
    return parser


LIST_STATES = {"pass": "PASS", "fail": "FAIL", "failed": "FAILED", "stale": "STALE", "no-verdict": "NO VERDICT"}


def _list(root: Path, paths_only: bool) -> None:
    notebooks = toc_notebooks(root)
    if paths_only:
        for nb in notebooks:
            print(nb.relative_to(root))
        return
    width = max((len(nb.stem) for nb in notebooks), default=0)
    notes = []
    for nb in notebooks:
        executed = root / EXECUTED / nb.relative_to(root)
        status = notebook_status(root, nb)
        if status.state == "missing":
            state = "not executed"
        else:
            meta = _dpsco_meta(executed) or _dpsco_meta(failed_copy(root, executed))
            state = f"{meta.get('profile', '?')}: {LIST_STATES.get(status.state, status.state.upper())}"
            if not status.publishable:
                notes.append(f"  {nb.stem}: {status.detail}")
        print(f"{nb.stem.ljust(width)}  {state:<16}  {plain_text(notebook_title(nb))}")
    if notes:
        print("\nnot publishable (dpsco build refuses them):", *notes, sep="\n")
    print(f"\n{len(notebooks)} notebooks; rerun one with: dpsco reproduce 01 --profile smoke")


_TEX_WORDS = {"ell": "l", "le": "<=", "leq": "<=", "ge": ">=", "geq": ">=", "varepsilon": "eps", "epsilon": "eps",
              "cdot": "*", "times": "x", "infty": "inf", "to": "->", "sqrt": "sqrt", "ln": "ln", "log": "log"}


def plain_text(markdown: str) -> str:
    """A title without its markup, for a terminal: ``$\\ell_p$`` becomes ``l_p``, ``**x**`` becomes ``x``."""

    def math(match: re.Match[str]) -> str:
        tex = re.sub(r"\\([A-Za-z]+)\s*", lambda m: _TEX_WORDS.get(m.group(1), m.group(1)) + " ", match.group(1))
        tex = re.sub(r"\\[,;:! ]", " ", tex).replace("{", "").replace("}", "")
        return re.sub(r"\s+", " ", tex).strip().replace(" _", "_").replace(" ^", "^")

    text = re.sub(r"\$\$?([^$]+)\$\$?", math, markdown)
    return re.sub(r"\*\*|__|`", "", text)


def _int_option(value: str, option: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"{option} must be an integer, got {value!r}") from None


def _seeds_command(args: argparse.Namespace, root: Path) -> int:
    """``dpsco seeds``: exit 1 when any seed of any notebook fails its verdict."""
    out = seed_sweep(args.notebooks, count=_int_option(args.count, "--count"),
                     start=_int_option(args.start, "--start"), profile=args.profile,
                     jobs=_int_option(args.jobs, "--jobs"), root=root)
    bad = {nb: [s for s, v in runs.items() if not v.startswith("VERDICT") or ": PASS (" not in v]
           for nb, runs in out.items()}
    for nb, runs in out.items():
        tail = f"; failing seeds {bad[nb]}" if bad[nb] else ""
        print(f"{nb}: {len(runs) - len(bad[nb])}/{len(runs)} seeds pass{tail}")
    return 1 if any(bad.values()) else 0


def _claims_command(args: argparse.Namespace, root: Path) -> int:
    """``dpsco claims``: exit 1 when a recorded claim fails (or, with --seeds, a control passes in some seed)."""
    if args.seeds:
        groups = seed_claims(root)
        print(format_seed_claims(groups))
        return 1 if not groups or any(not r.get("passed") for rows in groups.values() for r in rows) else 0
    rows = collect_claims(root / CLAIM_SOURCES[args.source])
    print(format_claims(rows))
    return 1 if not rows or any(not r.get("passed") for r in rows) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    # argparse prints usage + error on bad input; we want one line and exit 2.
    parser.error = lambda message: (_ for _ in ()).throw(UsageError(message))  # type: ignore[method-assign]
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        for sp in action.choices.values():
            sp.error = parser.error  # type: ignore[method-assign]
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        root = require_book(project_root())
        if args.command == "list":
            _list(root, args.paths)
            return 0
        if args.command == "build":
            return build_book(root, require_all=args.require_all)
        if args.command == "seeds":
            return _seeds_command(args, root)
        if args.command == "claims":
            return _claims_command(args, root)
        try:
            jobs = int(args.jobs)
        except ValueError:
            raise UsageError(f"--jobs must be a positive integer, got {args.jobs!r}") from None
        try:
            timeout = None if args.timeout is None else float(args.timeout)
        except ValueError:
            raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout!r}") from None
        runs = reproduce(args.notebooks, profile=args.profile, jobs=jobs, scheduler=args.scheduler, root=root,
                         timeout=timeout, progress=not args.no_progress)
    except UsageError as exc:
        print(f"dpsco: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"dpsco: interrupted: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("dpsco: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed the pipe (``dpsco list | head``): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    print(run_summary(root, runs, args.profile))
    failed = [r for r in runs if r.error]
    for r in failed:
        print(f"dpsco: notebook {r.source.relative_to(root)} failed at {r.error}", file=sys.stderr)
        print(f"       the failed copy, with the traceback: {r.output}", file=sys.stderr)
        good = root / EXECUTED / r.source.relative_to(root)
        if good.is_file():
            print(f"       the previous executed copy is kept: {good}", file=sys.stderr)
    if failed:
        return 1
    print(f"executed {len(runs)} notebook(s) at profile {args.profile!r} into {root / EXECUTED}")
    if args.build:
        return build_book(root)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
