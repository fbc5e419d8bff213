"""Tests of the rate-atlas registry (notebook 17): registry integrity, the sweep function against direct calls,
predictions, the n an entry needs, predicted exponents in d, privacy certificates (dp-accounting as oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsco_book.privacy_rule import delta_for_n
from dpsco_book.rate_atlas import (
    ALPHA_LATTICE,
    ATLAS,
    GAMMA_LATTICE,
    a3_bound,
    atlas_grid,
    atlas_task,
    atlas_verdict,
    d_claim,
    d_exponent,
    entry_row,
    get_entry,
    needed_n_bound,
    needed_n_extrapolated,
    polylog_range,
    rate_claim,
)
from dpsco_lib.experiments import Verdict, fit_loglog_slope

# the algorithm IDs of the theorem catalogue (spec/README.md)
SPEC_IDS = {"S1", "S2", "F1", "F2", "F3", "A1", "A3", "A4", "A5", "D4", "N1", "R1", "Z2", "Z3"}
EXISTING_LABELS = {"thm-S1", "thm-S2", "thm-F1", "thm-F3", "thm-A1", "thm-D4"}


# ----------------------------------------------------------------------------------------------- registry
def test_registry_integrity():
    keys = [e.key for e in ATLAS]
    assert len(keys) == len(set(keys)), "entry keys must be unique"
    for e in ATLAS:
        for grid in (e.n_smoke, e.n_paper):
            assert len(grid) >= 2 and list(grid) == sorted(set(grid)), e.key
            lo, hi = e.predicted(grid)
            assert -1.0 <= lo <= hi < 0, e.key
        assert 0 < e.tol[0] <= 0.25 and 0 < e.tol[1] <= 0.15, f"{e.key}: a tolerance must be able to fail"
        assert e.measure in ("excess risk", "duality gap"), e.key
        assert e.label is None or e.label in EXISTING_LABELS, f"{e.key}: label {e.label} does not exist in the book"
        assert e.private == (e.epsilon is not None) and (e.epsilon is None or 0 < e.epsilon <= 2)
        assert bool(e.relation) == e.private, e.key
        if e.d_paper:
            assert e.n_for_d > 0 and (e.d_shape is not None or e.d_range is not None), e.key
            assert len(e.d_smoke) >= 2 and list(e.d_paper) == sorted(e.d_paper), e.key
        assert e.spec in SPEC_IDS, f"{e.key}: unknown spec ID {e.spec}"


def test_get_entry_and_bad_inputs():
    assert get_entry("S1 SMD").spec == "S1"
    with pytest.raises(ValueError, match="key must be one of"):
        get_entry("nope")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="sweep"):
        atlas_task(rng=rng, key="S1 SMD", n=64, d=10, sweep="x")
    with pytest.raises(ValueError, match="n"):
        atlas_task(rng=rng, key="S1 SMD", n=2, d=10)
    with pytest.raises(ValueError, match="rng"):
        atlas_task(rng=0, key="S1 SMD", n=64, d=10)


# ----------------------------------------------------------------------------------------------- the task
@pytest.mark.parametrize("entry", ATLAS, ids=[e.key for e in ATLAS])
def test_every_entry_runs_and_certifies(entry):
    n = min(entry.n_smoke)
    kw = {"member": entry.family[0]} if entry.family else {}
    out = atlas_task(rng=np.random.default_rng(5), key=entry.key, n=n, d=entry.d, **kw)
    assert {"value", "eps_certified", "eps_target", "trivial"} <= set(out)
    assert math.isfinite(out["value"]) and out["value"] >= -1e-8
    assert out["trivial"] > 0
    if entry.private:
        assert out["eps_target"] == entry.epsilon
        assert out["eps_certified"] <= entry.epsilon * (1 + 1e-9)
        assert out["delta"] == delta_for_n(n)
    else:
        assert math.isnan(out["eps_certified"]) and math.isnan(out["eps_target"])
    again = atlas_task(rng=np.random.default_rng(5), key=entry.key, n=n, d=entry.d, **kw)
    assert again == out or all(  # bit-identical (NaN != NaN)
        (a == b) or (math.isnan(a) and math.isnan(b)) for a, b in zip(out.values(), again.values(), strict=True))


def test_smd_entry_equals_direct_call():
    from dpsco_lib.algorithms.smd import run_smd
    from dpsco_lib.problems.least_squares import hard_least_squares

    out = atlas_task(rng=np.random.default_rng(11), key="S1 SMD", n=500, d=50, sweep="d")
    prob = hard_least_squares(1.0, 50, c=2.0, set_kind="simplex")
    rng = np.random.default_rng(11)
    res = run_smd(prob, prob.sample(500, rng), rng=rng)
    assert out["value"] == prob.excess_risk(res.x)
    assert out["trivial"] == pytest.approx(prob.excess_risk(np.full(50, 1 / 50)), rel=1e-12)


def test_d_sweep_uses_its_own_runner():
    e = get_entry("A1 SMD saddle")
    out = atlas_task(rng=np.random.default_rng(2), key=e.key, n=e.n_for_d, d=30, sweep="d")
    assert out["eps_target"] == 1.0 and out["eps_certified"] <= 1.0 * (1 + 1e-9)
    # the n-sweep runner on the same (n, d) is a different (square) game
    out_n = atlas_task(rng=np.random.default_rng(2), key=e.key, n=e.n_for_d, d=30)
    assert out_n["trivial"] != out["trivial"]


def test_family_entry_needs_a_member_and_grid_lists_members():
    e = get_entry("F1 Poly-SFW")
    with pytest.raises(ValueError, match="member"):
        atlas_task(rng=np.random.default_rng(0), key=e.key, n=1000, d=2)
    assert not [g for g in atlas_grid("smoke") if g["key"] == e.key], "F1 runs at the paper profile only"
    e = get_entry("F2 tree FW")
    rows = [g for g in atlas_grid("smoke") if g["key"] == e.key]
    assert len(rows) == len(e.n_smoke) * len(e.family) * e.reps("smoke")


def test_dp_sgd_entry_is_replace_one_through_the_conversion():
    """DP-SGD (add/remove) is calibrated for the add/remove target (eps/2, delta/(1 + e^(eps/2))) whose
    group-of-two conversion is the replace-one target; its replace-one certificate (the conversion of its ledger)
    and its native add/remove certificate meet their targets."""
    from dpsco_book.rate_atlas import dp_sgd_hyper

    n, d, eps = 4000, 10, 1.0
    hyp = dp_sgd_hyper(n, d, eps)
    assert hyp["epsilon"] == pytest.approx(eps / 2)
    assert hyp["delta"] == pytest.approx(delta_for_n(n) / (1 + math.exp(eps / 2)))
    out = atlas_task(rng=np.random.default_rng(0), key="D4 DP-SGD", n=n, d=d)
    assert out["eps_add_remove"] <= eps / 2 * (1 + 1e-9)
    assert out["eps_certified"] <= eps * (1 + 1e-9)
    assert out["eps_add_remove"] <= out["eps_certified"]
    assert get_entry("D4 DP-SGD").relation.startswith("replace-one")


def test_needed_n():
    assert needed_n_extrapolated(64_000, 1.0, -0.5) == pytest.approx(256_000, rel=1e-12)
    assert needed_n_extrapolated(64_000, 0.4, -0.5) == 64_000
    assert needed_n_extrapolated(64_000, 1.0, 0.1) == math.inf
    n = needed_n_bound(a3_bound, 0.3)
    assert a3_bound(int(n)) <= 0.3 < a3_bound(int(n / 1.05))
    assert needed_n_bound(lambda m: 1.0, 0.5) == math.inf


def _records(key: str, ratios: dict[int, float], noise: float = 0.0) -> list[dict]:
    rng = np.random.default_rng(0)
    return [{"key": key, "n": n, "member": 0.0, "value": r * math.exp(noise * rng.standard_normal()),
             "trivial": 1.0, "eps_certified": 0.9} for n, r in ratios.items() for _ in range(4)]


def test_verdict_is_two_sided_and_needs_n_is_not_a_failure():
    """An entry on its predicted slope passes its claim whether or not it learned (a non-learner states the n it
    needs); a decay faster than predicted fails, at the smoke profile as at the paper profile (same logic)."""
    e = get_entry("A3 bias-reduced SMD")
    ns = e.n_smoke
    for scale, learns in ((0.3, True), (3.0, False)):
        rows = [entry_row(e, _records(e.key, {n: scale * (n / ns[0]) ** -0.49 for n in ns}, 0.01), "smoke",
                          rng=np.random.default_rng(1), n_boot=200)]
        v = Verdict("t")
        atlas_verdict(v, rows, [])
        assert rows[0]["learns"] == learns and all(c.passed for c in v.rows), v.table_text()
        assert rows[0]["claim"].power_trivial == 1.0 and rows[0]["claim"].power_regime >= 0.8
        if not learns:
            assert math.isfinite(rows[0]["needs_n_curve"]) and rows[0]["needs_n_curve"] > ns[-1]
    for profile in ("smoke", "paper"):
        fast = entry_row(e, _records(e.key, {n: 0.3 * (n / ns[0]) ** -1.0 for n in ns}, 0.01), profile,
                         rng=np.random.default_rng(1), n_boot=200)
        v = Verdict("t")
        atlas_verdict(v, [fast], [])
        assert not fast["claim"].accepted and not v.rows[0].passed, profile


# ----------------------------------------------------------------------------------------------- the claims
def test_claims_declared_with_half_gap_windows_and_fixed_families():
    """Every claimed entry's window is at most half the gap to its neighbour at both profiles (RateClaim refuses a
    wider one); the hard linear families use the fixed lattice (>= two decades, independent of n and d), F3's
    alpha spans two decades, F1 runs at d >= 100, and every theorem family keeps a claim at the smoke profile."""
    for e in ATLAS:
        for profile in ("smoke", "paper"):
            grid = e.n_smoke if profile == "smoke" else e.n_paper
            c = rate_claim(e, grid, profile)
            assert (c is None) == (e.neighbour is None), e.key
            if c is not None:
                lo, hi = c.bounds
                assert not lo <= e.neighbour <= hi and c.tolerance <= c.gap / 2 + 1e-12, e.key
        if e.d_paper:
            for ds in (e.d_smoke, e.d_paper):
                dc = d_claim(e, ds)
                assert dc.tolerance <= dc.gap / 2 + 1e-12, e.key
        if e.family_name == "gamma":
            assert e.family == GAMMA_LATTICE
    assert max(GAMMA_LATTICE) / min(GAMMA_LATTICE) >= 100 and max(ALPHA_LATTICE) / min(ALPHA_LATTICE) >= 100
    assert get_entry("F3 GG-VR-SFW tree").family == ALPHA_LATTICE
    assert get_entry("F1 Poly-SFW").d >= 100
    at_smoke = {e.spec[0] for e in ATLAS if e.neighbour is not None and e.n_grid("smoke")}
    assert at_smoke == {"S", "F", "A"}, at_smoke


def test_hard_family_member_does_not_move_with_n():
    """The S1 member is gamma itself: its trivial error (x = 0) is gamma at every n and d."""
    for n, d in ((256, 200), (4096, 50)):
        out = atlas_task(rng=np.random.default_rng(0), key="S1 SMD", n=n, d=d, member=0.25)
        assert out["trivial"] == pytest.approx(0.25, rel=1e-12)


def test_learns_nothing_fails_a_family_claim():
    """An output that learns nothing on the fixed lattice (error gamma on member gamma) has the constant worst case
    and fails S1's claim; a worst case at the bound's scale passes."""
    e = get_entry("S1 SMD")
    rng = np.random.default_rng(3)
    recs, recs_ok = [], []
    for n in e.n_smoke:
        for g in e.family:
            for _ in range(4):
                noise = math.exp(0.02 * rng.standard_normal())
                recs.append({"key": e.key, "n": n, "member": g, "value": g * noise, "trivial": g,
                             "eps_certified": math.nan})
                b = math.sqrt(2 * math.log(2 * e.d) / n)
                recs_ok.append({**recs[-1], "value": g * noise * math.exp(-g / b) + 1e-9})
    bad = entry_row(e, recs, "smoke", rng=np.random.default_rng(1), n_boot=200)
    good = entry_row(e, recs_ok, "smoke", rng=np.random.default_rng(1), n_boot=200)
    assert not bad["claim"].accepted
    assert good["claim"].passed, good["claim"]


def test_d_claims():
    """Polylogarithmic entries: the range of ln^k d, 1/4 <= k <= 1, contains the bound's own shape; Euclidean
    entries: [1/2, 1] against the neighbour 0."""
    ds = (10, 100, 1000)
    lo, hi = polylog_range(ds)
    assert hi == pytest.approx(np.polyfit(np.log(ds), np.log(np.log(ds)), 1)[0], rel=1e-12) and lo == hi / 4
    for key in ("S1 SMD", "A1 SMD saddle"):
        c = d_claim(get_entry(key), ds)
        assert c.bounds[0] <= d_exponent(get_entry(key), ds) <= c.bounds[1] and c.neighbour == 0.5
    c = d_claim(get_entry("S2 noisy SGD"), (20, 80))
    assert c.bounds == (0.5, 1.0) and c.neighbour == 0.0
    with pytest.raises(ValueError, match="no claim in d"):
        d_claim(get_entry("F2 tree FW"), ds)


def test_d_exponent_closed_forms():
    e = get_entry("S1 SMD")
    ds = [10, 100, 1000, 10_000]
    expected = np.polyfit(np.log(ds), 0.5 * np.log(np.log(ds)), 1)[0]
    assert d_exponent(e, ds) == pytest.approx(expected, rel=1e-12)
    # for d = 10^k the local slope of sqrt(ln d) is the slope of 0.5 ln k against k ln 10
    k = np.arange(1, 5)
    assert d_exponent(e, ds) == pytest.approx(np.polyfit(k * math.log(10), 0.5 * np.log(k), 1)[0], rel=1e-12)
    with pytest.raises(ValueError, match="no dimension sweep"):
        d_exponent(get_entry("F2 tree FW"), ds)
    with pytest.raises(ValueError, match="two"):
        d_exponent(e, [10])


@pytest.mark.statistical
def test_smd_entry_slope_is_minus_one_half():
    """Fixed seeds; SMD's exponent on the fixed simplex instance (the runner of the entry's sweep in d) on a short
    grid lies within 0.1 of -1/2 (the check fails for a wrong step size, e.g. a constant one)."""
    e = get_entry("S1 SMD")
    xs, ys = [], []
    for n in (256, 1024, 4096):
        for r in range(3):
            xs.append(n)
            ys.append(atlas_task(rng=np.random.default_rng([n, r]), key=e.key, n=n, d=e.d, sweep="d")["value"])
    fit = fit_loglog_slope(xs, ys, rng=np.random.default_rng(0), statistic="median", n_boot=200)
    assert abs(fit.slope + 0.5) <= 0.1, fit
