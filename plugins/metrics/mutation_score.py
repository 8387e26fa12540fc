"""Metric ``mut@k``: mutation score of the first k generated tests.

Eligible tasks: the first k tests all pass on the reference (the mutation baseline); with
task_set "largest-k" (the reference fork's quirk, off by default) the eligible set of the
largest k is used for every k. Per eligible task: killed / completed mutants, where a
mutant is killed when one of the first k tests fails or errors on it (or it does not load),
and completed means it got a verdict (sandbox errors are left out). A mutant that timed out
among the first k tests before any of them failed is neither killed nor completed: a
timeout is no kill (the limits come from the reference's time), and the tests after it did
not run. The
mean over eligible tasks that have at least one completed mutant; undefined when none.
"""

from __future__ import annotations

from codea1.harness.formulas import mut_at_k
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import TestMetric


class MutAtK(TestMetric):
    name = "mut@k"
    order = 10
    description = "mutation score of the first k tests (cosmic-ray operators), mean over eligible tasks"

    def compute(self, records, k, task_set="per-k", largest_k=None):
        return mut_at_k(records, k, task_set, largest_k or k)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(MutAtK)
