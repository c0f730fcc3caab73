"""Paired differences, clustered intervals, judge agreement and power over per-episode values.

Pure functions over ``episode_id -> value`` mappings and optional ``episode_id -> cluster``
labels (the records' scene: an episode history or an HM3D scene). Every result is deterministic
for a seed and independent of input order. Methods and formulas: docs/statistics.md.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from eqa_runner.scoring.resample import resampled_means

Method = Literal["auto", "cluster", "iid"]
Values = Mapping[str, float]
Clusters = Mapping[str, Hashable]


@dataclass(frozen=True)
class Interval:
    """A mean with a percentile bootstrap interval; ``method`` is ``"cluster"`` or ``"iid"``."""

    mean: float | None
    lo: float | None
    hi: float | None
    n: int
    n_clusters: int
    method: str
    level: float
    samples: int


@dataclass(frozen=True)
class PairedDiff:
    """Δ = mean(b − a) over common episodes, its interval and a two-sided sign-flip p-value.

    ``p_method`` is ``"exact"`` (all sign patterns) or ``"monte-carlo"``; ``only_a``/``only_b``
    are the sorted ids scored by one run only (not used in any number here).
    """

    delta: float | None
    lo: float | None
    hi: float | None
    p_value: float | None
    n: int
    n_clusters: int
    method: str
    p_method: str
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    level: float
    samples: int


@dataclass(frozen=True)
class Agreement:
    """Agreement between two judges on their common episodes (b − a for the shift)."""

    n: int
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float
    kappa_linear: float | None
    kappa_quadratic: float | None
    shift: PairedDiff
    largest: tuple[tuple[str, float, float], ...]  # (episode_id, a, b), largest |b − a| first


@dataclass(frozen=True)
class Power:
    """Episodes needed for a paired comparison to detect ``delta``; formula in `episodes_needed`."""

    n_episodes: int
    n_independent: int
    delta: float
    sd_diff: float
    icc: float | None
    cluster_size: float
    design_effect: float
    alpha: float
    power: float


# -- units: episodes or whole clusters -------------------------------------------------------


def _groups(values: Values, clusters: Clusters) -> dict[Hashable, list[float]]:
    """Values by cluster label, each group in episode-id order; every episode needs a label."""
    missing = sorted(k for k in values if k not in clusters)
    if missing:
        raise ValueError(f"no cluster label for {len(missing)} episode(s), e.g. {missing[:3]}")
    groups: dict[Hashable, list[float]] = defaultdict(list)
    for k in sorted(values):
        groups[clusters[k]].append(float(values[k]))
    return groups


def _units(
    values: Mapping[str, float], clusters: Clusters | None, method: Method
) -> tuple[np.ndarray, np.ndarray, str]:
    """(sums, sizes, method): one unit per cluster (or episode), sorted by (sum, size).

    Sums are exact (``math.fsum``) and units sorted by value, so neither the input order nor
    the cluster names change any result. With one episode per unit this is the sorted values,
    so the i.i.d. interval equals ``aggregate.bootstrap_ci`` for the same seed.
    """
    if method not in ("auto", "cluster", "iid"):
        raise ValueError(f"method must be auto, cluster or iid, not {method!r}")
    use = method == "cluster" or (method == "auto" and clusters is not None)
    if use and clusters is None:
        raise ValueError("method='cluster' needs cluster labels")
    if not use or clusters is None:
        x = np.sort(np.asarray(list(values.values()), dtype=float))
        return x, np.ones_like(x), "iid"
    groups = _groups(values, clusters)
    if method == "auto" and len(groups) < 2:
        x = np.sort(np.asarray(list(values.values()), dtype=float))
        return x, np.ones_like(x), "iid"
    sums = np.array([math.fsum(g) for g in groups.values()], dtype=float)
    sizes = np.array([len(g) for g in groups.values()], dtype=float)
    order = np.lexsort((sizes, sums))
    return sums[order], sizes[order], "cluster"


def _bootstrap(
    sums: np.ndarray, sizes: np.ndarray, samples: int, seed: int, level: float
) -> tuple[float, float]:
    """Percentile interval of Σsums/Σsizes over units resampled with replacement."""
    k = sums.size
    mean = float(sums.sum() / sizes.sum())
    if k == 1 or samples <= 0:
        return mean, mean
    # one episode a unit: the same arithmetic as aggregate.bootstrap_ci
    means = resampled_means(
        sums, None if np.all(sizes == 1) else sizes, samples, np.random.default_rng(seed)
    )
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def mean_interval(
    values: Values,
    clusters: Clusters | None = None,
    *,
    method: Method = "auto",
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Mean of one run with a percentile bootstrap interval.

    ``method="auto"`` resamples whole clusters when labels are given (and there are at least
    two clusters), else episodes; ``"iid"`` always resamples episodes; ``"cluster"`` requires
    labels. The mean itself does not depend on the method.
    """
    if not values:
        return Interval(None, None, None, 0, 0, "iid", level, samples)
    sums, sizes, used = _units(values, clusters, method)
    lo, hi = _bootstrap(sums, sizes, samples, seed, level)
    mean = math.fsum(float(v) for v in values.values()) / len(values)  # order-independent
    return Interval(mean, lo, hi, len(values), sums.size, used, level, samples)


