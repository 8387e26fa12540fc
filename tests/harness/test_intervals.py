"""The intervals and paired differences every figure carries (harness.intervals), against
hand-worked figures."""

from __future__ import annotations

import math

import pytest

from codea1.harness.formulas import MetricValue, mul_at_k
from codea1.harness.intervals import bootstrap, mean_interval, metric_interval, paired, percentile
from codea1.harness.records import TaskRecord


def test_percentile_interpolates_between_ranks():
    assert percentile([0, 10, 20, 30], 50) == 15
    assert percentile([0, 10, 20, 30], 0) == 0 and percentile([0, 10, 20, 30], 100) == 30
    assert percentile([1.0], 97.5) == 1.0


def test_the_mean_interval_is_the_bootstrap_of_the_mean():
    figures = {f"t{i}": (i % 3) / 2 for i in range(40)}
    fast = mean_interval(figures)
    slow = bootstrap(lambda units: math.fsum(units.values()) / len(units), figures)
    assert fast == pytest.approx(slow, abs=1e-12)
    assert mean_interval(figures) == fast  # the recorded seed: the same figures, the same interval


def test_a_pass_rate_interval_matches_the_normal_approximation():
    """Hand-worked: 164 tasks, 115 passed (70.1 %): the standard error is
    sqrt(p (1 - p) / n) = 3.57 points, so the 95 % interval is about 70.1 +- 7.0."""
    figures = {f"HumanEval/{i}": float(i < 115) for i in range(164)}
    low, high = mean_interval(figures)
    p = 115 / 164
    half = 1.959964 * math.sqrt(p * (1 - p) / 164)
    assert abs(low - (p - half)) < 0.012 and abs(high - (p + half)) < 0.012
    assert 0.06 < half < 0.08


def test_a_paired_difference_against_a_hand_worked_figure():
    """Two runs over 40 tasks: the same on 28, run a better on 10, worse on 2: the mean
    difference is 8 / 40 = 20 points; the differences' standard deviation is
    sqrt(12/40 - 0.2^2) = 0.51, the error 0.51 / sqrt(40) = 8.1 points, the interval
    about 20 +- 15.8: significant. Unpaired, the two runs' own intervals overlap."""
    base = {f"t{i}": float(i < 20) for i in range(40)}
    mine = dict(base)
    for i in range(20, 30):
        mine[f"t{i}"] = 1.0  # won
    for i in range(2):
        mine[f"t{i}"] = 0.0  # lost
    pair = paired(mine, base)
    assert pair["difference"] == pytest.approx(0.2) and pair["tasks"] == 40
    error = math.sqrt(12 / 40 - 0.2 ** 2) / math.sqrt(40)
    low, high = pair["interval"]
    assert abs(low - (0.2 - 1.959964 * error)) < 0.03 and abs(high - (0.2 + 1.959964 * error)) < 0.03
    assert pair["significant"]
    a, b = mean_interval(mine), mean_interval(base)
    assert a[0] <= b[1]  # the runs' own intervals overlap: only the pairing tells them apart
    one_task = paired({**base, "t35": 1.0}, base)
    assert one_task["difference"] == pytest.approx(1 / 40) and not one_task["significant"]


def test_a_figure_over_one_task_has_no_interval():
    records = {f"t{i}": TaskRecord(task_id=f"t{i}", tests=["a"] * 5, valid=[i == 0] * 5, reasons=[""] * 5)
               for i in range(10)}
    records["t0"].mutants = [{"id": "m0", "status": "done", "first_fail": 0, "first_timeout": None, "diff": ""}]
    value = mul_at_k(records, 5)
    assert value.task_count == 1 and value.note == "test-pass@5 over 10 tasks x mut@5 over 1 of them"
    assert metric_interval(lambda units: mul_at_k(units, 5), records) is None
    assert metric_interval(lambda units: MetricValue(1.0, {"only": 1.0}), {"only": 1}) is None
