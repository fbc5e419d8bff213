"""The `dpsco` command: notebook resolution, bad input (exit 2), a failing verdict (exit 1)."""

from __future__ import annotations

import shutil

import pytest

from dpsco_lib import cli

from ._nbtools import make_notebook
from .conftest import ROOT


@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    """A two-notebook book: one whose verdict passes, one whose verdict fails."""
    (tmp_path / "dpsco_lib").mkdir()
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
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
    assert cli.main(["list"]) == 0
    assert capsys.readouterr().out.split() == ["notebooks/90_pass.ipynb", "notebooks/91_fail.ipynb"]
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


@pytest.mark.notebooks
def test_failing_verdict_fails_with_the_notebook_name(tiny_book, capsys):
    assert cli.main(["reproduce", "91", "--profile", "smoke", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "notebooks/91_fail.ipynb failed at cell" in err and "VERDICT 91_fail: FAIL" in err
    # the same notebook passes at the paper profile, where its check holds
    assert cli.main(["reproduce", "91", "--profile", "paper", "--jobs", "1"]) == 0
    assert (tiny_book / "_build" / "executed" / "notebooks" / "91_fail.ipynb").is_file()