# -- paired differences ----------------------------------------------------------------------


def sign_flip_p(
    sums: np.ndarray, *, permutations: int = 10000, seed: int = 0, exact_max: int = 16
) -> tuple[float, str]:
    """Two-sided p-value of H0 "differences symmetric about 0", flipping whole units.

    T = |Σ s_u·D_u| over sign vectors s ∈ {±1}^k (D_u: a unit's summed differences). Exact
    (all 2^k patterns) when k ≤ ``exact_max``; otherwise Monte-Carlo with the +1 correction,
    p = (1 + #{T* ≥ T}) / (1 + B). All-zero differences give p = 1.
    """
    d = np.asarray(sums, dtype=float)
    k = d.size
    if k == 0:
        return 1.0, "exact"
    t_obs = abs(d.sum())
    tol = 1e-9 * max(float(np.abs(d).sum()), 1e-300)
    if k <= exact_max:
        bits = (np.arange(2**k)[:, None] >> np.arange(k)) & 1
        t = np.abs((1 - 2 * bits) @ d)
        return float(np.mean(t >= t_obs - tol)), "exact"
    rng = np.random.default_rng([seed, 1])
    hits, done = 0, 0
    while done < permutations:
        rows = min(1000, permutations - done)
        signs = np.where(rng.random((rows, k)) < 0.5, -1.0, 1.0)
        hits += int(np.sum(np.abs(signs @ d) >= t_obs - tol))
        done += rows
    return (1 + hits) / (1 + permutations), "monte-carlo"


def paired_difference(
    a: Values,
    b: Values,
    clusters: Clusters | None = None,
    *,
    method: Method = "auto",
    samples: int = 1000,
    permutations: int = 10000,
    exact_max: int = 16,
    seed: int = 0,
    level: float = 0.95,
) -> PairedDiff:
    """Δ = mean(b − a) over the episodes both runs scored.

    The interval resamples episodes (or whole clusters) of the per-episode differences; the
    p-value is the sign-flip test of `sign_flip_p` on the same units. Episodes in one run only
    are returned in ``only_a``/``only_b`` and left out of every number.
    """
    common = sorted(set(a) & set(b))
    only_a = tuple(sorted(set(a) - set(b)))
    only_b = tuple(sorted(set(b) - set(a)))
    if not common:
        return PairedDiff(
            None, None, None, None, 0, 0, "iid", "exact", only_a, only_b, level, samples
        )
    diff = {k: float(b[k]) - float(a[k]) for k in common}
    sums, sizes, used = _units(diff, clusters, method)
    lo, hi = _bootstrap(sums, sizes, samples, seed, level)
    p, p_method = sign_flip_p(sums, permutations=permutations, seed=seed, exact_max=exact_max)
    delta = math.fsum(diff.values()) / len(diff)
    return PairedDiff(
        delta, lo, hi, p, len(common), sums.size, used, p_method, only_a, only_b, level, samples
    )


