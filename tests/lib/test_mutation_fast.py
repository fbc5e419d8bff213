"""The fast subset of the mutation suite (``mutation/``), run inside ``make test``.

Each fast mutant is a realistic single-line bug of the library (a noise scale, a sensitivity, a composition count,
the exponential mechanism's factor, kappa, a dropped correction term, a step sign) applied to a throwaway copy of
the repository; its quick catching test runs there and must fail. The test also fails when a mutant is stale (its
source line moved: update ``mutation/mutants.py``) or when the catching test fails on the unmutated library.
The full suite, with every mutant and the smoke notebooks, is ``make mutants``.
"""

from __future__ import annotations

from mutation.run import run_suite, select_mutants


def test_fast_mutants_are_all_caught():
    fast = select_mutants(fast=True)
    assert len(fast) >= 8, f"the fast subset must hold at least 8 mutants, has {len(fast)}"
    lines: list[str] = []
    result = run_suite(fast, jobs=1, notebooks=False, fast=True, log=lines.append)
    scores = result.scores
    log = "\n".join(lines)
    assert not scores["stale"], f"stale mutants (their code moved; update mutation/mutants.py): {scores['stale']}"
    assert not scores["baseline_broken"], f"catching tests fail on correct code: {scores['baseline_broken']}\n{log}"
    assert not scores["errors"], f"mutants in error: {scores['errors']}\n{log}"
    assert not scores["survived"], f"mutants no quick test caught: {scores['survived']}\n{log}"
    assert scores["caught"] == len(fast)


def test_every_mutant_applies_and_the_utility_bugs_are_left_to_the_notebooks():
    """Every curated mutant still finds its source line; the utility bugs (start point, four times the noise) name
    only smoke notebooks, so ``make mutants`` measures what the notebooks' claims catch on their own."""
    from mutation.mutants import MUTANTS
    from tests.conftest import ROOT

    for m in MUTANTS:
        m.apply((ROOT / m.file).read_text())
    utility = [m for m in MUTANTS if m.id.startswith("util-")]
    assert len(utility) >= 6 and all(m.notebooks and not m.tests for m in utility)
