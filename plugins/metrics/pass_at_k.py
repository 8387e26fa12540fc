"""Metric ``pass@k``: the unbiased estimator averaged over tasks.

A task with fewer than k samples makes pass@k undefined for the run (as in evalplus, which
prints only the k that every task supports): the value is None and the note names the
tasks. Tasks with no judged sample (all skipped) are left out of the mean.
"""

from __future__ import annotations

from codea1.harness.formulas import mean_over_tasks, pass_at_k
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import CodeMetric


class PassAtK(CodeMetric):
    name = "pass@k"
    order = 0  # the headline: evalplus and bigcodebench users read pass@1 first
    description = "unbiased pass@k (1 - C(n-c,k)/C(n,k)), mean over tasks"

    def compute(self, outcomes, k):
        return mean_over_tasks(outcomes, k, lambda o: pass_at_k(len(o), sum(map(bool, o)), k))


@hookimpl
def codea1_register_metrics(registry):
    registry.add(PassAtK)
