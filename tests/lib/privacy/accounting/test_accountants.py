"""Accountants as objects (:mod:`dpsco_lib.privacy.accounting.accountants`): names, support, certificates."""

from __future__ import annotations

import re

import pytest

from dpsco_lib.privacy.accounting import (
    ACCOUNTANTS,
    BEST,
    DEFAULT_ACCOUNTANT,
    FILTER,
    GDP,
    PAPER,
    RDP,
    Accountant,
    ComposedEvent,
    ExponentialEvent,
    GaussianEvent,
    GeneralizedGaussianEvent,
    LaplaceEvent,
    SelfComposedEvent,
    accountant_names,
    calibrate,
    certify_events,
    epsilons_of_events,
    gaussian_accountant,
    get_accountant,
    per_step_epsilon,
)
from tests.conftest import ROOT

PURE = (SelfComposedEvent(LaplaceEvent(0.05), 50),)
MIXED = (ComposedEvent((SelfComposedEvent(ExponentialEvent(0.02), 30), SelfComposedEvent(GaussianEvent(8.0), 5))),)
GAUSS = (SelfComposedEvent(GaussianEvent(4.0), 10),)


def test_names_resolve_to_objects_and_bad_names_are_refused():
    for name in accountant_names():
        acc = get_accountant(name)
        assert isinstance(acc, Accountant) and acc.name == name and get_accountant(acc) is acc
    assert set(ACCOUNTANTS) == set(accountant_names()) - {"filter"}
    with pytest.raises(ValueError, match=r"accountant must be one of .*'best'.*'filter'.*got 'optimal'"):
        get_accountant("optimal")
    with pytest.raises(ValueError, match="accountant"):
        get_accountant(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("events", [PURE, MIXED, GAUSS], ids=["pure", "mixed", "gaussian"])
def test_each_accountant_certifies_through_certify_events(events):
    delta = 1e-6
    table = epsilons_of_events(events, delta)
    for name in ACCOUNTANTS:
        acc = get_accountant(name)
        if acc.method in table:
            assert acc.supports(events, delta)
            assert acc.get_epsilon(events, delta) == certify_events(events, delta, acc.method)
        elif acc is not BEST:
            assert not acc.supports(events, delta)
            with pytest.raises(ValueError, match="does not apply"):
                acc.get_epsilon(events, delta)


@pytest.mark.parametrize("events", [PURE, MIXED, GAUSS], ids=["pure", "mixed", "gaussian"])
def test_best_is_the_minimum_over_the_supporting_accountants(events):
    delta = 1e-6
    sound = [get_accountant(n) for n in ACCOUNTANTS if n not in ("best", "paper")]
    values = [a.get_epsilon(events, delta) for a in sound if a.supports(events, delta)]
    assert BEST.get_epsilon(events, delta) <= min(values)
    eps, name = BEST.certify(events, delta)
    assert eps == BEST.get_epsilon(events, delta) and name in table_names(events, delta)


def table_names(events, delta):
    return set(epsilons_of_events(events, delta, methods=("best",)))


def test_objects_and_names_give_the_same_calibration():
    by_name = per_step_epsilon(1.0, 1e-6, 40, accountant="rdp")
    by_object = per_step_epsilon(1.0, 1e-6, 40, accountant=RDP)
    assert by_name == by_object
    cal = calibrate(lambda e: SelfComposedEvent(LaplaceEvent(e), 40), epsilon=1.0, delta=1e-6)
    assert cal == calibrate(lambda e: SelfComposedEvent(LaplaceEvent(e), 40), epsilon=1.0, delta=1e-6,
                            accountant="best")
    with pytest.raises(ValueError, match="accountant"):
        per_step_epsilon(1.0, 1e-6, 40, accountant=FILTER)


def test_design_and_gaussian_resolution():
    assert {n: get_accountant(n).design_accountant.name for n in ("best", "pld", "kov", "rdp", "advanced")} == {
        "best": "rdp", "pld": "rdp", "kov": "advanced", "rdp": "rdp", "advanced": "advanced"}
    assert gaussian_accountant("best") is GDP and gaussian_accountant(RDP) is RDP
    with pytest.raises(ValueError, match="Gaussian"):
        gaussian_accountant("advanced")
    gg = (GeneralizedGaussianEvent(3.0, 2.0),)
    assert RDP.supports(gg, 1e-6) and BEST.supports(gg, 1e-6) and not GDP.supports(gg, 1e-6)
    assert not PAPER.supports(gg, 1e-6) and not FILTER.supports(PURE, 1e-6)


def test_one_definition_of_the_default_accountant():
    assert DEFAULT_ACCOUNTANT is BEST
    pattern = re.compile(r"^\s*DEFAULT_ACCOUNTANT\s*(:[^=]*)?=", re.M)
    defs = [p for p in (ROOT / "dpsco_lib").rglob("*.py") if pattern.search(p.read_text())]
    assert [p.relative_to(ROOT).as_posix() for p in defs] == ["dpsco_lib/privacy/accounting/accountants.py"]
