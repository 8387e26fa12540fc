"""Metric ``avg@k``: mean pass rate of each task's first k samples, averaged over tasks.

Computed at k = n, the samples each task has (the paper's avg@32 with n = 32), not at each
``--k``. It equals the unbiased pass@1 (c/n a task), so the summary names it beside pass@1
("= avg@32") rather than on a line of its own; where tasks have different numbers of samples
it is not computed (the first n samples of every task would not be what it names)."""

from __future__ import annotations

from codea1.harness.formulas import avg_at_k, mean_over_tasks
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import CodeMetric


class AvgAtK(CodeMetric):
    name = "avg@k"
    order = 10
    at_n = True  # the paper's avg@32: every sample of a task (n = 32), not the first --k
    description = "mean pass rate of the first k samples, mean over tasks"

    def compute(self, outcomes, k):
        return mean_over_tasks(outcomes, k, lambda o: avg_at_k(o, k))


@hookimpl
def codea1_register_metrics(registry):
    registry.add(AvgAtK)
