"""The ``dpsco`` command: list, reproduce and build the book's notebooks.

Examples
--------
::

    dpsco list
    dpsco reproduce notebooks/01_mechanisms.ipynb --profile smoke
    dpsco reproduce --profile paper --jobs 2          # every notebook in _toc.yml
    dpsco reproduce 05 --scheduler tcp://127.0.0.1:8786
    dpsco build                                       # jupyter-book build of the executed copies

Exit codes: 0 success, 1 a notebook or the build failed, 2 bad command-line input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

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
    """Map command-line names (path, file name, stem or number prefix like ``01``) to notebooks."""
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


def _execute(nb: Path, root: Path, out_dir: Path, profile: str, n_jobs: int, progress: bool) -> NotebookRun:
    import papermill as pm

    output = out_dir / nb.relative_to(root)
    output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    error = None
    try:
        pm.execute_notebook(
            str(nb),
            str(output),
            parameters={"profile": profile, "n_jobs": n_jobs},
            kernel_name="python3",
            cwd=str(nb.parent),
            progress_bar=progress,
            log_output=False,
            # The Makefile and the test suite export MPLBACKEND=Agg, which the kernel inherits and which would
            # silently drop every inline figure from the executed notebook (and so from the book).
            extra_arguments=["--matplotlib=inline"],
        )
    except pm.PapermillExecutionError as exc:
        error = f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}".strip()
    except Exception as exc:  # kernel died, bad notebook JSON, ...
        error = f"{type(exc).__name__}: {exc}"
    return NotebookRun(nb, output, time.perf_counter() - start, error)


def reproduce(
    names: Sequence[str],
    *,
    profile: str,
    jobs: int,
    scheduler: str | None,
    out_dir: Path | None = None,
    root: Path | None = None,
) -> list[NotebookRun]:
    """Execute notebooks with papermill (``jobs`` notebooks at a time) and stage the book sources."""
    from tqdm import tqdm

    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (choose from {', '.join(sorted(PROFILES))})")
    if jobs < 1:
        raise UsageError(f"--jobs must be a positive integer, got {jobs}")
    root = root or project_root()
    if not (root / "_toc.yml").is_file():
        raise UsageError(f"no _toc.yml in {root}: run dpsco from the dpsco-companion checkout")
    notebooks = resolve_notebooks(root, names)
    if not notebooks:
        raise UsageError("_toc.yml lists no notebooks")
    out_dir = out_dir or root / EXECUTED
    _stage_book_sources(root, out_dir)
    os.environ["DPSCO_ROOT"] = str(root)
    # Sweeps parallelize over processes; multi-threaded BLAS inside each of them oversubscribes the cores.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if scheduler:
        os.environ["DPSCO_SCHEDULER"] = scheduler
    per_notebook_jobs = max(1, (os.cpu_count() or 1) // min(jobs, len(notebooks)))
    runs: list[NotebookRun] = []
    cell_bars = jobs == 1 and len(notebooks) == 1
    with tqdm(total=len(notebooks), desc=f"notebooks ({profile})", unit="nb", disable=cell_bars) as bar:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [
                pool.submit(_execute, nb, root, out_dir, profile, per_notebook_jobs, cell_bars) for nb in notebooks
            ]
            for fut in as_completed(futures):
                run = fut.result()
                runs.append(run)
                status = "ok" if run.error is None else "FAILED"
                bar.write(f"{run.source.relative_to(root)}: {status} in {run.seconds:.1f} s")
                bar.update(1)
    order = {nb: i for i, nb in enumerate(notebooks)}
    runs.sort(key=lambda r: order[r.source])
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


def ensure_mathjax(root: Path) -> Path | None:
    """A local MathJax for the book, fetched once from the npm registry (``npm pack``) into the cache.

    The HTML then renders math without any CDN, so the book works offline and in the browser test.
    Returns the es5 directory, or ``None`` (the book falls back to the CDN) when npm is unavailable.
    """
    base = root / ".dpsco_cache" / f"mathjax-{MATHJAX_VERSION}"
    es5 = base / "package" / "es5"
    if (es5 / "tex-chtml.js").is_file():
        return es5
    npm = shutil.which("npm")
    if npm is None:
        print("dpsco: npm not found; the book loads MathJax from its CDN", file=sys.stderr)
        return None
    base.mkdir(parents=True, exist_ok=True)
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

    legacy = src / "_static" / "mathjax"  # where earlier versions staged it
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


def build_book(root: Path | None = None, out_dir: Path | None = None) -> int:
    """``jupyter-book build`` of the executed copies, warnings as errors; HTML in ``_build/html``."""
    root = root or project_root()
    src = out_dir or root / EXECUTED
    if not (src / "_config.yml").is_file():
        raise UsageError(f"{src} has no executed book: run 'dpsco reproduce' first")
    exe = shutil.which("jupyter-book", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if exe is None:
        raise UsageError("jupyter-book is not installed: pip install 'dpsco-lib[book]'")
    _stage_mathjax(root, src)
    cmd = [exe, "build", str(src), "--path-output", str(root), "-W", "--keep-going", "--quiet"]
    code = subprocess.call(cmd, cwd=root)
    index = root / "_build" / "html" / "index.html"
    if code == 0:
        print(f"book built: {index}")
    else:
        print(f"dpsco: error: jupyter-book build failed (exit {code}); see the messages above", file=sys.stderr)
    return 1 if code else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpsco", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("list", help="list the book's notebooks")
    rep = sub.add_parser("reproduce", help="execute notebooks with papermill into _build/executed")
    rep.add_argument("notebooks", nargs="*", help="paths, names or number prefixes (default: all in _toc.yml)")
    rep.add_argument("--profile", default="paper", help="smoke or paper (default: paper)")
    rep.add_argument("--jobs", default="2", help="notebooks executed at once (default: 2)")
    rep.add_argument("--scheduler", default=None, help="dask.distributed scheduler address for the sweeps")
    rep.add_argument("--build", action="store_true", help="build the HTML book afterwards")
    sub.add_parser("build", help="build the HTML book from _build/executed (warnings are errors)")
    return parser


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
        root = project_root()
        if args.command == "list":
            for nb in toc_notebooks(root):
                print(nb.relative_to(root))
            return 0
        if args.command == "build":
            return build_book(root)
        try:
            jobs = int(args.jobs)
        except ValueError:
            raise UsageError(f"--jobs must be a positive integer, got {args.jobs!r}") from None
        runs = reproduce(args.notebooks, profile=args.profile, jobs=jobs, scheduler=args.scheduler, root=root)
    except UsageError as exc:
        print(f"dpsco: error: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in runs if r.error]
    for r in failed:
        print(f"dpsco: notebook {r.source.relative_to(root)} failed at {r.error}", file=sys.stderr)
        print(f"       executed copy with the traceback: {r.output}", file=sys.stderr)
    if failed:
        return 1
    print(f"executed {len(runs)} notebook(s) at profile {args.profile!r} into {root / EXECUTED}")
    if args.build:
        return build_book(root)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
