"""Metric ``test-pass@k``: the paper's test accuracy on UnLeakedTestBench.

Of the first k generated tests of every task, those valid on the reference (they execute
and their assertion holds), summed, divided by (tasks x k). A task with fewer than k tests
counts its missing tests as not passing; an unparseable assert is an invalid test.
"""

from __future__ import annotations

from codea1.harness.formulas import test_pass_at_k
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import TestMetric


class TestPassAtK(TestMetric):
    name = "test-pass@k"
    order = 0  # the paper's columns: accuracy, mutation score, Mul, then coverage
    description = "valid tests among the first k generated, over tasks x k (the paper's test accuracy)"

    def compute(self, records, k, task_set="per-k", largest_k=None):
        return test_pass_at_k(records, k)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(TestPassAtK)
