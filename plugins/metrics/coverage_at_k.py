"""Metrics ``coverage@k`` and ``branch-coverage@k``: line and branch coverage of the
reference function by its first k tests (coverage.py, measured in the sandbox), mean over
the tasks where it was measured. A function without branches is left out of
branch-coverage@k (its branch coverage is undefined, not 100%).
"""

from __future__ import annotations

from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import Metric, MetricValue


def coverage_at_k(records, k: int, kind: str) -> MetricValue:
    per_task = {}
    for t, r in records.items():
        figure = r.coverage.get(str(k), {}).get(kind)
        if figure is not None:
            per_task[t] = figure
    if not per_task:
        return MetricValue(None, note=f"no task has a measured {kind} coverage at k={k}")
    return MetricValue(sum(per_task.values()) / len(per_task), per_task)


class CoverageAtK(Metric):
    name = "coverage@k"
    description = "line coverage of the reference function by the first k tests (coverage.py)"
    applies_to = "tests"
    kind = "line"  # which figure of the coverage record

    def compute_tests(self, records, k, task_set="per-k", largest_k=None):
        return coverage_at_k(records, k, self.kind)


class BranchCoverageAtK(CoverageAtK):
    name = "branch-coverage@k"
    description = "branch coverage of the reference function by the first k tests (coverage.py)"
    kind = "branch"


@hookimpl
def codea1_register_metrics(registry):
    registry.add(CoverageAtK)
    registry.add(BranchCoverageAtK)
