"""Metric plugin bases: a metric is a pure function of per-task outcomes.

Two kinds, two base classes; the metrics registry takes subclasses of either and nothing
else:

* ``CodeMetric`` (pass@k, avg@k): ``compute(outcomes, k)`` over each task's sample verdicts,
  used by ``codea1 evaluate``;
* ``TestMetric`` (test-pass@k, mut@k, coverage@k, Mul): ``compute(records, k, task_set,
  largest_k)`` over ``TaskRecord``s, used by ``codea1 evaluate-tests``.

The formulas themselves live in ``codea1.harness.formulas``; a metric names one and says
how it is labelled.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from codea1.harness.formulas import MetricValue
from codea1.harness.records import TaskRecord

__all__ = ["Metric", "CodeMetric", "TestMetric", "MetricValue", "in_order"]


class Metric:
    """Common to both kinds: ``name`` (e.g. "pass@k"), ``description``, and the label of
    the figure for one k."""

    name = ""
    description = ""
    # Where the figure is printed among the others of its kind (lower first; ties by name):
    # the paper's headline figures first, a third-party metric after the built-in ones.
    order = 100
    # True: computed once, at k = n (the samples a task has, the paper's avg@32 with n = 32),
    # instead of at each --k.
    at_n = False

    def label(self, k: int) -> str:
        return self.name.replace("@k", f"@{k}")


def in_order(plugins, kind: type) -> list[Metric]:
    """The metric plugins of ``kind`` (CodeMetric, TestMetric), created, in printing order."""
    made = [plugins.metrics.create(name) for name in plugins.metrics.of_type(kind)]
    return sorted(made, key=lambda m: (m.order, m.name))


class CodeMetric(Metric):
    def compute(self, outcomes: Mapping[str, Sequence[bool]], k: int) -> MetricValue:
        """``outcomes`` maps task id to the pass/fail of its samples, in sample order
        (skipped samples and sandbox errors already removed). Pure; k comes from ``--k``."""
        raise NotImplementedError


class TestMetric(Metric):
    __test__ = False  # "Test" as in test LLM: not a pytest class

    def compute(self, records: Mapping[str, TaskRecord], k: int, task_set: str = "per-k",
                largest_k: int | None = None) -> MetricValue:
        """``records`` maps task id to its ``TaskRecord``; ``task_set`` "largest-k" makes
        every k use the task set of ``largest_k``, the run's largest k (the reference
        evaluation fork's quirk; metrics without a task set ignore it). Pure."""
        raise NotImplementedError
