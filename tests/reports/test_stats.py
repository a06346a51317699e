"""The paired bootstrap and the paired tests, checked by hand and against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from toolmend.errors import ConfigError
from toolmend.reports.stats import bootstrap_ci, paired_test


def test_bootstrap_ci_hand_computed_cases() -> None:
    # Every pair differs by the same 0.25: every resample has mean 0.25, so the interval is a point.
    ci = bootstrap_ci([0.5, 0.25, 0.0], [0.75, 0.5, 0.25], seed=3)
    assert (ci.delta, ci.low, ci.high, ci.n, ci.paired) == (0.25, 0.25, 0.25, 3, True)
    # Differences (0, 1): a resample of two has mean 0 (p=1/4), 0.5 (1/2) or 1 (1/4); the 2.5 % and
    # 97.5 % quantiles of that distribution are 0 and 1.
    ci = bootstrap_ci([1.0, 0.0], [1.0, 1.0], seed=0)
    assert (ci.delta, ci.low, ci.high) == (0.5, 0.0, 1.0)


def test_bootstrap_ci_matches_scipy_on_the_same_draws() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(60)
    b = np.clip(a + rng.normal(0.05, 0.2, 60), 0, 1)
    ours = bootstrap_ci(a, b, seed=11, resamples=3000)
    ref = stats.bootstrap(
        (b - a,), np.mean, method="percentile", n_resamples=3000, rng=np.random.default_rng(11)
    ).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=1e-12) and ours.high == pytest.approx(ref.high, abs=1e-12)
    # Seeded: the same inputs give the same interval; another seed moves it only by Monte Carlo noise.
    assert bootstrap_ci(a, b, seed=11, resamples=3000) == ours
    other = bootstrap_ci(a, b, seed=12, resamples=3000)
    assert other.low == pytest.approx(ours.low, abs=0.01)


def test_unpaired_bootstrap_resamples_each_run() -> None:
    ci = bootstrap_ci([0.0, 0.0, 0.0], [1.0, 1.0], paired=False)
    assert (ci.delta, ci.low, ci.high, ci.paired) == (1.0, 1.0, 1.0, False)
    with pytest.raises(ConfigError, match="differ in length"):
        bootstrap_ci([0.0], [1.0, 1.0])


def test_mcnemar_exact_is_a_binomial_test_on_discordant_pairs() -> None:
    a = [1, 1, 1, 1, 0, 0, 1, 0, 1, 1]
    b = [0, 0, 0, 1, 1, 0, 1, 0, 0, 1]
    t = paired_test(a, b)
    assert (t.name, t.a_only, t.b_only) == ("McNemar (exact)", 4, 1)
    # Hand: P(X<=1 | n=5, p=1/2) = 6/32, two-sided doubles it.
    assert t.p_value == pytest.approx(12 / 32)
    assert paired_test([1, 0], [1, 0]).p_value == 1.0


def test_sign_flip_permutation_exact_by_enumeration() -> None:
    d = np.array([0.5, 0.25, -0.125, 0.75, 0.5])
    a = np.full(5, 0.2)
    t = paired_test(a, a + d)
    # Enumerate all 2^5 sign patterns: p = share with |mean| >= observed.
    signs = np.array(np.meshgrid(*[[-1, 1]] * 5)).reshape(5, -1).T
    means = np.abs((signs * d).mean(axis=1))
    expected = (means >= abs(d.mean()) - 1e-12).mean()
    assert t.name == "sign-flip permutation" and t.exact and t.p_value == pytest.approx(expected)
