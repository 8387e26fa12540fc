"""Metric ``avg@k``: mean pass rate of each task's first k samples, averaged over tasks
(the paper reports avg@32). Undefined (None) when a task has fewer than k samples."""

from __future__ import annotations

from codea1.harness.formulas import avg_at_k, mean_over_tasks
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import CodeMetric


class AvgAtK(CodeMetric):
    name = "avg@k"
    description = "mean pass rate of the first k samples, mean over tasks"

    def compute(self, outcomes, k):
        return mean_over_tasks(outcomes, k, lambda o: avg_at_k(o, k))


@hookimpl
def codea1_register_metrics(registry):
    registry.add(AvgAtK)
