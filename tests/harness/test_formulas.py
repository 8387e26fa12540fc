"""pass@k and avg@k against hand-computed values."""

from math import comb

import pytest

from codea1.harness.formulas import avg_at_k, pass_at_k


@pytest.mark.parametrize("n,c,k,expected", [
    (10, 3, 1, 0.3),                       # the estimator's known value: c/n at k=1
    (10, 0, 1, 0.0),
    (10, 10, 1, 1.0),
    (10, 3, 2, 1 - comb(7, 2) / comb(10, 2)),  # 1 - 21/45 = 0.5333...
    (5, 1, 5, 1.0),                        # n - c < k: some draw must contain the correct one
    (4, 2, 3, 1.0),
    (200, 13, 10, 1 - comb(187, 10) / comb(200, 10)),
    (1, 1, 1, 1.0),
])
def test_pass_at_k_matches_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_hand_worked_fraction():
    # n=4, c=1, k=2: P(no correct in 2 draws) = C(3,2)/C(4,2) = 3/6 -> pass@2 = 0.5
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)


def test_pass_at_k_stays_exact_for_large_n():
    n, c, k = 5000, 50, 100
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), rel=1e-9)


@pytest.mark.parametrize("n,c,k", [(3, 1, 5), (0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 1, 0)])
def test_pass_at_k_rejects_undefined_inputs(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_avg_at_k_uses_the_first_k_samples():
    assert avg_at_k([True, False, True, True], 2) == 0.5
    assert avg_at_k([True, False, True, True], 4) == 0.75
    assert avg_at_k([False] * 32, 32) == 0.0
    with pytest.raises(ValueError):
        avg_at_k([True], 2)
