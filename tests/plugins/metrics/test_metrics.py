"""The metric plugins: per-task aggregation, n < k handling, skipped tasks."""

import pytest


def test_pass_at_k_is_the_mean_over_tasks(plugins):
    metric = plugins.metrics.create("pass@k")
    value = metric.compute({"a": [True, False, False, False], "b": [True, True, True, True]}, 1)
    assert value.value == pytest.approx((0.25 + 1.0) / 2)
    assert value.per_task == {"a": 0.25, "b": 1.0}
    assert metric.label(10) == "pass@10"


def test_pass_at_k_hand_values(plugins):
    # task a: n=4, c=1, k=2 -> 0.5 ; task b: n=4, c=0 -> 0 ; mean 0.25
    value = plugins.metrics.create("pass@k").compute({"a": [False, True, False, False], "b": [False] * 4}, 2)
    assert value.value == pytest.approx(0.25)


def test_n_smaller_than_k_makes_the_metric_undefined_not_wrong(plugins):
    for name in ("pass@k", "avg@k"):
        value = plugins.metrics.create(name).compute({"a": [True] * 10, "b": [True] * 3}, 5)
        assert value.value is None
        assert "fewer than 5 samples" in value.note and "b" in value.note


def test_avg_at_k_reads_only_the_first_k(plugins):
    value = plugins.metrics.create("avg@k").compute({"a": [True, True, False, False], "b": [False, True, True, True]}, 2)
    assert value.value == pytest.approx((1.0 + 0.5) / 2)


def test_tasks_without_judged_samples_are_left_out(plugins):
    value = plugins.metrics.create("pass@k").compute({"a": [True], "skipped": []}, 1)
    assert value.value == 1.0 and list(value.per_task) == ["a"]
    assert plugins.metrics.create("avg@k").compute({}, 1).value is None