# -- judge agreement -------------------------------------------------------------------------


def weighted_kappa(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    marks: Sequence[float] = (1, 2, 3, 4, 5),
    weights: Literal["linear", "quadratic"] | None = "linear",
) -> float:
    """Cohen's (weighted) kappa of two raters over the ordered categories ``marks``.

    κ_w = 1 − Σ w_ij·O_ij / Σ w_ij·E_ij, with O the observed joint proportions, E the outer
    product of the marginals, and w_ij = |i − j| (linear), (i − j)² (quadratic) or 1[i ≠ j]
    (None, unweighted). NaN when both raters use a single, identical mark (as sklearn).
    """
    index = {float(m): i for i, m in enumerate(marks)}
    bad = sorted({float(v) for v in (*a, *b)} - set(index))
    if bad:
        raise ValueError(f"values {bad[:5]} are not among the marks {list(marks)}")
    if len(a) != len(b):
        raise ValueError("the two raters must score the same items")
    k = len(marks)
    o = np.zeros((k, k))
    np.add.at(o, ([index[float(v)] for v in a], [index[float(v)] for v in b]), 1.0)
    o /= max(o.sum(), 1.0)
    e = np.outer(o.sum(axis=1), o.sum(axis=0))
    i, j = np.indices((k, k))
    w = {"linear": np.abs(i - j), "quadratic": (i - j) ** 2, None: (i != j)}[weights]
    den = float((w * e).sum())
    return float("nan") if den == 0 else 1.0 - float((w * o).sum()) / den


