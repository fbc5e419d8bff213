"""The `dpsco` command: notebook resolution, bad input (exit 2), a failing verdict (exit 1)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from dpsco_book import cli
from tests._nbtools import make_notebook
from tests.conftest import ROOT


@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    """A two-notebook book: one whose verdict passes, one whose verdict fails."""
    (tmp_path / "dpsco_lib").mkdir()
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    for extra in ("_ext", "_static"):  # the book's Sphinx extension and style sheet
        if (ROOT / "book" / extra).is_dir():
            shutil.copytree(ROOT / "book" / extra, tmp_path / "book" / extra)
    (tmp_path / "book" / "intro.md").write_text("# Tiny\n\nA test book.\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/90_pass\n  - file: notebooks/91_fail\n"
    )
    verdict = "from dpsco_lib.experiments import Verdict\nv = Verdict('{name}')\nv.check('c', {ok}, 'x')\nv.finish()"
    make_notebook(tmp_path / "notebooks" / "90_pass.ipynb", [verdict.format(name="90_pass", ok="True")])
    make_notebook(tmp_path / "notebooks" / "91_fail.ipynb", [verdict.format(name="91_fail", ok="profile != 'smoke'")])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSCO_ROOT", str(tmp_path))
    return tmp_path


def test_list_and_resolve(tiny_book, capsys):
    assert cli.main(["list", "--paths"]) == 0
    assert capsys.readouterr().out.split() == ["notebooks/90_pass.ipynb", "notebooks/91_fail.ipynb"]
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["90_pass", "not", "executed"] and "Test notebook" in lines[0]
    for name in ["90", "90_pass", "90_pass.ipynb", "notebooks/90_pass.ipynb"]:
        assert cli.resolve_notebooks(tiny_book, [name]) == [tiny_book / "notebooks" / "90_pass.ipynb"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["reproduce", "nope"], "notebook 'nope' is not a notebook of the book"),
        (["reproduce", "90", "--profile", "huge"], "unknown profile 'huge'"),
        (["reproduce", "--jobs", "0"], "--jobs must be a positive integer"),
        (["reproduce", "--jobs", "two"], "--jobs must be a positive integer"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tiny_book, capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpsco: error: ") and message in err


def test_version_and_outside_the_checkout(tmp_path, monkeypatch, capsys):
    from dpsco_lib import __version__

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and __version__ in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPSCO_ROOT", raising=False)
    for argv in (["list"], ["build"], ["reproduce", "01"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no _toc.yml" in err and "Traceback" not in err


def _executed(path, outputs, *, tags=("parameters",)):
    """An executed-looking notebook: title, parameters cell, one code cell with the given outputs."""
    import nbformat

    make_notebook(path, ["x = 1"])
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].metadata["tags"] = list(tags)
    nb.cells[2].outputs = [nbformat.from_dict(o) for o in outputs]
    nbformat.write(nb, path)
    return path


def test_page_status_needs_a_passing_verdict(tmp_path):
    stream = {"output_type": "stream", "name": "stdout"}
    ok = _executed(tmp_path / "ok.ipynb", [{**stream, "text": "VERDICT ok: PASS (2/2 checks)\n"}])
    assert cli.page_status(ok).publishable
    bad = _executed(tmp_path / "bad.ipynb", [{**stream, "text": "VERDICT bad: FAIL (1 of 2 checks failed: a)\n"}])
    assert cli.page_status(bad).state == "fail"
    err = {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": []}
    crashed = _executed(tmp_path / "crash.ipynb", [{**stream, "text": "VERDICT c: PASS (1/1 checks)\n"}, err])
    assert cli.page_status(crashed).state == "fail" and "boom" in cli.page_status(crashed).detail
    silent = _executed(tmp_path / "silent.ipynb", [{**stream, "text": "hello\n"}])
    assert cli.page_status(silent).state == "no-verdict"
    assert cli.page_status(tmp_path / "none.ipynb").state == "missing"


def test_prepare_page_hides_parameters_and_shows_provenance(tmp_path):
    import json

    page = _executed(tmp_path / "05_x.ipynb", [], tags=("parameters",))
    cli.prepare_page(page)
    cli.prepare_page(page)  # idempotent
    cells = json.loads(page.read_text())["cells"]
    boxes = [c for c in cells if cli.PROVENANCE_TAG in c["metadata"].get("tags", [])]
    assert len(boxes) == 1 and cells[1] is boxes[0]
    assert "seed `1`" in "".join(boxes[0]["source"]) and "dpsco reproduce 05" in "".join(boxes[0]["source"])
    params = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    assert "remove-cell" in params["metadata"]["tags"]


def test_pruned_table_of_contents():
    toc = {"root": "book/intro", "parts": [
        {"caption": "A", "chapters": [{"file": "book/a"}, {"file": "notebooks/01_x"}, {"file": "notebooks/02_y"}]},
        {"caption": "B", "chapters": [{"file": "notebooks/03_z"}]},
    ]}
    pruned = cli._prune_toc(toc, {"notebooks/02_y"})
    assert pruned == {"root": "book/intro", "parts": [
        {"caption": "A", "chapters": [{"file": "book/a"}, {"file": "notebooks/02_y"}]}]}


def test_wrong_scheduler_is_refused_before_any_kernel(tiny_book, capsys, monkeypatch):
    pytest.importorskip("distributed")
    # a closed port is refused at once but dask retries until its timeout: 2 s here instead of the default 10 s
    monkeypatch.setattr(cli, "check_scheduler", functools.partial(cli.check_scheduler, timeout=2.0))
    assert cli.main(["reproduce", "90", "--profile", "smoke", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach a dask scheduler at 'tcp://127.0.0.1:9'" in err and err.count("\n") == 1
    assert not (tiny_book / "_build").exists()


@pytest.mark.notebooks
def test_failing_verdict_fails_with_the_notebook_name(tiny_book, capsys):
    assert cli.main(["reproduce", "91", "--profile", "paper", "--jobs", "1"]) == 0
    good = tiny_book / "_build" / "executed" / "notebooks" / "91_fail.ipynb"
    before = good.read_bytes()
    out = capsys.readouterr().out
    assert "summary (profile paper):" in out and "VERDICT 91_fail: PASS (1/1 checks)" in out
    # at the smoke profile its check fails: the command says where, and the good copy is kept as it was
    assert cli.main(["reproduce", "91", "--profile", "smoke", "--jobs", "2"]) == 1
    err = capsys.readouterr().err
    assert "notebooks/91_fail.ipynb failed at cell" in err and "VERDICT 91_fail: FAIL" in err
    assert "running over TCP" not in err
    assert good.read_bytes() == before
    assert (tiny_book / "_build" / "failed" / "executed" / "notebooks" / "91_fail.ipynb").is_file()


@pytest.mark.notebooks
def test_timeout_stops_a_notebook(tiny_book, capsys):
    make_notebook(tiny_book / "notebooks" / "90_pass.ipynb", ["import time\ntime.sleep(60)"])
    assert cli.main(["reproduce", "90", "--profile", "smoke", "--timeout", "3"]) == 1
    assert "timed out after 3 s" in capsys.readouterr().err


@pytest.mark.notebooks
@pytest.mark.book
def test_build_refuses_a_failed_notebook(tiny_book, capsys):
    """dpsco build publishes the passing page and refuses the failed one (exit 1), deleting its old page."""
    assert cli.main(["reproduce", "--profile", "paper"]) == 0  # both pass at paper
    assert cli.main(["build"]) == 0
    html = tiny_book / "_build" / "html" / "notebooks"
    assert (html / "91_fail.html").is_file()
    page = (html / "90_pass.html").read_text()
    assert "How this page was produced" in page and "dpsco-verdict" in page
    capsys.readouterr()
    # 91 fails at smoke: its executed copy stays the good one, but the failed rerun holds the page back
    assert cli.main(["reproduce", "91", "--profile", "smoke"]) == 1
    capsys.readouterr()
    assert cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "refusing to publish 91_fail: its latest run failed" in err and "VERDICT 91_fail: FAIL" in err
    assert (html / "90_pass.html").is_file() and not (html / "91_fail.html").exists()
    assert cli.main(["build", "--all"]) == 1


def test_list_into_a_closed_pipe_stops_quietly():
    import subprocess
    import sys

    # a listing far longer than any pipe buffer, so the write after the reader has gone does fail
    code = ("import sys; from dpsco_book import cli\n"
            "cli._list = lambda root, paths: [print('notebook', i) for i in range(10**6)]\n"
            "sys.exit(cli.main(['list']))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()  # like `dpsco list | head -1`: read one line, then close the pipe
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err and "BrokenPipe" not in err


def test_seeds_command_rejects_bad_counts(capsys):
    from dpsco_book import cli as _cli

    assert _cli.main(["seeds", "02", "--count", "x"]) == 2
    assert "--count must be an integer" in capsys.readouterr().err
    assert _cli.main(["seeds", "02", "--count", "0"]) == 2
    assert _cli.main(["seeds", "02", "--profile", "huge"]) == 2


# ---------------------------------------------------------------------------------------------------------------
# The `dpsco` command does not publish what it should not: failed and stale runs, Ctrl-C, partial builds.
#
# Also: kernels start side by side, notebook numbers without their leading zero, progress only on a terminal,
# failed cells numbered as in the source notebook, plain help and titles.
# ---------------------------------------------------------------------------------------------------------------
VERDICT = "from dpsco_lib.experiments import Verdict\nv = Verdict('{name}')\nv.check('c', {ok}, 'x')\nv.finish()"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A one-notebook project (its own ``dpsco_lib`` and ``book/dpsco_book`` sources, for the code hashes)."""
    (tmp_path / "dpsco_lib").mkdir()
    (tmp_path / "dpsco_lib" / "core.py").write_text("X = 1\n")
    (tmp_path / "book" / "dpsco_book").mkdir(parents=True)
    (tmp_path / "book" / "dpsco_book" / "experiment.py").write_text("Y = 1\n")
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book" / "intro.md").write_text("# Tiny\n\nA test book.\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/07_one\n")
    make_notebook(tmp_path / "notebooks" / "07_one.ipynb", [VERDICT.format(name="07_one", ok="True")])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSCO_ROOT", str(tmp_path))
    return tmp_path


