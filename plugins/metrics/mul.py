"""Metric ``Mul`` (reported as Mul@k): the paper's combined test score, pass@k x mut@k / 100
on the percentage scale (a product of fractions here: 27.05% x 26.41% = 7.14%). Undefined
when mut@k is.
"""

from __future__ import annotations

from codea1.harness.formulas import mul_at_k
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import TestMetric


class MulAtK(TestMetric):
    name = "Mul"
    order = 20
    description = "test-pass@k x mut@k / 100 (percentages): the paper's combined test score"

    def label(self, k: int) -> str:
        return f"Mul@{k}"

    def compute(self, records, k, task_set="per-k", largest_k=None):
        return mul_at_k(records, k, task_set, largest_k)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(MulAtK)
