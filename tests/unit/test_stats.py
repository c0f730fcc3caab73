"""Paired differences, clustered intervals, judge agreement and power on data with known answers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from eqa_runner.scoring.aggregate import bootstrap_ci
from eqa_runner.scoring.stats import (
    episodes_needed,
    icc_oneway,
    judge_agreement,
    mean_interval,
    paired_difference,
    power_analysis,
    sign_flip_p,
    weighted_kappa,
)


def _run(n: int, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {f"ep{i:03d}": float(v) for i, v in enumerate(rng.random(n))}


def _clustered(k: int, m: int, between: float, within: float, seed: int = 0):
    """k clusters of m episodes: value = cluster effect (sd ``between``) + noise (sd ``within``)."""
    rng = np.random.default_rng(seed)
    effects = rng.normal(0, between, k)
    values, clusters = {}, {}
    for c in range(k):
        for j in range(m):
            eid = f"s{c:03d}-q{j:02d}"
            values[eid] = float(effects[c] + rng.normal(0, within))
            clusters[eid] = f"scene{c:03d}"
    return values, clusters


def _width(r) -> float:
    return r.hi - r.lo


# -- paired differences ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 60])  # exact and Monte-Carlo p
def test_identical_runs_give_zero_delta_and_p_one(n: int) -> None:
    a = _run(n)
    r = paired_difference(a, dict(a))
    assert r.delta == 0.0 and (r.lo, r.hi) == (0.0, 0.0)
    assert r.p_value == 1.0
    assert r.p_method == ("exact" if n <= 16 else "monte-carlo")
    assert r.n == n and r.only_a == () and r.only_b == ()


def test_identical_runs_clustered_p_one() -> None:
    a, cl = _clustered(8, 4, 1.0, 0.1)
    r = paired_difference(a, dict(a), cl)
    assert (r.delta, r.p_value, r.method, r.n_clusters) == (0.0, 1.0, "cluster", 8)


@pytest.mark.parametrize("n", [12, 80])
def test_shifted_run_gives_the_shift_and_tiny_p(n: int) -> None:
    a = _run(n, seed=1)
    b = {k: v + 0.25 for k, v in a.items()}
    r = paired_difference(a, b)
    assert r.delta == pytest.approx(0.25)
    assert r.lo == pytest.approx(0.25) and r.hi == pytest.approx(0.25)
    # the smallest p the test can give: 2/2^n exact, 1/(B+1) Monte-Carlo
    assert r.p_value == pytest.approx(2 / 2**n if n <= 16 else 1 / 10001)


def test_noisy_shift_interval_covers_it_and_p_is_small() -> None:
    rng = np.random.default_rng(2)
    a = _run(200, seed=2)
    b = {k: v + 0.1 + float(rng.normal(0, 0.2)) for k, v in a.items()}
    r = paired_difference(a, b, samples=2000)
    assert r.lo < 0.1 < r.hi and r.lo > 0
    assert r.p_value < 1e-3
    null = {k: v + float(rng.normal(0, 0.2)) for k, v in a.items()}
    assert paired_difference(a, null).p_value > 0.05  # seeded: no difference found


def test_exact_p_by_hand() -> None:
    # differences 1, 2, 3: of the 8 sign patterns only +6 and -6 reach |T| >= 6
    assert sign_flip_p(np.array([1.0, 2.0, 3.0])) == (0.25, "exact")
    assert sign_flip_p(np.array([1.0, -1.0])) == (1.0, "exact")


def test_monte_carlo_p_matches_exact() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, 14)
    exact, _ = sign_flip_p(d)
    mc, how = sign_flip_p(d, exact_max=0, permutations=20000, seed=5)
    assert how == "monte-carlo"
    assert abs(mc - exact) < 0.015 and 0.01 < exact < 0.9


def test_ids_in_one_run_are_reported_and_left_out() -> None:
    a = _run(30)
    b = {k: v + 0.5 for k, v in a.items()}
    a2 = {**a, "only-a-1": 100.0, "only-a-0": -100.0}
    b2 = {**b, "only-b": 1e6}
    r = paired_difference(a2, b2)
    assert r.only_a == ("only-a-0", "only-a-1") and r.only_b == ("only-b",)
    assert r.n == 30 and r.delta == pytest.approx(0.5)
    base = paired_difference(a, b)
    assert (r.delta, r.lo, r.hi, r.p_value) == (base.delta, base.lo, base.hi, base.p_value)


def test_no_common_episodes() -> None:
    r = paired_difference({"a": 1.0}, {"b": 1.0})
    assert (r.delta, r.p_value, r.n, r.only_a, r.only_b) == (None, None, 0, ("a",), ("b",))


def test_paired_is_order_and_label_independent_and_seeded() -> None:
    a, cl = _clustered(30, 5, 0.5, 0.5, seed=4)
    b = {k: v + 0.05 * (i % 3) for i, (k, v) in enumerate(a.items())}
    r = paired_difference(a, b, cl)
    keys = list(a)[::-1]
    a_rev, b_rev = (
        {k: a[k] for k in keys},
        {k: b[k] for k in np.random.default_rng(0).permutation(keys)},
    )
    renamed = {k: "x" + c[::-1] for k, c in cl.items()}
    assert paired_difference(a_rev, b_rev, renamed) == r
    assert paired_difference(a, b, cl, seed=1) != r


def test_paired_clustered_interval_wider_on_correlated_differences() -> None:
    d, cl = _clustered(30, 10, 0.3, 0.03, seed=5)
    a = dict.fromkeys(d, 0.0)
    clustered = paired_difference(a, d, cl)
    iid = paired_difference(a, d, cl, method="iid")
    assert clustered.method == "cluster" and iid.method == "iid"
    assert clustered.delta == iid.delta
    assert _width(clustered) > 2 * _width(iid)


# -- intervals for one run -------------------------------------------------------------------


def test_iid_interval_equals_aggregate_bootstrap_ci() -> None:
    a = _run(57, seed=6)
    r = mean_interval(a, samples=700, seed=3)
    assert (r.lo, r.hi) == bootstrap_ci(list(a.values()), samples=700, seed=3)
    assert r.method == "iid" and r.n == r.n_clusters == 57
    assert r.mean == pytest.approx(np.mean(list(a.values())))


def test_auto_uses_clusters_when_given() -> None:
    a, cl = _clustered(6, 3, 1.0, 1.0)
    assert mean_interval(a, cl).method == "cluster"
    assert mean_interval(a, cl).n_clusters == 6
    assert mean_interval(a, cl, method="iid").method == "iid"
    assert mean_interval(a).method == "iid"
    one = dict.fromkeys(cl, "same")
    assert mean_interval(a, one).method == "iid"  # one cluster: nothing to resample


def test_cluster_errors() -> None:
    a, cl = _clustered(4, 3, 1.0, 1.0)
    with pytest.raises(ValueError, match="needs cluster labels"):
        mean_interval(a, method="cluster")
    del cl[next(iter(cl))]
    with pytest.raises(ValueError, match="no cluster label for 1 episode"):
        mean_interval(a, cl)


def test_clustered_interval_wider_with_within_cluster_correlation() -> None:
    a, cl = _clustered(30, 10, 1.0, 0.1, seed=7)  # ICC ≈ 0.99, DEFF ≈ 10
    c, i = mean_interval(a, cl, samples=2000), mean_interval(a, cl, method="iid", samples=2000)
    assert c.mean == i.mean
    assert _width(c) > 2.5 * _width(i)  # about sqrt(DEFF) ≈ 3.1


def test_clustered_interval_matches_iid_on_independent_data() -> None:
    # the width ratio varies by about 0.05 between data sets (bootstrap and sampling error):
    # its mean over 5 data sets within 0.07 of 1 (about 3 standard errors), each within 0.15
    ratios = []
    for seed in range(5):
        a, cl = _clustered(600, 5, 0.0, 1.0, seed=10 + seed)  # no cluster effect
        c = mean_interval(a, cl, samples=2000, seed=seed)
        i = mean_interval(a, cl, method="iid", samples=2000, seed=seed)
        ratios.append(_width(c) / _width(i))
    assert abs(np.mean(ratios) - 1) < 0.07 and all(abs(r - 1) < 0.15 for r in ratios)


def test_interval_order_independent() -> None:
    a, cl = _clustered(20, 4, 1.0, 0.5, seed=8)
    shuffled = {k: a[k] for k in np.random.default_rng(1).permutation(list(a))}
    assert mean_interval(shuffled, cl) == mean_interval(a, cl)
    assert mean_interval({}).n == 0 and mean_interval({}).mean is None


# -- judge agreement -------------------------------------------------------------------------


def _marks(n: int, seed: int = 0, marks=(1, 2, 3, 4, 5)) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    k = len(marks)
    x = rng.integers(0, k, n)
    y = np.clip(x + rng.integers(-1, 3, n), 0, k - 1)  # judge b a little more generous
    ids = [f"ep{i:03d}" for i in range(n)]
    return (
        {e: marks[int(v)] for e, v in zip(ids, x, strict=True)},
        {e: marks[int(v)] for e, v in zip(ids, y, strict=True)},
    )


@pytest.mark.parametrize("weights", ["linear", "quadratic", None])
def test_kappa_equals_sklearn(weights) -> None:
    for seed in range(3):
        a, b = _marks(120, seed)
        x, y = list(a.values()), list(b.values())
        ours = weighted_kappa(x, y, weights=weights)
        ref = cohen_kappa_score(x, y, labels=[1, 2, 3, 4, 5], weights=weights)
        assert ours == pytest.approx(ref, abs=1e-12)


def test_kappa_on_sigma_marks_and_unused_marks() -> None:
    a, b = _marks(90, 4, marks=(0.0, 0.5, 1.0))
    x, y = list(a.values()), list(b.values())
    code = {0.0: 0, 0.5: 1, 1.0: 2}  # sklearn takes no fractional labels
    for w in ("linear", "quadratic"):
        ref = cohen_kappa_score([code[v] for v in x], [code[v] for v in y], weights=w)
        assert weighted_kappa(x, y, marks=(0.0, 0.5, 1.0), weights=w) == pytest.approx(ref)
    x, y = [2, 3, 3, 4, 2, 4], [2, 3, 4, 4, 3, 4]  # marks 1 and 5 unused
    ref = cohen_kappa_score(x, y, labels=[1, 2, 3, 4, 5], weights="linear")
    assert weighted_kappa(x, y) == pytest.approx(ref)
    assert weighted_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    with pytest.raises(ValueError, match="not among the marks"):
        weighted_kappa([1, 6], [1, 2])


def test_agreement_equals_scipy_and_finds_largest_disagreements() -> None:
    a, b = _marks(150, 5)
    b["ep007"], a["ep007"] = 5, 1  # the largest disagreement, by 4 marks
    b["extra"] = 3
    r = judge_agreement(a, b, top=3)
    x = np.array([a[k] for k in sorted(a)], dtype=float)
    y = np.array([b[k] for k in sorted(a)], dtype=float)
    rho, tau = sps.spearmanr(x, y), sps.kendalltau(x, y)
    assert r.n == 150
    assert (r.spearman, r.spearman_p) == pytest.approx((rho[0], rho[1]))
    assert (r.kendall, r.kendall_p) == pytest.approx((tau[0], tau[1]))
    assert r.kappa_linear == pytest.approx(cohen_kappa_score(x, y, weights="linear"))
    assert r.kappa_quadratic == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"))
    assert r.shift.delta == pytest.approx(np.mean(y - x)) and r.shift.lo < r.shift.delta
    assert r.shift.only_b == ("extra",) and r.shift.p_value < 1e-3
    assert r.largest[0] == ("ep007", 1.0, 5.0) and len(r.largest) == 3
    gaps = [abs(bb - aa) for _, aa, bb in r.largest]
    assert gaps == sorted(gaps, reverse=True)


def test_agreement_continuous_scores_and_constant_judge() -> None:
    a = _run(40)
    b = {k: 2 * v + 1 for k, v in a.items()}  # monotone: rank correlations 1
    r = judge_agreement(a, b, marks=None)
    assert r.spearman == pytest.approx(1) and r.kendall == pytest.approx(1)
    assert r.kappa_linear is None and r.kappa_quadratic is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = judge_agreement(dict.fromkeys(a, 3), dict.fromkeys(a, 3))
    assert math.isnan(c.spearman) and math.isnan(c.kendall) and math.isnan(c.kappa_linear)
    assert c.shift.delta == 0 and c.shift.p_value == 1


# -- power -----------------------------------------------------------------------------------


def test_sample_size_by_hand() -> None:
    # normal approximation: ((1.959964 + 0.841621) * 0.25 / 0.1)^2 = 49.06 -> 50; the paired
    # t-test needs a couple more (noncentral t): 52
    n0 = ((1.959963985 + 0.841621234) * 0.25 / 0.1) ** 2
    assert n0 == pytest.approx(49.056, abs=1e-3)
    assert episodes_needed(0.1, 0.25) == (52, 52)
    assert episodes_needed(-0.1, 0.25) == (52, 52)
    assert episodes_needed(0.1, 0.25, design_effect=2.5) == (130, 52)
    assert episodes_needed(0.05, 0.25)[1] == math.ceil(4 * n0) + 2  # 197 normal + 2 for t
    with pytest.raises(ValueError):
        episodes_needed(0.0, 0.25)


def test_simulated_power_at_that_n_is_about_080() -> None:
    n = episodes_needed(0.1, 0.25)[0]
    d = np.random.default_rng(11).normal(0.1, 0.25, (4000, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    power = np.mean(np.abs(t) > sps.t.ppf(0.975, n - 1))
    assert power == pytest.approx(0.80, abs=0.02)
    short = d[:, : n // 2]  # half the episodes: clearly underpowered
    t2 = short.mean(axis=1) / (short.std(axis=1, ddof=1) / math.sqrt(n // 2))
    assert np.mean(np.abs(t2) > sps.t.ppf(0.975, n // 2 - 1)) < 0.6


def test_simulated_power_with_clusters() -> None:
    icc, m, sd, delta = 0.3, 5, 0.25, 0.1
    n = episodes_needed(delta, sd, design_effect=1 + (m - 1) * icc)[0]
    k = math.ceil(n / m)  # scenes of m questions, analysed by cluster means
    rng = np.random.default_rng(12)
    u = rng.normal(0, sd * math.sqrt(icc), (4000, k, 1))
    e = rng.normal(0, sd * math.sqrt(1 - icc), (4000, k, m))
    cm = (delta + u + e).mean(axis=2)
    t = cm.mean(axis=1) / (cm.std(axis=1, ddof=1) / math.sqrt(k))
    assert np.mean(np.abs(t) > sps.t.ppf(0.975, k - 1)) == pytest.approx(0.8, abs=0.04)


def test_icc_by_hand_and_estimated() -> None:
    # clusters {1,2,3} and {4,5,6}: MSB = 13.5, MSW = 1, m0 = 3 -> (13.5-1)/(13.5+2)
    vals = {f"e{i}": float(i) for i in range(1, 7)}
    cl = {f"e{i}": "A" if i <= 3 else "B" for i in range(1, 7)}
    assert icc_oneway(vals, cl) == pytest.approx(12.5 / 15.5)
    a, c = _clustered(200, 6, 1.0, 1.0, seed=13)  # true ICC 0.5
    assert icc_oneway(a, c) == pytest.approx(0.5, abs=0.08)
    assert math.isnan(icc_oneway(vals, dict.fromkeys(vals, "one")))


def test_power_analysis_from_runs() -> None:
    a, cl = _clustered(100, 4, 0.0, 0.2, seed=14)
    p = power_analysis(a, 0.05, correlation=0.5)  # sd_diff = sd * sqrt(2 * 0.5) = sd
    sd = float(np.std(list(a.values()), ddof=1))
    assert p.sd_diff == pytest.approx(sd) and p.design_effect == 1 and p.icc is None
    assert p.n_episodes == episodes_needed(0.05, sd)[0]
    b = {k: v + 0.3 * (int(cl[k][-3:]) % 2) for k, v in a.items()}  # differences by scene
    q = power_analysis(a, 0.05, cl, other=b)
    diffs = np.array([b[k] - a[k] for k in sorted(a)])
    assert q.sd_diff == pytest.approx(np.std(diffs, ddof=1))
    assert q.icc > 0.9 and q.cluster_size == 4
    assert q.design_effect == pytest.approx(1 + 3 * q.icc)
    assert q.n_episodes == math.ceil(q.n_independent * q.design_effect - 1e-9)