def _corr(fn: Callable[..., Any], x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if x.size < 2:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN, as scipy returns
        res = fn(x, y)
    return float(res[0]), float(res[1])


def judge_agreement(
    a: Values,
    b: Values,
    clusters: Clusters | None = None,
    *,
    marks: Sequence[float] | None = (1, 2, 3, 4, 5),
    top: int = 10,
    method: Method = "auto",
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Agreement:
    """Spearman ρ, Kendall τ-b, weighted κ, mean shift and top disagreements of judges a, b.

    Uses the episodes both judges scored (the shift's ``only_a``/``only_b`` name the rest).
    κ is computed only when ``marks`` is given (e.g. 1–5 for LLM-match or EAC δ, (0, 0.5, 1)
    for EAC σ); a value outside ``marks`` raises ValueError.
    """
    common = sorted(set(a) & set(b))
    x = np.array([float(a[k]) for k in common])
    y = np.array([float(b[k]) for k in common])
    rho, rho_p = _corr(sps.spearmanr, x, y)
    tau, tau_p = _corr(sps.kendalltau, x, y)
    kl = kq = None
    if marks is not None:
        kl = weighted_kappa(x, y, marks=marks, weights="linear")
        kq = weighted_kappa(x, y, marks=marks, weights="quadratic")
    shift = paired_difference(
        a, b, clusters, method=method, samples=samples, seed=seed, level=level
    )
    order = sorted(range(len(common)), key=lambda i: (-abs(y[i] - x[i]), common[i]))[:top]
    largest = tuple((common[i], float(x[i]), float(y[i])) for i in order)
    return Agreement(len(common), rho, rho_p, tau, tau_p, kl, kq, shift, largest)


# -- power -----------------------------------------------------------------------------------


def icc_oneway(values: Values, clusters: Clusters) -> float:
    """Intraclass correlation ICC(1) from a one-way ANOVA of ``values`` by cluster.

    ICC = (MSB − MSW) / (MSB + (m₀ − 1)·MSW), m₀ = (N − Σm_k²/N)/(K − 1) (unequal sizes).
    May be negative; NaN when undefined (fewer than 2 clusters, no within-cluster replicate,
    or no variance at all).
    """
    groups = _groups(values, clusters)
    n, k = len(values), len(groups)
    if k < 2 or n <= k:
        return float("nan")
    grand = math.fsum(float(v) for v in values.values()) / n
    sizes = np.array([len(g) for g in groups.values()], dtype=float)
    means = np.array([math.fsum(g) / len(g) for g in groups.values()])
    ssb = float((sizes * (means - grand) ** 2).sum())
    ssw = math.fsum((v - m) ** 2 for g, m in zip(groups.values(), means, strict=True) for v in g)
    msb, msw = ssb / (k - 1), ssw / (n - k)
    m0 = (n - float((sizes**2).sum()) / n) / (k - 1)
    den = msb + (m0 - 1) * msw
    return float("nan") if den == 0 else (msb - msw) / den


def episodes_needed(
    delta: float,
    sd_diff: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    design_effect: float = 1.0,
) -> tuple[int, int]:
    """(episodes, independent episodes) for a two-sided paired test of a mean difference.

    Normal approximation: n₀ = ((z₁₋α/₂ + z_power) · σ_d / D)². It is refined to the smallest
    n whose paired t-test reaches ``power`` (noncentral t with n − 1 degrees of freedom and
    noncentrality D·√n/σ_d), then inflated by the design effect: episodes = ⌈n · DEFF⌉.
    """
    if delta == 0 or sd_diff <= 0:
        raise ValueError("need delta != 0 and sd_diff > 0")
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    n = max(2, math.ceil((z * sd_diff / abs(delta)) ** 2))
    for _ in range(1000):  # the t correction adds a few episodes (about z²₁₋α/₂ / 2)
        crit = sps.t.ppf(1 - alpha / 2, n - 1)
        nc = abs(delta) * math.sqrt(n) / sd_diff
        achieved = sps.nct.sf(crit, n - 1, nc) + sps.nct.cdf(-crit, n - 1, nc)
        if not math.isfinite(achieved) or achieved >= power:  # not finite: nc is huge
            break
        n += 1
    return math.ceil(n * design_effect - 1e-9), n


def power_analysis(
    values: Values,
    delta: float,
    clusters: Clusters | None = None,
    *,
    other: Values | None = None,
    correlation: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
) -> Power:
    """Episodes needed to detect ``delta`` in a paired comparison, from an observed run.

    σ_d is the SD of the per-episode differences ``other − values`` when ``other`` is given,
    else σ·√(2(1 − ρ)) from the run's SD σ and the assumed between-run ``correlation`` ρ. With
    clusters, DEFF = 1 + (m − 1)·max(ICC, 0), ICC from `icc_oneway` of the same quantity and
    m = Σm_k²/N (the mean size of an episode's cluster; m̄ when sizes are equal), assuming
    future runs keep this cluster size.
    """
    data: dict[str, float] = dict(values)
    if other is not None:
        data = {k: float(other[k]) - float(values[k]) for k in sorted(set(values) & set(other))}
    x = np.array([data[k] for k in sorted(data)], dtype=float)
    if x.size < 2:
        raise ValueError("need at least 2 episodes to estimate a standard deviation")
    sd = float(np.std(x, ddof=1))
    sd_diff = sd if other is not None else sd * math.sqrt(2 * (1 - correlation))
    icc, m, deff = None, 1.0, 1.0
    if clusters is not None:
        r = icc_oneway(data, clusters)
        sizes = np.array([len(g) for g in _groups(data, clusters).values()], dtype=float)
        m = float((sizes**2).sum() / sizes.sum())
        icc = None if math.isnan(r) else r
        deff = 1.0 + (m - 1.0) * max(icc or 0.0, 0.0)
    n, n0 = episodes_needed(delta, sd_diff, alpha=alpha, power=power, design_effect=deff)
    return Power(n, n0, delta, sd_diff, icc, m, deff, alpha, power)
