"""Metric ``mut@k``: mutation score of the first k generated tests.

Eligible tasks: the first k tests all pass on the reference (the mutation baseline); with
task_set "largest-k" (the reference fork's quirk, off by default) the eligible set of the
largest k is used for every k. Per eligible task: killed / completed mutants, where a
mutant is killed when one of the first k tests fails, errors or times out on it (or it
does not load), and completed means it got a verdict (sandbox errors are left out). The
mean over eligible tasks that have at least one completed mutant; undefined when none.
"""

from __future__ import annotations

from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import Metric, MetricValue


def eligible(record, k: int) -> bool:
    return len(record.valid) >= k and all(record.valid[:k])


def task_mutation_score(record, k: int) -> float | None:
    completed = [m for m in record.mutants if m["status"] not in ("sandbox_error", "pending")]
    if not completed:
        return None
    killed = sum(1 for m in completed if m["first_fail"] is not None and m["first_fail"] < k)
    return killed / len(completed)


def mut_at_k(records, k: int, task_set: str = "per-k", largest_k: int | None = None) -> MetricValue:
    gate = largest_k if task_set == "largest-k" and largest_k else k
    tasks = {t: r for t, r in records.items() if eligible(r, gate)}
    if not tasks:
        return MetricValue(None, note=f"no eligible task (none has its first {gate} tests all valid)")
    per_task = {t: s for t, r in tasks.items() if (s := task_mutation_score(r, k)) is not None}
    if not per_task:
        return MetricValue(None, note="no eligible task has a completed mutant")
    note = "" if len(per_task) == len(tasks) else f"{len(tasks) - len(per_task)} eligible task(s) without mutants left out"
    return MetricValue(sum(per_task.values()) / len(per_task), per_task, note)


class MutAtK(Metric):
    name = "mut@k"
    description = "mutation score of the first k tests (cosmic-ray operators), mean over eligible tasks"
    applies_to = "tests"

    def compute_tests(self, records, k, task_set="per-k", largest_k=None):
        return mut_at_k(records, k, task_set, largest_k or k)


@hookimpl
def codea1_register_metrics(registry):
    registry.add(MutAtK)
