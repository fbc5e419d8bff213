"""The `dpsco` command: notebook resolution, bad input (exit 2), a failing verdict (exit 1)."""

from __future__ import annotations

import functools
import shutil

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
    # 91 fails at smoke: its executed copy stays the good one, so simulate a failed copy that is published
    executed = tiny_book / "_build" / "executed" / "notebooks" / "91_fail.ipynb"
    failed_copy = tiny_book / "_build" / "failed" / "executed" / "notebooks" / "91_fail.ipynb"
    assert cli.main(["reproduce", "91", "--profile", "smoke"]) == 1
    shutil.copy(failed_copy, executed)
    assert cli.main(["build"]) == 1
    err = capsys.readouterr().err
    assert "refusing to publish 91_fail" in err and "VERDICT 91_fail: FAIL" in err
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
