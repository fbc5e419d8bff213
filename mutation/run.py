"""Run the mutation suite: apply each curated mutant to a throwaway copy of the library and see what catches it.

Usage::

    python mutation/run.py [--fast] [--only ID ...] [--jobs N] [--no-notebooks] [--json out.json]
                           [--deselect-broken] [--keep] [--list] [--target 0.95]

For every selected mutant (:mod:`mutation.mutants`) the runner

1. copies the repository's ``dpsco_lib/``, ``tests/``, ``notebooks/``, ``benchmarks/``, ``book/``,
   ``pyproject.toml``, ``_config.yml`` and ``_toc.yml`` into a fresh temporary directory;
2. applies the mutant there (a ``find`` string that is not unique in its file makes the mutant *stale*);
3. checks that ``import dpsco_lib`` in that copy resolves to the copy (the project's ``.venv`` has the package
   installed in editable mode, pointing at the real checkout, so every subprocess runs with ``cwd`` and
   ``PYTHONPATH`` set to the copy (and its ``book/`` folder, the book's package) and the import is verified,
   never assumed);
4. runs the mutant's tests (``python -m pytest -x -q -p no:cacheprovider <tests>``, with a timeout) and then its
   smoke notebooks (``python -m dpsco_book.cli reproduce NN --profile smoke`` with ``DPSCO_NO_CACHE=1``);
5. records *caught* (a test or a notebook failed, or timed out), *survived*, or *stale*.

Before the mutants, the union of the selected tests and the union of the selected notebooks run once on an
unmutated copy. A mutant whose tests fail on correct code is reported as *baseline-broken* and not scored (a
broken baseline is not a catch); with ``--deselect-broken`` it is scored on the rest of its tests instead (the
failing node ids are deselected). A notebook that fails on correct code is dropped from every mutant's notebooks.

The report is a table (id, category, what caught it, seconds) and three scores: overall, tests alone,
notebooks alone. ``--json`` writes the records. Exit status: 0 when every scored mutant's result meets
``--target`` (default 0.95) and no mutant is stale, baseline-broken or in error; 1 otherwise.

``--fast`` runs the fast subset (``Mutant.fast``) with only the first entry of each mutant's ``tests`` (its quick
catching test) and no notebooks: this is what ``tests/lib/test_mutation_fast.py`` runs inside ``make test``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable for `mutation.mutants`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutation.mutants import MUTANTS, Mutant, StaleMutant  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: What a copy holds: everything the tests and the smoke notebooks read.
COPY_ITEMS = ("dpsco_lib", "tests", "notebooks", "benchmarks", "book", "pyproject.toml", "_config.yml", "_toc.yml")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".hypothesis", ".pytest_cache")
TEST_TIMEOUT = 900.0
NOTEBOOK_TIMEOUT = 300.0
_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (.+?)(?: - .*)?$")  # node ids may hold spaces: "test[S1 SMD]"
_NOTEBOOK_FAILED = re.compile(r"^dpsco: notebook (\S+) failed at (.*)$")

__all__ = [
    "COPY_ITEMS",
    "Record",
    "SuiteResult",
    "check_import",
    "make_copy",
    "main",
    "run_suite",
    "select_mutants",
]


# ---------------------------------------------------------------------------------------------------------------
# Copies and subprocesses
# ---------------------------------------------------------------------------------------------------------------
def make_copy(repo: Path = REPO, prefix: str = "dpsco-mutant-") -> Path:
    """A fresh temporary directory holding :data:`COPY_ITEMS` of ``repo`` (no caches, no bytecode)."""
    dest = Path(tempfile.mkdtemp(prefix=prefix))
    for item in COPY_ITEMS:
        src = repo / item
        if src.is_dir():
            shutil.copytree(src, dest / item, ignore=_IGNORE)
        elif src.is_file():
            shutil.copy2(src, dest / item)
    return dest


def copy_env(copy: Path) -> dict[str, str]:
    """The environment of every subprocess run in ``copy``: the copy first on the import path, no result cache."""
    env = dict(os.environ)
    for var in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST",
                "DPSCO_CACHE_DIR", "DPSCO_RESULTS_DIR", "DPSCO_PROGRESS_DIR", "DPSCO_PROFILE"):
        env.pop(var, None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(copy), str(copy / "book")]),  # the library and the book's package
        DPSCO_ROOT=str(copy),
        DPSCO_NO_CACHE="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


@dataclass(frozen=True)
class _Proc:
    returncode: int | None  # None: timed out (the process group was killed)
    output: str
    seconds: float


def _run(cmd: Sequence[str], copy: Path, timeout: float) -> _Proc:
    """Run ``cmd`` in ``copy`` with :func:`copy_env`; on timeout kill its whole process group (kernels included).

    The output goes to a file, not a pipe: worker processes that outlive the command (joblib's loky workers of a
    notebook kernel stay idle for minutes) would otherwise hold the pipe open and stall the runner.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
        proc = subprocess.Popen(list(cmd), cwd=copy, env=copy_env(copy), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group this call created (start_new_session)
            except ProcessLookupError:  # pragma: no cover - exited in between
                pass
            proc.wait()
            code = None
        log.seek(0)
        out = log.read()
    return _Proc(code, out, time.perf_counter() - start)


def check_import(copy: Path) -> str:
    """Where ``import dpsco_lib`` resolves in ``copy``; ``RuntimeError`` unless it is inside the copy."""
    res = _run([sys.executable, "-c", "import dpsco_lib; print(dpsco_lib.__file__)"], copy, 120.0)
    lines = res.output.strip().splitlines()
    where = lines[-1] if lines else ""
    if res.returncode != 0 or not where:
        raise RuntimeError(f"import dpsco_lib failed in the copy {copy}: {res.output[-2000:]}")
    path = Path(where).resolve()
    if copy.resolve() not in path.parents:
        raise RuntimeError(
            f"import dpsco_lib in the copy resolved to {path}, not inside {copy}: the mutant would be tested "
            "against the real checkout (editable install shadowing PYTHONPATH?)"
        )
    return str(path)


# ---------------------------------------------------------------------------------------------------------------
# Channels: tests and notebooks
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Channel:
    returncode: int | None
    failed: tuple[str, ...]
    seconds: float
    tail: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _tail(text: str, n: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def run_tests(copy: Path, tests: Sequence[str], *, stop_first: bool = True, jobs: int = 1,
              timeout: float = TEST_TIMEOUT, deselect: Sequence[str] = ()) -> _Channel:
    """``python -m pytest -q -p no:cacheprovider [-x] <tests>`` in ``copy``; the failed node ids."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if stop_first:
        cmd.append("-x")
    if jobs > 1:
        cmd += ["-n", str(jobs)]
    for node in deselect:
        cmd += ["--deselect", node]
    res = _run([*cmd, *tests], copy, timeout)
    failed = tuple(m.group(2) for line in res.output.splitlines() if (m := _SUMMARY_LINE.match(line)))
    return _Channel(res.returncode, failed, res.seconds, _tail(res.output))


def run_notebooks(copy: Path, notebooks: Sequence[str], *, jobs: int = 1,
                  timeout: float = NOTEBOOK_TIMEOUT) -> _Channel:
    """``python -m dpsco_book.cli reproduce <notebooks> --profile smoke`` in ``copy``; the failed notebooks."""
    cmd = [sys.executable, "-m", "dpsco_book.cli", "reproduce", *notebooks, "--profile", "smoke", "--jobs", str(jobs),
           "--no-progress", "--timeout", str(int(timeout))]
    res = _run(cmd, copy, timeout * len(notebooks) + 120.0)
    failed = tuple(
        f"{Path(m.group(1)).stem}: {m.group(2)[:160]}"
        for line in res.output.splitlines() if (m := _NOTEBOOK_FAILED.match(line))
    )
    if res.returncode is None:
        failed = (*failed, "timed out")
    return _Channel(res.returncode, failed, res.seconds, _tail(res.output))


def _covers(entry: str, node: str) -> bool:
    """Whether the test entry (a file or a node id) selects the pytest node (or collection error) ``node``."""
    if node == entry or node.startswith(entry + "::") or node.startswith(entry + "["):
        return True
    return entry.startswith(node + "::")  # a collection error of the entry's file


# ---------------------------------------------------------------------------------------------------------------
# Records and the suite
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Record:
    """What happened to one mutant."""

    id: str
    category: str
    file: str
    description: str
    status: str  # caught | survived | stale | baseline-broken | error
    tests: list[str]
    notebooks: list[str]
    caught_by_tests: list[str] = field(default_factory=list)
    caught_by_notebooks: list[str] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)  # baseline failures left out (--deselect-broken)
    tests_seconds: float = 0.0
    notebooks_seconds: float = 0.0
    seconds: float = 0.0
    detail: str = ""

    @property
    def scored(self) -> bool:
        return self.status in ("caught", "survived")


@dataclass
class SuiteResult:
    """All records, the baseline's findings and the scores."""

    records: list[Record]
    broken_test_sets: list[list[str]]
    broken_notebooks: list[str]
    baseline_seconds: float

    def _of(self, pred) -> list[Record]:  # noqa: ANN001 - a predicate on records
        return [r for r in self.records if pred(r)]

    @property
    def scores(self) -> dict[str, object]:
        scored = self._of(lambda r: r.scored)
        caught = self._of(lambda r: r.status == "caught")
        by_tests = self._of(lambda r: r.scored and r.caught_by_tests)
        with_nb = self._of(lambda r: r.scored and r.notebooks)
        by_nb = self._of(lambda r: r.scored and r.caught_by_notebooks)

        def frac(a: int, b: int) -> float | None:
            return a / b if b else None

        return {
            "scored": len(scored),
            "caught": len(caught),
            "overall": frac(len(caught), len(scored)),
            "tests_alone": frac(len(by_tests), len(scored)),
            "notebooks_alone": frac(len(by_nb), len(scored)),
            "notebooks_alone_where_run": frac(len(by_nb), len(with_nb)),
            "mutants_with_notebooks": len(with_nb),
            "stale": [r.id for r in self.records if r.status == "stale"],
            "baseline_broken": [r.id for r in self.records if r.status == "baseline-broken"],
            "errors": [r.id for r in self.records if r.status == "error"],
            "survived": [r.id for r in self.records if r.status == "survived"],
        }


def select_mutants(only: Iterable[str] | None = None, fast: bool = False,
                   mutants: Sequence[Mutant] = MUTANTS) -> list[Mutant]:
    """The mutants to run: ``only`` (ids, in that order; ``KeyError`` for an unknown id), else all or the fast set."""
    if only:
        known = {m.id: m for m in mutants}
        missing = [i for i in only if i not in known]
        if missing:
            raise KeyError(f"unknown mutant id(s) {missing}; known: {sorted(known)}")
        chosen = [known[i] for i in only]
    else:
        chosen = list(mutants)
    return [m for m in chosen if m.fast] if fast else chosen


def _tests_of(m: Mutant, fast: bool) -> tuple[str, ...]:
    return m.tests[:1] if fast else m.tests


def _baseline_tests(test_sets: list[tuple[str, ...]], jobs: int, log  # noqa: ANN001
                    ) -> dict[tuple[str, ...], tuple[str, ...] | None]:
    """The test sets that fail on an unmutated copy, each with its failing node ids (None: not known).

    One run of the union of the sets (without ``-x``); where that run cannot attribute its failures (a collection
    error, a usage error, a timeout) each set runs on its own.
    """
    union = list(dict.fromkeys(t for s in test_sets for t in s))
    if not union:
        return {}
    copy = make_copy(prefix="dpsco-mutant-baseline-")
    try:
        check_import(copy)
        res = run_tests(copy, union, stop_first=False, jobs=jobs)
        log(f"baseline tests: {len(union)} entries, exit {res.returncode}, {res.seconds:.0f} s")
        if res.returncode == 0:
            return {}
        if res.returncode == 1 and res.failed:
            for node in res.failed:
                log(f"  baseline failure: {node}")
            out: dict[tuple[str, ...], tuple[str, ...] | None] = {}
            for s in test_sets:
                nodes = tuple(node for node in res.failed if any(_covers(e, node) for e in s))
                if nodes:
                    out[s] = nodes
            return out
        out = {}  # collection error, usage error or timeout: check each set on its own
        for s in test_sets:
            one = run_tests(copy, list(s), stop_first=True)
            if one.returncode != 0:
                log(f"  baseline set {list(s)} fails (exit {one.returncode}): {one.failed or one.tail[-300:]}")
                out[s] = None
        return out
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _baseline_notebooks(notebooks: list[str], jobs: int, log) -> set[str]:  # noqa: ANN001
    """The notebooks that fail on an unmutated copy."""
    if not notebooks:
        return set()
    copy = make_copy(prefix="dpsco-mutant-baseline-nb-")
    try:
        check_import(copy)
        res = run_notebooks(copy, notebooks, jobs=min(jobs, 2))
        log(f"baseline notebooks {notebooks}: exit {res.returncode}, {res.seconds:.0f} s")
        if res.returncode == 0:
            return set()
        bad = {nb for nb in notebooks if any(f.startswith(nb) for f in res.failed)}
        if not bad:  # usage error or timeout without attribution: drop them all
            log(f"  notebook baseline failed without attribution: {res.tail[-600:]}")
            return set(notebooks)
        for f in res.failed:
            log(f"  baseline notebook failure: {f}")
        return bad
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def run_mutant(m: Mutant, *, tests: Sequence[str], notebooks: Sequence[str], keep: bool = False,
               deselect: Sequence[str] = ()) -> Record:
    """Copy, mutate, verify the import, run the tests (minus ``deselect``) then the notebooks; the mutant's record."""
    rec = Record(m.id, m.category, m.file, m.description, "survived", list(tests), list(notebooks),
                 deselected=list(deselect))
    start = time.perf_counter()
    copy = make_copy()
    try:
        target = copy / m.file
        try:
            target.write_text(m.apply(target.read_text()))
        except StaleMutant as exc:
            rec.status, rec.detail = "stale", str(exc)
            return rec
        except FileNotFoundError:
            rec.status, rec.detail = "stale", f"mutant {m.id}: {m.file} does not exist"
            return rec
        try:
            check_import(copy)
        except RuntimeError as exc:
            if "resolved to" in str(exc):
                rec.status, rec.detail = "error", str(exc)
                return rec
            rec.status, rec.detail = "caught", "the mutated library does not import"  # pragma: no cover
            rec.caught_by_tests = ["import dpsco_lib"]
            return rec
        if tests:
            res = run_tests(copy, tests, deselect=deselect)
            rec.tests_seconds = res.seconds
            if res.timed_out:
                rec.caught_by_tests = [f"timeout after {res.seconds:.0f} s"]
            elif res.returncode in (1, 2):
                rec.caught_by_tests = list(res.failed) or [f"pytest exit {res.returncode}"]
            elif res.returncode != 0:
                rec.status, rec.detail = "error", f"pytest exit {res.returncode}: {res.tail[-800:]}"
                return rec
        if notebooks:
            nres = run_notebooks(copy, notebooks)
            rec.notebooks_seconds = nres.seconds
            if nres.returncode == 2:
                rec.status, rec.detail = "error", f"dpsco reproduce exit 2: {nres.tail[-800:]}"
                return rec
            if nres.returncode != 0:
                rec.caught_by_notebooks = list(nres.failed) or [f"dpsco reproduce exit {nres.returncode}"]
        rec.status = "caught" if (rec.caught_by_tests or rec.caught_by_notebooks) else "survived"
        return rec
    finally:
        rec.seconds = time.perf_counter() - start
        if keep:
            rec.detail = (rec.detail + f" (copy kept: {copy})").strip()
        else:
            shutil.rmtree(copy, ignore_errors=True)


def run_suite(
    mutants: Sequence[Mutant],
    *,
    jobs: int = 1,
    notebooks: bool = True,
    fast: bool = False,
    keep: bool = False,
    deselect_broken: bool = False,
    log=print,  # noqa: ANN001 - a print-like callable
) -> SuiteResult:
    """Baseline, then every mutant (``jobs`` at a time); the records in the order of ``mutants``.

    A mutant whose test set fails on the unmutated copy is *baseline-broken* and not scored; with
    ``deselect_broken`` it is scored on the rest of its tests instead (the failing node ids are deselected, so a
    failure on correct code is never counted as a catch).
    """
    start = time.perf_counter()
    use_nb = notebooks and not fast
    test_sets = sorted({_tests_of(m, fast) for m in mutants if _tests_of(m, fast)})
    nb_union = sorted({nb for m in mutants for nb in m.notebooks}) if use_nb else []
    with ThreadPoolExecutor(max_workers=2 if jobs > 1 else 1) as pool:
        f_tests = pool.submit(_baseline_tests, test_sets, jobs, log)
        f_nb = pool.submit(_baseline_notebooks, nb_union, jobs, log)
        broken_sets, broken_nb = f_tests.result(), f_nb.result()
    baseline_seconds = time.perf_counter() - start

    def one(m: Mutant) -> Record:
        tests = _tests_of(m, fast)
        nbs = [nb for nb in m.notebooks if nb not in broken_nb] if use_nb else []
        failing = broken_sets.get(tests, ()) if tests in broken_sets else ()
        if tests in broken_sets and not (deselect_broken and failing):
            rec = Record(m.id, m.category, m.file, m.description, "baseline-broken", list(tests), nbs,
                         detail="its tests fail on the unmutated library: not scored")
        else:
            rec = run_mutant(m, tests=tests, notebooks=nbs, keep=keep, deselect=failing or ())
        by = ", ".join([*rec.caught_by_tests[:1], *rec.caught_by_notebooks[:1]])
        log(f"  {rec.id:<34} {rec.status:<16} {rec.seconds:6.1f} s  {by}")
        return rec

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        records = list(pool.map(one, mutants))
    return SuiteResult(records, [list(s) for s in sorted(broken_sets)], sorted(broken_nb), baseline_seconds)


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------
def _pct(x: object) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f}%"  # type: ignore[arg-type]


def format_report(result: SuiteResult) -> str:
    """The table (id, category, status, what caught it, seconds) and the scores."""
    rows = [("id", "category", "status", "caught by", "seconds")]
    for r in result.records:
        by = [f"test {t}" for t in r.caught_by_tests[:1]] + [f"nb {n.split(':')[0]}" for n in r.caught_by_notebooks]
        rows.append((r.id, r.category, r.status, "; ".join(by) or "-", f"{r.seconds:.1f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4] for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    s = result.scores
    lines += [
        "",
        f"score: {s['caught']}/{s['scored']} caught = {_pct(s['overall'])} overall;"
        f" tests alone {_pct(s['tests_alone'])};"
        f" notebooks alone {_pct(s['notebooks_alone'])} of all ({_pct(s['notebooks_alone_where_run'])} of the "
        f"{s['mutants_with_notebooks']} mutants with notebooks)",
    ]
    for key in ("survived", "stale", "baseline_broken", "errors"):
        if s[key]:
            lines.append(f"{key.replace('_', '-')}: {', '.join(s[key])}")  # type: ignore[arg-type]
    for r in result.records:
        if r.status in ("stale", "error", "baseline-broken") and r.detail:
            lines.append(f"  {r.id}: {r.detail[:400]}")
    for r in result.records:
        if r.deselected:
            lines.append(f"  {r.id}: scored without {len(r.deselected)} test(s) failing on correct code "
                         f"(--deselect-broken), e.g. {r.deselected[0]}")
    if result.broken_notebooks:
        lines.append(f"notebooks failing on the unmutated library (not used): {', '.join(result.broken_notebooks)}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutation/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", action="store_true", help="the fast subset, quick test only, no notebooks")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    p.add_argument("--no-notebooks", action="store_true", help="tests only")
    p.add_argument("--json", type=Path, default=None, help="write the records and scores to this file")
    p.add_argument("--keep", action="store_true", help="keep each mutant's copy (for debugging)")
    p.add_argument("--deselect-broken", action="store_true",
                   help="score a mutant whose tests partly fail on correct code on the rest (deselect the failures)")
    p.add_argument("--target", type=float, default=0.95, help="required fraction caught (default 0.95)")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    args = _parser().parse_args(argv)
    if args.jobs < 1:
        print("mutation/run.py: --jobs must be >= 1", file=sys.stderr)
        return 2
    try:
        mutants = select_mutants(args.only, args.fast)
    except KeyError as exc:
        print(f"mutation/run.py: {exc.args[0]}", file=sys.stderr)
        return 2
    if args.list:
        for m in mutants:
            print(f"{m.id:<34} {m.category:<24} {'fast ' if m.fast else ''}{m.description}")
        return 0
    print(f"mutation suite: {len(mutants)} mutant(s), jobs={args.jobs}, "
          f"notebooks={'no' if args.no_notebooks or args.fast else 'yes'}", flush=True)

    def log(msg: str) -> None:
        print(msg, flush=True)

    result = run_suite(mutants, jobs=args.jobs, notebooks=not args.no_notebooks, fast=args.fast, keep=args.keep,
                       deselect_broken=args.deselect_broken, log=log)
    print()
    print(format_report(result))
    if args.json:
        payload = {"records": [asdict(r) for r in result.records], "scores": result.scores,
                   "broken_test_sets": result.broken_test_sets, "broken_notebooks": result.broken_notebooks,
                   "baseline_seconds": result.baseline_seconds}
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    s = result.scores
    ok = not (s["stale"] or s["errors"] or s["baseline_broken"])
    return 0 if ok and s["overall"] is not None and s["overall"] >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
