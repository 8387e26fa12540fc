"""Pure estimators (no I/O), shared by evaluation metrics and training rewards."""

from __future__ import annotations

from typing import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021).

    Computed as a running product, which stays exact enough for n in the thousands where the
    binomials overflow floats. Requires 0 <= c <= n and 1 <= k <= n.
    """
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"pass@{k} needs at least k={k} samples, got n={n}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def avg_at_k(outcomes: Sequence[bool], k: int) -> float:
    """Mean pass rate of the first k samples of one problem (pass@1 with n = k)."""
    if k < 1 or len(outcomes) < k:
        raise ValueError(f"avg@{k} needs at least k={k} samples, got {len(outcomes)}")
    return sum(bool(x) for x in outcomes[:k]) / k
