"""95 % intervals over tasks, and paired differences between two runs over their common tasks.

The method, for every figure a run prints (pass@k, avg@k, test-pass@k, mut@k, Mul, coverage):
a percentile bootstrap over tasks. The tasks the figure is computed over are drawn with
replacement ``RESAMPLES`` times from a ``random.Random(SEED)``; each draw is scored by the
metric itself (a task's samples, or its tests and mutants, stay together), so a product of
two figures (Mul) and a figure over a gated set of tasks (mut@k: the tasks whose first k tests
are valid) get the interval of what they are; the interval is the 2.5th and 97.5th
percentiles of the draws. It is the uncertainty that comes from which tasks the benchmark
happens to hold, not from sampling the model again: with n = 1 sample a task, pass@1 near 70 %
over 164 tasks gives about +-7 points.

A paired difference (``paired``) is the mean over the tasks both runs scored of (this run's
figure - the baseline's), its interval drawn the same way over those tasks; it is
significant when the interval leaves out 0. Pairing removes what the tasks share (an easy
task is easy for both runs), so a difference is often significant where the two runs'
own intervals overlap.

Every interval is reproducible: the same figures give the same interval (``METHOD`` is
written beside them in results.json).
"""

from __future__ import annotations

import array
import functools
import math
import random
from typing import Any, Callable, Mapping, Sequence

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
METHOD = {"method": "percentile bootstrap over tasks", "resamples": RESAMPLES, "seed": SEED, "level": LEVEL}
# Fewer tasks than this: a figure is shown with its interval but not ranked (one task more or
# less moves it by 10 points or more).
MIN_RANKED_TASKS = 10


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of sorted values, linear between the nearest ranks."""
    if not sorted_values:
        raise ValueError("no values")
    position = (len(sorted_values) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _bounds(draws: list[float]) -> list[float] | None:
    """[low, high] (a list: what results.json holds reads back the same)."""
    if len(draws) < 2:
        return None
    draws.sort()
    tail = (1 - LEVEL) / 2 * 100
    return [round(percentile(draws, tail), 12), round(percentile(draws, 100 - tail), 12)]


def bootstrap(compute: Callable[[dict[str, Any]], float | None], units: Mapping[str, Any],
              resamples: int = RESAMPLES, seed: int = SEED) -> list[float] | None:
    """The 95 % interval of ``compute`` (a figure of task -> unit, None where undefined) over
    ``units`` drawn with replacement; None with fewer than two tasks. A draw where the figure
    is undefined (mut@k with no eligible task drawn) is left out."""
    keys = sorted(units)
    if len(keys) < 2:
        return None
    draws = []
    for positions in _positions(len(keys), resamples, seed):
        drawn = map(keys.__getitem__, positions)
        value = compute({f"{i}\0{key}": units[key] for i, key in enumerate(drawn)})
        if value is not None:
            draws.append(value)
    return _bounds(draws)


def mean_interval(figures: Mapping[str, float], resamples: int = RESAMPLES, seed: int = SEED
                  ) -> list[float] | None:
    """``bootstrap`` of the mean of per-task figures, the same draws (the same interval) as
    ``bootstrap(mean, figures)``, without rebuilding a mapping per draw."""
    keys = sorted(figures)
    if len(keys) < 2:
        return None
    values = [figures[k] for k in keys]
    n = len(values)
    return _bounds([math.fsum(map(values.__getitem__, positions)) / n
                    for positions in _positions(n, resamples, seed)])


def _positions(n: int, resamples: int, seed: int):
    """The positions (0..n-1) each draw takes: ``rng.choices(items, k=n)`` of a fresh
    ``random.Random(seed)``, position for position (the same random numbers), so the
    intervals are those of drawing the items themselves. The same for every figure over n
    tasks: a run's figures (pass@1 of base and plus, avg@k, ...) share one set of draws."""
    if n > _SHARED_UP_TO:
        rng = random.Random(seed)
        return (rng.choices(range(n), k=n) for _ in range(resamples))
    return _shared_positions(n, resamples, seed)


_SHARED_UP_TO = 4096  # tasks; larger sets draw afresh for each figure (n x resamples positions held)


@functools.lru_cache(maxsize=4)
def _shared_positions(n: int, resamples: int, seed: int) -> tuple[array.array, ...]:
    # Two bytes a position: a tuple would hold an int object of its own for every position
    # above 256 (about 150 MB for 4,096 tasks and 1,000 draws; this way 8 MB).
    rng = random.Random(seed)
    return tuple(array.array("H", rng.choices(range(n), k=n)) for _ in range(resamples))


def metric_interval(compute: Callable[[dict[str, Any]], Any], units: Mapping[str, Any], whole: Any = None
                    ) -> list[float] | None:
    """The interval of a metric (``compute``: units -> ``MetricValue``) over ``units``: the
    mean of its per-task figures where its value is that mean over every unit (pass@k,
    avg@k, test-pass@k), else the metric recomputed on each draw (mut@k, Mul). None for a
    figure that rests on fewer than two tasks. ``whole``: the metric over all ``units``,
    where the caller has it already."""
    whole = whole if whole is not None else compute(dict(units))
    if whole.value is None or (whole.task_count or len(units)) < 2:
        return None  # a figure that rests on one task has no spread to draw from
    per_task = whole.per_task
    if set(per_task) == set(units) and per_task and \
            abs(math.fsum(per_task.values()) / len(per_task) - whole.value) < 1e-12:
        return mean_interval(per_task)
    return bootstrap(lambda drawn: compute(drawn).value, units)


def paired(figures: Mapping[str, float], baseline: Mapping[str, float]) -> dict[str, Any] | None:
    """This run minus the baseline over the tasks both have a figure for: the mean
    difference, its 95 % interval, the number of tasks, and whether the interval leaves out
    0. None with fewer than two common tasks."""
    common = sorted(set(figures) & set(baseline))
    if len(common) < 2:
        return None
    differences = {t: figures[t] - baseline[t] for t in common}
    interval = mean_interval(differences)
    difference = math.fsum(differences.values()) / len(differences)
    return {"difference": difference, "interval": interval, "tasks": len(common),
            "significant": interval is not None and (interval[0] > 0 or interval[1] < 0)}


def over_tasks(n: int) -> str:
    """"over 1 task", "over 3 tasks": what a figure rests on."""
    return f"over {n} task{'s' if n != 1 else ''}"


def interval_text(interval: Sequence[float] | None, scale: float = 100, digits: int = 1) -> str:
    """"[63.4, 77.0]" in percentage points; "" without an interval."""
    if not interval:
        return ""
    low, high = interval
    return f"[{low * scale:.{digits}f}, {high * scale:.{digits}f}]"
