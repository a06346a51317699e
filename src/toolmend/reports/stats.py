"""Paired comparison of two runs: Δ with a bootstrap confidence interval, and a paired test.

Both runs are scored per sample, so where they share ids the comparison is *paired*: the
bootstrap resamples sample ids (the same draw for both runs) and the test looks only at the
per-sample differences. Runs without shared ids fall back to resampling each run on its own.

>>> ci = bootstrap_ci([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], seed=0)
>>> ci.delta, ci.paired, ci.low <= ci.delta <= ci.high
(-0.5, True, True)

The headline test: for 0/1 scores, the exact McNemar test (a two-sided binomial test on the
discordant pairs: only samples that flipped carry information about a difference in accuracy,
and the exact form stays valid when there are few of them); for graded scores, a paired
sign-flip permutation test on the per-sample differences (exact up to 2^16 sign patterns,
otherwise 10,000 seeded random ones), which assumes nothing about their distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolmend.errors import ConfigError

__all__ = ["DeltaCI", "PairedTest", "bootstrap_ci", "paired_test"]

_RESAMPLES = 2000


@dataclass(frozen=True)
class DeltaCI:
    """``mean(b) - mean(a)`` and its percentile-bootstrap interval (same scale as the inputs)."""

    delta: float
    low: float
    high: float
    n: int
    """Pairs (paired) or the smaller run's size (unpaired)."""
    paired: bool
    level: float = 0.95


@dataclass(frozen=True)
class PairedTest:
    """A paired test of ``b`` against ``a`` on one metric."""

    name: str
    """``"McNemar (exact)"`` or ``"sign-flip permutation"``."""
    p_value: float
    n: int
    a_only: int = 0
    """Samples right in ``a`` and wrong in ``b`` (McNemar's discordant pairs)."""
    b_only: int = 0
    exact: bool = True


def bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    paired: bool = True,
    level: float = 0.95,
    resamples: int = _RESAMPLES,
    seed: int = 0,
) -> DeltaCI:
    """Percentile bootstrap interval of ``mean(b) - mean(a)``.

    ``paired=True``: ``a[i]`` and ``b[i]`` are the same sample (equal lengths); one index draw
    resamples both, so per-sample difficulty cancels. ``paired=False``: each run is resampled on
    its own. Seeded: the same inputs always give the same interval.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ConfigError("bootstrap_ci needs at least one value in each run")
    rng = np.random.default_rng(seed)
    alpha = (1.0 - level) / 2
    if paired:
        if len(x) != len(y):
            raise ConfigError(f"paired samples differ in length: {len(x)} and {len(y)}")
        d = y - x
        means = _resampled_means(d, resamples, rng)
        delta, n = float(d.mean()), len(d)
    else:
        means = _resampled_means(y, resamples, rng) - _resampled_means(x, resamples, rng)
        delta, n = float(y.mean() - x.mean()), min(len(x), len(y))
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return DeltaCI(delta=delta, low=float(low), high=float(high), n=n, paired=paired, level=level)


def _resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    # In batches so that 20,000 samples x 2,000 resamples never holds more than ~32 MB of indices.
    n = len(values)
    batch = max(1, 4_000_000 // n)
    out = np.empty(resamples)
    for start in range(0, resamples, batch):
        stop = min(resamples, start + batch)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def paired_test(a: Sequence[float], b: Sequence[float], *, seed: int = 0) -> PairedTest:
    """Exact McNemar for 0/1 scores, a sign-flip permutation test otherwise (see the module
    docstring). Two-sided.

    >>> paired_test([1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0]).p_value   # 6 of 6 flips one way: 2 / 2^6
    0.03125
    """
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) != len(y):
        raise ConfigError(f"paired samples differ in length: {len(x)} and {len(y)}")
    binary = bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    if binary:
        a_only = int(((x == 1) & (y == 0)).sum())
        b_only = int(((x == 0) & (y == 1)).sum())
        discordant = a_only + b_only
        p = 1.0 if discordant == 0 else float(stats.binomtest(b_only, discordant, 0.5).pvalue)
        return PairedTest("McNemar (exact)", min(1.0, p), len(x), a_only=a_only, b_only=b_only)
    d = y - x
    nonzero = d[d != 0]
    if len(nonzero) == 0:
        return PairedTest("sign-flip permutation", 1.0, len(x))
    exact = len(nonzero) <= 16
    res = stats.permutation_test(
        (nonzero,),
        np.mean,
        permutation_type="samples",
        n_resamples=np.inf if exact else 10_000,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return PairedTest("sign-flip permutation", float(res.pvalue), len(x), exact=exact)
