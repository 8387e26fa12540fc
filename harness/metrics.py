"""Metric plugin base: a metric is a pure function of per-task outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence


@dataclass
class MetricValue:
    """``value`` is a fraction in [0, 1], or None when the metric is undefined for this run
    (``note`` says why); ``per_task`` holds each task's figure."""

    value: float | None
    per_task: dict[str, float] = field(default_factory=dict)
    note: str = ""


class Metric:
    """Subclasses set ``name`` (e.g. "pass@k"), ``description`` and ``applies_to`` ("code" or
    "tests"), and implement ``compute``. ``k`` comes from the run's ``--k`` list."""

    name = ""
    description = ""
    applies_to = "code"

    def compute(self, outcomes: Mapping[str, Sequence[bool]], k: int) -> MetricValue:
        """Code metrics: ``outcomes`` maps task id to the pass/fail of its samples, in sample
        order (skipped samples already removed)."""
        raise NotImplementedError

    def compute_tests(self, records: Mapping, k: int, task_set: str = "per-k", largest_k: int | None = None) -> MetricValue:
        """Test metrics (``applies_to = "tests"``): ``records`` maps task id to a
        ``harness.tests_evaluation.TaskRecord``; ``task_set`` "largest-k" makes every k use
        the task set of ``largest_k``, the run's largest k (the reference fork's quirk)."""
        raise NotImplementedError

    def label(self, k: int) -> str:
        return self.name.replace("@k", f"@{k}")


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
