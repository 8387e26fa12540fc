"""Metrics ``coverage@k`` and ``branch-coverage@k``: line and branch coverage of the
reference function by its first k tests (coverage.py, measured in the sandbox), mean over
the tasks where it was measured. A function without branches is left out of
branch-coverage@k (its branch coverage is undefined, not 100%).
"""

from __future__ import annotations

from codea1.harness.formulas import coverage_at_k
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import TestMetric


class CoverageAtK(TestMetric):
    name = "coverage@k"
    order = 30
    description = "line coverage of the reference function by the first k tests (coverage.py)"
    kind = "line"  # which figure of the coverage record

    def compute(self, records, k, task_set="per-k", largest_k=None):
        return coverage_at_k(records, k, self.kind)


class BranchCoverageAtK(CoverageAtK):
    name = "branch-coverage@k"
    order = 31
    description = "branch coverage of the reference function by the first k tests (coverage.py)"
    kind = "branch"


@hookimpl
def codea1_register_metrics(registry):
    registry.add(CoverageAtK)
    registry.add(BranchCoverageAtK)
