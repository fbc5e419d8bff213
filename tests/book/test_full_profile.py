"""The ``full`` profile on a local dask cluster: a notebook executed with ``--profile full --scheduler``
picks its full-profile sizes and sends its sweep to the cluster's workers, bit-identical to a local run."""

from __future__ import annotations

import json
import os

import pytest

from dpsco_book.cli import _execute
from tests._nbtools import make_notebook

distributed = pytest.importorskip("distributed", reason="the 'dist' extra (dask.distributed) is not installed")

CELLS = [
    "import os\nimport numpy as np\nfrom dpsco_lib.experiments import Verdict, get_profile, run_sweep\n"
    "prof = get_profile(profile)\nN = prof.pick(smoke=10, paper=100, full=1000)",
    "def task(*, rng, n):\n    try:\n        from distributed import get_worker\n        where = get_worker().address\n"
    "    except (ImportError, ValueError):\n        where = 'local'\n"
    "    return {'mean': float(rng.normal(size=n).mean()), 'where': where}\n"
    "recs = run_sweep(task, {'n': [N]}, seeds=prof.n_seeds, base_seed=seed)",
    "v = Verdict('full')\nv.check('full sizes', prof.name == 'full' and N == 1000 and len(recs) == 64, str(N))\n"
    "v.check('ran on the workers', all(r['where'] != 'local' for r in recs), str({r['where'] for r in recs}))\n"
    "print('MEANS', json.dumps([r['mean'] for r in recs]))\nv.finish()",
]


def _means(path) -> list[float]:
    nb = json.loads(path.read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code"
                   for o in c.get("outputs", []))
    line = next(ln for ln in text.splitlines() if ln.startswith("MEANS "))
    return json.loads(line.removeprefix("MEANS "))


@pytest.mark.notebooks
def test_full_profile_notebook_on_a_local_dask_cluster(tmp_path, monkeypatch):
    root = tmp_path / "book"
    nb = make_notebook(root / "notebooks" / "full.ipynb", ["import json", *CELLS])
    monkeypatch.setenv("DPSCO_NO_CACHE", "1")
    monkeypatch.setenv("DPSCO_RESULTS_DIR", str(tmp_path / "results"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        monkeypatch.setenv("DPSCO_SCHEDULER", cluster.scheduler_address)
        run = _execute(nb, root, tmp_path / "out", "full", 1, False, seed=7)
    assert run.error is None, run.error
    remote = _means(run.output)
    monkeypatch.delenv("DPSCO_SCHEDULER")
    cells = list(CELLS)
    cells[2] = cells[2].replace("all(r['where'] != 'local' for r in recs)", "all(r['where'] == 'local' for r in recs)")
    local_nb = make_notebook(root / "notebooks" / "local.ipynb", ["import json", *cells])
    local = _execute(local_nb, root, tmp_path / "out", "full", 1, False, seed=7)
    assert local.error is None, local.error
    assert _means(local.output) == remote and len(remote) == 64
    assert os.environ.get("DPSCO_SCHEDULER") is None
