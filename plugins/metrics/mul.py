"""Metric ``Mul`` (reported as Mul@k): the paper's combined test score, pass@k x mut@k / 100 on the
percentage scale (a product of fractions here: 27.05% x 26.41% = 7.14%). Undefined when
mut@k is.
"""

from __future__ import annotations

from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import Metric, MetricValue
from codea1.plugins.metrics.mutation_score import mut_at_k
from codea1.plugins.metrics.accuracy import accuracy_at_k


def mul(pass_percent: float, mut_percent: float) -> float:
    """Mul on the paper's percentage scale."""
    return pass_percent * mut_percent / 100


class MulAtK(Metric):
    name = "Mul"
    description = "test-pass@k x mut@k / 100 (percentages): the paper's combined test score"
    applies_to = "tests"

    def label(self, k: int) -> str:
        return f"Mul@{k}"

    def compute_tests(self, records, k, task_set="per-k", largest_k=None):
        accuracy = accuracy_at_k(records, k)
        mutation = mut_at_k(records, k, task_set, largest_k or k)
        if accuracy.value is None or mutation.value is None:
            return MetricValue(None, note=mutation.note or accuracy.note)
        return MetricValue(mul(accuracy.value * 100, mutation.value * 100) / 100)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(MulAtK)
