"""Metric plugin base: a metric is a pure function of per-task outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence


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
        """``outcomes`` maps task id to the pass/fail of its samples, in sample order
        (skipped samples already removed)."""
        raise NotImplementedError

    def label(self, k: int) -> str:
        return self.name.replace("@k", f"@{k}")


def tasks_short_of(outcomes: Mapping[str, Sequence[bool]], k: int) -> list[str]:
    return [t for t, o in outcomes.items() if len(o) < k]
