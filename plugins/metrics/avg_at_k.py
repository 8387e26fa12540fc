"""Metric ``avg@k``: mean pass rate of each task's first k samples, averaged over tasks
(the paper reports avg@32). Undefined (None) when a task has fewer than k samples."""

from __future__ import annotations

from harness.estimators import avg_at_k
from harness.hookspecs import hookimpl
from harness.metrics import Metric, MetricValue, tasks_short_of


class AvgAtK(Metric):
    name = "avg@k"
    description = "mean pass rate of the first k samples, mean over tasks"

    def compute(self, outcomes, k):
        outcomes = {t: o for t, o in outcomes.items() if len(o)}
        if not outcomes:
            return MetricValue(None, note="no judged sample")
        short = tasks_short_of(outcomes, k)
        if short:
            return MetricValue(None, note=f"{len(short)} task(s) have fewer than {k} samples, e.g. {short[0]}")
        per_task = {t: avg_at_k(o, k) for t, o in outcomes.items()}
        return MetricValue(sum(per_task.values()) / len(per_task), per_task)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(AvgAtK)
