"""The pure math of codea1: estimators and metric formulas, no I/O.

Metric plugins call these functions (training's rewards, advantages and TopVar are the
training method's: ``codea1.trainers.method.rewards``). Every function takes plain values (booleans per sample, ``TaskRecord``s) and returns
numbers or a ``MetricValue``, so tests can hit them with hand-worked examples.

Code metrics (one task's samples, in sample order):

* ``pass_at_k(n, c, k)``: the unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al., 2021);
* ``avg_at_k(outcomes, k)``: the mean pass rate of the first k samples (the paper's avg@k);
* ``mean_over_tasks``: either of them averaged over tasks; undefined when a task has fewer
  than k samples.

Test metrics (one ``TaskRecord`` per task, as ``codea1 evaluate-tests`` builds them):

* ``test_pass_at_k``: valid tests among the first k, over tasks x k (the paper's test
  accuracy; a missing test counts as invalid);
* ``mut_at_k``: killed / completed mutants of the tasks whose first k tests are all valid;
* ``coverage_at_k``: line or branch coverage of the reference by the first k tests;
* ``mul``: test-pass x mut / 100 on the paper's percentage scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from codea1.harness.records import TaskRecord


@dataclass
class MetricValue:
    """``value`` is a fraction in [0, 1], or None when the metric is undefined for this run
    (``note`` says why); ``per_task`` holds each task's figure."""

    value: float | None
    per_task: dict[str, float] = field(default_factory=dict)
    note: str = ""
    # How many tasks the figure rests on where ``per_task`` does not say (a product of two
    # figures over different task sets: the smaller set)
    tasks: int | None = None

    @property
    def task_count(self) -> int:
        return self.tasks if self.tasks is not None else len(self.per_task)


# -- code metrics ----------------------------------------------------------------------------

def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021).

    Computed as a running product, which stays exact enough for n in the thousands where the
    binomials overflow floats. Requires 0 <= c <= n and 1 <= k <= n.
    """
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"pass@{k} needs at least k={k} samples, got n={n}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def avg_at_k(outcomes: Sequence[bool], k: int) -> float:
    """Mean pass rate of the first k samples of one problem (pass@1 with n = k)."""
    if k < 1 or len(outcomes) < k:
        raise ValueError(f"avg@{k} needs at least k={k} samples, got {len(outcomes)}")
    return sum(bool(x) for x in outcomes[:k]) / k


def mean_over_tasks(outcomes: Mapping[str, Sequence[bool]], k: int,
                    per_task: Callable[[Sequence[bool]], float]) -> MetricValue:
    """Mean of ``per_task(samples)`` over tasks with at least one judged sample. Undefined
    (None, with a note naming a task) when any such task has fewer than k samples."""
    judged = {t: o for t, o in outcomes.items() if len(o)}
    if not judged:
        return MetricValue(None, note="no judged sample")
    short = [t for t, o in judged.items() if len(o) < k]
    if short:
        return MetricValue(None, note=f"{len(short)} task(s) have fewer than {k} samples, e.g. {short[0]}")
    figures = {t: per_task(o) for t, o in judged.items()}
    return MetricValue(sum(figures.values()) / len(figures), figures)


# -- test metrics ----------------------------------------------------------------------------

def test_pass_at_k(records: Mapping[str, "TaskRecord"], k: int) -> MetricValue:
    """Valid tests among the first k of every task, over tasks x k."""
    if not records:
        return MetricValue(None, note="no task")
    per_task = {t: sum(r.valid[:k]) / k for t, r in records.items()}
    short = [t for t, r in records.items() if len(r.valid) < k]
    note = f"{len(short)} task(s) have fewer than {k} tests, e.g. {short[0]}: the missing count as invalid" \
        if short else ""
    return MetricValue(sum(per_task.values()) / len(per_task), per_task, note)


test_pass_at_k.__test__ = False  # a formula, not a pytest test


def eligible_for_mutation(record: "TaskRecord", k: int) -> bool:
    """A task's first k tests all pass on the reference: the mutation baseline holds."""
    return len(record.valid) >= k and all(record.valid[:k])


def task_mutation_score(record: "TaskRecord", k: int) -> float | None:
    """Killed / completed mutants of one task, a kill being a failure among the first k
    tests; None when no mutant completed. A mutant whose run was a sandbox error counts as
    completed and not killed: no status takes a mutant out of the denominator unless it says
    nothing of the tests. A mutant that timed out among the first k tests before any failed
    is neither killed nor completed: the timeout says nothing of its answers, and the tests
    after it did not run."""
    completed = [m for m in record.mutants if m["status"] != "pending"
                 and not (m["first_fail"] is None and m.get("first_timeout") is not None and m["first_timeout"] < k)]
    if not completed:
        return None
    killed = sum(1 for m in completed if m["first_fail"] is not None and m["first_fail"] < k)
    return killed / len(completed)


def mut_at_k(records: Mapping[str, "TaskRecord"], k: int, task_set: str = "per-k",
             largest_k: int | None = None) -> MetricValue:
    """Mean mutation score over eligible tasks. ``task_set`` "largest-k" takes the eligible
    set of ``largest_k`` for every k (the reference evaluation fork's quirk)."""
    gate = largest_k if task_set == "largest-k" and largest_k else k
    tasks = {t: r for t, r in records.items() if eligible_for_mutation(r, gate)}
    if not tasks:
        return MetricValue(None, note=f"no eligible task (none has its first {gate} tests all valid)")
    per_task = {t: s for t, r in tasks.items() if (s := task_mutation_score(r, k)) is not None}
    if not per_task:
        return MetricValue(None, note="no eligible task has a completed mutant")
    note = "" if len(per_task) == len(tasks) else f"{len(tasks) - len(per_task)} eligible task(s) without mutants left out"
    return MetricValue(sum(per_task.values()) / len(per_task), per_task, note)


def coverage_at_k(records: Mapping[str, "TaskRecord"], k: int, kind: str) -> MetricValue:
    """Mean ``kind`` ("line" or "branch") coverage of the reference by the first k tests,
    over the tasks where it was measured (a function without branches has none)."""
    per_task = {}
    for t, r in records.items():
        figure = r.coverage.get(str(k), {}).get(kind)
        if figure is not None:
            per_task[t] = figure
    if not per_task:
        return MetricValue(None, note=f"no task has a measured {kind} coverage at k={k}")
    return MetricValue(sum(per_task.values()) / len(per_task), per_task)


def mul(pass_percent: float, mut_percent: float) -> float:
    """The paper's Mul on its percentage scale: pass x mut / 100 (27.05 x 26.41 -> 7.14)."""
    return pass_percent * mut_percent / 100


def mul_at_k(records: Mapping[str, "TaskRecord"], k: int, task_set: str = "per-k",
             largest_k: int | None = None) -> MetricValue:
    """Mul as a fraction: test-pass@k x mut@k. Undefined when either is. When mut@k rests on
    fewer tasks than test-pass@k, the note says so, and the figure rests on the fewer."""
    accuracy = test_pass_at_k(records, k)
    mutation = mut_at_k(records, k, task_set, largest_k or k)
    if accuracy.value is None or mutation.value is None:
        return MetricValue(None, note=mutation.note or accuracy.note)
    note = "" if len(mutation.per_task) == len(accuracy.per_task) else \
        f"test-pass@{k} over {len(accuracy.per_task)} tasks x mut@{k} over {len(mutation.per_task)} of them"
    return MetricValue(mul(accuracy.value * 100, mutation.value * 100) / 100, note=note,
                       tasks=len(mutation.per_task))
