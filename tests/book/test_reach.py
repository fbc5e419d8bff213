"""Citation metadata, the public home of the book, the Pages workflow and the README's commands (no build)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
import yaml

from dpsco_book import cli
from tests.conftest import ROOT

REPOSITORY = "https://github.com/dpsco-companion/dpsco-companion"
PAGES = "https://dpsco-companion.github.io/dpsco-companion/"


def test_citation_file_points_at_the_code_and_the_book():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["repository-code"] == REPOSITORY and cff["url"] == PAGES
    assert cff["version"] and cff["date-released"]
    assert "doi:" in (ROOT / "CITATION.cff").read_text(), "the DOI placeholder comment is missing"
    for author in cff["authors"]:
        assert "name" in author and " " not in author["name"], "an entity name with a space becomes 'Last, First'"


def test_citation_file_validates_and_bibtex_author_is_an_organization():
    pytest.importorskip("cffconvert")
    exe = ROOT / ".venv" / "bin" / "cffconvert"
    if not exe.is_file():
        pytest.skip("cffconvert is not installed in .venv")
    subprocess.run([str(exe), "--validate", "-i", str(ROOT / "CITATION.cff")], check=True, capture_output=True)
    bib = subprocess.run([str(exe), "-f", "bibtex", "-i", str(ROOT / "CITATION.cff")], check=True,
                         capture_output=True, text=True).stdout
    author = re.search(r"author = \{(.*)\},", bib).group(1)
    assert "," not in author and " and " not in author, f"BibTeX would split the author: {author!r}"
    assert PAGES in bib


def test_book_config_has_repository_launch_buttons_and_url():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == REPOSITORY
    assert config["html"]["use_repository_button"] and config["html"]["use_issues_button"]
    assert config["html"]["baseurl"] == PAGES
    assert config["launch_buttons"]["binderhub_url"] and config["launch_buttons"]["colab_url"]
    binder = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert [ln for ln in binder if ln and not ln.startswith("#")] == ["-e .[book]", "-e ./book"]


WORKFLOW_SCHEMA = {
    # The subset of GitHub's workflow schema this workflow uses; unknown keys at the top level are errors.
    "type": "object",
    "required": ["name", "on", "jobs"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "on": {"type": "object"},
        "permissions": {"type": "object", "additionalProperties": {"enum": ["read", "write", "none"]}},
        "concurrency": {"type": "object", "required": ["group"]},
        "jobs": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["runs-on", "steps"],
                "additionalProperties": False,
                "properties": {
                    "runs-on": {"type": "string"},
                    "needs": {"type": ["string", "array"]},
                    "timeout-minutes": {"type": "integer"},
                    "environment": {"type": "object", "required": ["name"]},
                    "steps": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "name": {"type": "string"},
                                "id": {"type": "string"},
                                "uses": {"type": "string", "pattern": r"^[\w.-]+/[\w.-]+@v\d+$"},
                                "run": {"type": "string"},
                                "with": {"type": "object"},
                            },
                            "oneOf": [{"required": ["uses"]}, {"required": ["run"]}],
                        },
                    },
                },
            },
        },
    },
}


def test_pages_workflow_is_well_formed():
    jsonschema = pytest.importorskip("jsonschema")
    text = (ROOT / ".github" / "workflows" / "book.yml").read_text()
    flow = yaml.safe_load(text)
    flow["on"] = flow.pop(True, flow.get("on"))  # YAML 1.1 reads the key 'on' as True
    jsonschema.validate(flow, WORKFLOW_SCHEMA)
    assert flow["on"]["push"]["branches"] == ["main"]
    assert flow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    steps = [s for job in flow["jobs"].values() for s in job["steps"]]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert {"actions/cache", "actions/upload-pages-artifact", "actions/deploy-pages"} <= set(uses)
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert "_build/executed" in cache["with"]["path"]
    assert any("make book" in s.get("run", "") for s in steps)
    assert PAGES in text


def test_tests_workflow_runs_make_test_on_every_push_and_pull_request():
    """Beside the Pages workflow: the README's test command (through .ci/run, which installs chromium and npm
    first, then runs make test) on every push to any branch and every pull request."""
    jsonschema = pytest.importorskip("jsonschema")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    flow["on"] = flow.pop(True, flow.get("on"))  # YAML 1.1 reads the key 'on' as True
    jsonschema.validate(flow, WORKFLOW_SCHEMA)
    assert "push" in flow["on"] and "pull_request" in flow["on"]
    assert not (flow["on"]["push"] or {}).get("branches"), "tests must run on a push to any branch"
    assert flow["permissions"] == {"contents": "read"}
    steps = [s for job in flow["jobs"].values() for s in job["steps"]]
    assert any(s.get("run", "").strip() == "bash .ci/run" for s in steps)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_binder_starts_launched_notebooks_at_the_smoke_profile():
    start = ROOT / "binder" / "start"
    assert os.access(start, os.X_OK), "binder/start must be executable (repo2docker runs it)"
    run = subprocess.run([str(start), "sh", "-c", 'echo "$DPSCO_PROFILE"'], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "DPSCO_PROFILE"}, check=True)
    assert run.stdout.strip() == "smoke"


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


def test_readme_commands_exist():
    """Every `make` and `dpsco` command in the README's shell blocks names a real target / parses as a command."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    commands = [line.split("#", 1)[0].strip().rstrip("&").strip() for b in blocks for line in b.splitlines()]
    targets = _make_targets()
    parser = cli._parser()
    checked = 0
    for cmd in filter(None, commands):
        words = shlex.split(cmd)
        if words[0] == "make":
            for word in words[1:]:
                if "=" not in word:
                    assert word in targets, f"README: 'make {word}' is not a Makefile target"
            checked += 1
        elif words[0].endswith("bin/dpsco"):
            if words[1:] != ["--version"]:
                parser.parse_args(words[1:])
            checked += 1
    assert checked >= 6
    first_dpsco = next(i for i, c in enumerate(commands) if ".venv/bin/" in c)
    assert any(c.startswith("make") for c in commands[:first_dpsco]), "README uses .venv/bin before any make target"


def test_make_help_lists_every_public_target():
    helptext = (ROOT / "Makefile").read_text().split("help:", 1)[1].split("\n\n", 1)[0]
    for target in ("venv", "book", "test", "reproduce", "lint", "bench", "lock", "clean"):
        assert f"make {target}" in helptext, f"make help does not list {target}"


def test_package_is_typed_and_licensed_in_current_form():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT" and meta["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "dpsco_lib" / "py.typed").is_file()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["dpsco_lib"]


READER_FACING_FORBIDDEN = re.compile(r"\b(seed 0\d\d|brief|spec IDs?|the spec|issue target)\b|/work/", re.I)


def test_reader_facing_text_speaks_of_the_book_only():
    """Prose and markdown cells never name the project's own organization or paths outside the repository."""
    import json

    offenders = []
    for path in sorted((ROOT / "book").glob("*.md")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if READER_FACING_FORBIDDEN.search(line):
                offenders.append(f"{path.name}:{n}: {line.strip()[:100]}")
    for nb in cli.toc_notebooks(ROOT):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] == "markdown" and READER_FACING_FORBIDDEN.search("".join(cell["source"])):
                offenders.append(f"{nb.name} cell {i}")
    assert not offenders, "reader-facing text about how the project is run:\n" + "\n".join(offenders)