def _fake_run(root, nb, out_dir, *, passed=True, error=None):
    """The copy `dpsco reproduce` leaves (a verdict output, the run's hashes) without running a kernel."""
    data = json.loads(nb.read_text())
    line = f"VERDICT {nb.stem}: {'PASS (1/1 checks)' if passed else 'FAIL (1 of 1 checks failed: c)'}\n"
    code = [c for c in data["cells"] if c["cell_type"] == "code"]
    code[-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": line}]
    fingerprints = {"notebook": cli.notebook_fingerprint(nb), **cli.code_fingerprints(root)}
    data["metadata"]["dpsco"] = {"profile": "smoke", "fingerprints": fingerprints,
                                 **({"status": "failed", "error": error} if error else {})}
    out = out_dir / nb.relative_to(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    return out


def test_failed_rerun_and_stale_copies_are_refused(project, capsys):
    nb = project / "notebooks" / "07_one.ipynb"
    good = _fake_run(project, nb, project / cli.EXECUTED)
    assert cli.notebook_status(project, nb).state == "pass"
    # a failed rerun since the good run: `build` refuses the notebook (exit 1) and `list` says so
    time.sleep(0.01)
    failed = cli.failed_copy(project, good)
    assert failed == project / "_build" / "failed" / "executed" / "notebooks" / "07_one.ipynb"
    _fake_run(project, nb, project / cli.FAILED / "executed", passed=False, error="cell 3: AssertionError: boom")
    status = cli.notebook_status(project, nb)
    assert status.state == "failed" and "boom" in status.detail
    assert cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "refusing to publish 07_one: its latest run failed (cell 3: AssertionError: boom)" in err
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "smoke: FAILED" in out and "07_one: its latest run failed" in out
    # with no earlier good copy the failure is still known (not "not executed yet")
    good.unlink()
    assert cli.notebook_status(project, nb).state == "failed"
    # the stale cases: the notebook, the library or the book package changed since the passing run
    failed.unlink()
    _fake_run(project, nb, project / cli.EXECUTED)
    make_notebook(nb, [VERDICT.format(name="07_one", ok="1 == 1")])
    assert cli.notebook_status(project, nb).detail == "the notebook changed since its run"
    _fake_run(project, nb, project / cli.EXECUTED)
    (project / "dpsco_lib" / "core.py").write_text("X = 2\n")
    assert cli.notebook_status(project, nb).detail == "the library changed since its run"
    assert cli.main(["build"]) == 1
    assert "refusing to publish 07_one: the library changed since its run" in capsys.readouterr().err
    _fake_run(project, nb, project / cli.EXECUTED)
    (project / "book" / "dpsco_book" / "experiment.py").write_text("Y = 2\n")
    assert cli.notebook_status(project, nb).state == "stale"
    _fake_run(project, nb, project / cli.EXECUTED)
    (project / "book" / "dpsco_book" / "cli.py").write_text("# the command does not compute any result\n")
    assert cli.notebook_status(project, nb).state == "pass"
    # a copy without hashes (executed before they were recorded) is stale too
    data = json.loads(good.read_text())
    del data["metadata"]["dpsco"]["fingerprints"]
    good.write_text(json.dumps(data))
    assert cli.notebook_status(project, nb).state == "stale"


@pytest.mark.notebooks
def test_a_failed_rerun_makes_build_exit_1(project, capsys):
    """The issue's sequence: a passing run, then the verdict breaks and the rerun fails: build refuses."""
    assert cli.main(["reproduce", "7", "--profile", "smoke", "--jobs", "1"]) == 0
    make_notebook(project / "notebooks" / "07_one.ipynb", ["x = 1", VERDICT.format(name="07_one", ok="False")])
    assert cli.main(["reproduce", "07", "--profile", "smoke", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    # the source notebook: title (1), parameters (2), x = 1 (3), the verdict (4); papermill's cell is not counted
    assert "notebooks/07_one.ipynb failed at cell 4: AssertionError: VERDICT 07_one: FAIL" in err
    assert cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "refusing to publish 07_one: its latest run failed (cell 4: AssertionError" in err
    assert "not executed yet" not in err


def test_source_cell_numbers_skip_the_injected_parameters():
    cells = [{"cell_type": "markdown"}, {"metadata": {"tags": ["parameters"]}},
             {"metadata": {"tags": ["injected-parameters"]}}, {}, {}]
    assert [cli.source_cell_number(cells, i) for i in (0, 1, 3, 4)] == [1, 2, 3, 4]


def _started(path, proc, seconds=120):
    end = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "the notebook never started its long cell"
        time.sleep(0.2)


@pytest.mark.notebooks
def test_ctrl_c_stops_a_run_at_once(project):
    """SIGINT while a cell runs: exit 130 within 10 s, one line, no traceback, no copy saved, kernel gone."""
    long_cell = ("import os, time, pathlib\npathlib.Path('kernel.pid').write_text(str(os.getpid()))\n"
                 "time.sleep(300)")
    make_notebook(project / "notebooks" / "07_one.ipynb", [long_cell, VERDICT.format(name="07_one", ok="True")])
    env = {**os.environ, "DPSCO_ROOT": str(project),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "book"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "dpsco_book.cli", "reproduce", "07", "--profile", "smoke"],
                            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = project / "notebooks" / "kernel.pid"
    _started(pid_file, proc)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < 10
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "Task was destroyed" not in err
    assert err.strip().splitlines() == ["dpsco: interrupted: stopped 07_one; no executed copy was saved for it"]
    assert not (project / cli.EXECUTED / "notebooks" / "07_one.ipynb").exists()
    assert not (project / cli.FAILED / "executed" / "notebooks" / "07_one.ipynb").exists()
    kernel = int(pid_file.read_text())
    time.sleep(0.5)
    assert not _alive(kernel)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not yet reaped by its new parent) is gone too
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_eight_kernels_start_at_once():
    """IPC sockets in a private directory: kernels starting together never fight over a TCP port."""
    import asyncio

    manager_class = cli.kernel_manager_class()
    errors: list[BaseException] = []
    ready: list[str] = []

    async def start_one() -> None:
        km = manager_class(kernel_name="python3")
        await km.start_kernel(extra_arguments=["--IPKernelApp.log_level=ERROR"])
        try:
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=120)
            ready.append(km.connection_file)
            kc.stop_channels()
        finally:
            await km.shutdown_kernel(now=True)

    def run() -> None:
        try:
            asyncio.run(start_one())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(set(ready)) == 8 and all(str(cli._KERNEL_DIR[0]) in path for path in ready)


def test_notebook_numbers_without_leading_zero(project):
    assert cli.resolve_notebooks(project, ["7"]) == cli.resolve_notebooks(project, ["07"])
    with pytest.raises(cli.UsageError):
        cli.resolve_notebooks(project, ["8"])


def test_progress_only_on_a_terminal(monkeypatch):
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setattr(sys, "stderr", Stream(True))
    monkeypatch.setattr(sys, "stdout", Stream(False))
    assert not cli.interactive()
    monkeypatch.setattr(sys, "stdout", Stream(True))
    assert cli.interactive()


def test_help_is_plain_text(project):
    """No reST markup in ``dpsco --help``; the exit codes and ``--no-progress`` are documented."""
    env = {**os.environ, "DPSCO_ROOT": str(project),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "book"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "dpsco_book.cli", "--help"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "``" not in proc.stdout and "--no-progress" not in proc.stdout
    assert "exit codes" in proc.stdout and "130 interrupted" in proc.stdout
    sub = subprocess.run([sys.executable, "-m", "dpsco_book.cli", "reproduce", "--help"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=60)
    assert "--no-progress" in sub.stdout and "terminal" in sub.stdout


def test_titles_are_plain_text():
    assert cli.plain_text(r"Stochastic mirror descent in $\ell_p$ setups") == "Stochastic mirror descent in l_p setups"
    assert cli.plain_text(r"Frank-Wolfe in $\ell_p$, $1 < p \le 2$") == "Frank-Wolfe in l_p, 1 < p <= 2"
    assert cli.plain_text(r"at a $\ln d$ price, **bold** and `code`") == "at a ln d price, bold and code"


def test_partial_build_unlinks_references_to_pages_left_out(tmp_path):
    """The staged pages of a partial build keep a {prf:ref} only to a theorem some staged page defines."""
    (tmp_path / "book").mkdir()
    prose = tmp_path / "book" / "part.md"
    prose.write_text("See {prf:ref}`thm-A1` and {prf:ref}`F3 <thm-F3>`.\n")
    nb = tmp_path / "notebooks" / "19_x.ipynb"
    make_notebook(nb, ["x = 1"], title="# X\n\n```{prf:theorem} Crossover\n:label: thm-crossover\n```\n"
                  "By {prf:ref}`thm-F3` and {prf:ref}`thm-crossover`.")
    data = json.loads(nb.read_text())
    data["cells"][-1]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                     "data": {"text/markdown": "table {prf:ref}`thm-D4`"}}]
    nb.write_text(json.dumps(data))
    unlinked = cli.unlink_missing_theorems(tmp_path, [prose, nb])
    assert unlinked == {"book/part.md": {"thm-A1", "thm-F3"}, "notebooks/19_x.ipynb": {"thm-F3", "thm-D4"}}
    assert prose.read_text() == "See A1 and F3.\n"
    text = nb.read_text()
    assert "{prf:ref}`thm-crossover`" in text and "thm-F3" not in text and "table D4" in text


@pytest.mark.notebooks
@pytest.mark.book
def test_partial_build_of_two_notebooks_that_reference_pages_left_out(tmp_path):
    """The real book, two of its notebooks (17 and 19, which cite theorems of notebooks 03-12), Sphinx with -W.

    The copies carry a passing verdict instead of a run (references do not depend on the outputs: no
    experiment module writes a reference); the build must succeed and link no theorem outside the two pages.
    """
    staged = tmp_path / "partial"
    for name in ("17", "19"):
        nb = cli.resolve_notebooks(ROOT, [name])[0]
        data = json.loads(nb.read_text())
        code = [c for c in data["cells"] if c["cell_type"] == "code"]
        code[-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"VERDICT {nb.stem}: PASS\n"}]
        data["metadata"]["dpsco"] = {"profile": "smoke", "fingerprints": {
            "notebook": cli.notebook_fingerprint(nb), **cli.code_fingerprints(ROOT)}}
        (staged / "notebooks").mkdir(parents=True, exist_ok=True)
        (staged / nb.relative_to(ROOT)).write_text(json.dumps(data))
    html = tmp_path / "out" / "_build" / "html"
    assert cli.build_book(ROOT, staged, html_dir=html) == 0
    assert (html / "notebooks" / "17_rate_atlas.html").is_file()
    assert not (html / "notebooks" / "06_lp_frank_wolfe_lower_bound.html").exists()
