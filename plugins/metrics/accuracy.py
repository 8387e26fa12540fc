"""Metric ``test-pass@k``: the paper's test accuracy on UnLeakedTestBench.

Of the first k generated tests of every task, those valid on the reference (they execute
and their assertion holds), summed, divided by (tasks x k). A task with fewer than k tests
counts its missing tests as not passing; an unparseable assert is an invalid test.
"""

from __future__ import annotations

from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import Metric, MetricValue


def accuracy_at_k(records, k: int) -> MetricValue:
    if not records:
        return MetricValue(None, note="no task")
    per_task = {t: sum(r.valid[:k]) / k for t, r in records.items()}
    return MetricValue(sum(per_task.values()) / len(per_task), per_task)


class TestPassAtK(Metric):  # "Test" as in test LLM; __test__ keeps pytest away
    __test__ = False
    name = "test-pass@k"
    description = "valid tests among the first k generated, over tasks x k (the paper's test accuracy)"
    applies_to = "tests"

    def compute_tests(self, records, k, task_set="per-k", largest_k=None):
        return accuracy_at_k(records, k)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(TestPassAtK)
