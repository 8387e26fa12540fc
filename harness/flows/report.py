"""``codea1 report``: the paper's comparison tables and training figures from run directories.

Stages, top to bottom:

1. read: each RUN is a run directory of evaluate, evaluate-tests, tts or train (its
   config.json says which), or evalplus' ``*_eval_results.json`` (a file, or a directory
   holding one). Its status comes from the run store: complete, in progress (its process
   still runs) or interrupted. Nothing is written into a run directory.
2. label: a run's label is its directory name, or what ``--name RUN=LABEL`` says. Runs
   with the same label are one row (a model evaluated on several benchmarks); two runs of
   one label filling the same cell are refused.
3. tables (pandas): code generation (per benchmark avg@k and pass@k, and their Avg over
   the benchmarks a row has all of), test generation (test-pass@k, mut@k, coverage@k,
   Mul@k), Best-of-N (tts), training (the last step of each train run in the columns its
   trainer declares, with short headers and their legend, and the trainer's ablation options
   that differ between its runs), the last evaluation during training. Per metric column,
   best bold and second underlined among complete runs; deltas against ``--baseline``;
   a run on other data than the column's first run (data digest) is marked with a dagger
   and named in the warnings (``--strict`` refuses instead); an incomplete run shows its
   status beside its label, takes no rank, and shows no figure it has not finished.
4. figures (matplotlib, Agg): the step-log values each trainer declares (its
   ``log_columns``: rewards of both policies, pass rates on new, historical and golden tests,
   the Mistake Book, an sft loss) over steps, evaluation metrics over steps, per-benchmark
   bars, Best-of-N curves (``tts --curves``), the sweep of a numeric ablation option (alpha)
   over a set of train runs.
5. details: per benchmark, every task's pass rate per row, and the tasks a row fails that
   the baseline passes.
6. write: each ``--format`` through its reporter plugin into ``--out``.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codea1.harness.config_fields import check_fields
from codea1.harness.errors import Codea1Error, ConfigError
from codea1.harness.intervals import METHOD, MIN_RANKED_TASKS, mean_interval, paired
from codea1.harness.records import OUTSIDE
from codea1.harness.registry import did_you_mean
from codea1.harness.reporting import Figure, Report, Table
from codea1.harness.run import variant_name
from codea1.harness.runstore import make_directory, run_status
from codea1.harness.training import LogColumn, RunColumns, run_columns

KINDS = ("evaluate", "evaluate-tests", "tts", "train", "evalplus")
# The k of an evalplus results file's pass@k (those up to its n samples a task, and n; avg@k is
# at n): every k would give n columns.
EVALPLUS_KS = (1, 2, 5, 10, 20, 50, 100)
SKIPPED = "skipped"  # a task's cell in the per-task tables when the run could not judge it


class ReportError(Codea1Error):
    pass


@dataclass
class ReportConfig:
    runs: list[str]
    out: str
    formats: list[str] = field(default_factory=lambda: ["md", "csv", "tex", "html"])
    baseline: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    title: str = "codea1 report"
    strict: bool = False
    overwrite: bool = False

    def __post_init__(self):
        check_fields(self)


@dataclass
class RunData:
    """One run as the report reads it."""

    path: Path
    label: str
    kind: str
    benchmark: str
    status: str
    digest: dict[str, str]
    metrics: dict[str, float | None] = field(default_factory=dict)
    tasks: dict[str, float | str] = field(default_factory=dict)  # per task: pass rate, or SKIPPED (evaluate, evalplus)
    steps: list[dict] = field(default_factory=list)  # train: the step log
    config: dict = field(default_factory=dict)
    curves: dict[str, float] = field(default_factory=dict)  # tts --curves
    declared: RunColumns | None = None  # train: what its trainer declares to reports
    in_process: tuple[int, int] = (0, 0)  # (verdicts judged inside the program's process, verdicts)
    outside_tasks: int | None = None  # tasks judged wholly outside, where some are not (evaluate)
    task_set: frozenset[str] | None = None  # the tasks its figures cover (evaluate, evalplus)
    partial: str = ""  # "10 of 164 tasks" where its figures are not the whole benchmark's
    skipped: dict[str, str] = field(default_factory=dict)  # task -> why it could not be judged (evaluate)
    skipped_count_as: str = ""  # "counted as failures" or "left out of the figures"
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # metric -> its 95 % interval
    task_figures: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> task -> its figure
    metric_tasks: dict[str, int] = field(default_factory=dict)  # metric -> tasks it rests on (when fewer)


# -- 1. read ---------------------------------------------------------------------------------

def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ReportError(f"{path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def read_run(plugins, given: str, label: str) -> RunData:
    path = Path(given)
    if path.is_file() and path.name.endswith("_eval_results.json"):
        return read_evalplus(plugins, path, label)
    if not path.is_dir():
        raise ReportError(f"{given}: no such run directory or evalplus *_eval_results.json file")
    if not (path / "config.json").exists():
        found = sorted(path.glob("*_eval_results.json"))
        if len(found) == 1:
            return read_evalplus(plugins, found[0], label)
        raise ReportError(f"{given}: not a run directory (no config.json) nor a directory holding one evalplus "
                          f"*_eval_results.json")
    config = read_json(path / "config.json")
    kind = config.get("command")
    if kind not in KINDS:
        raise ReportError(f"{path / 'config.json'}: field 'command': {kind!r} runs are not reported "
                          f"(reported: {', '.join(KINDS[:-1])}){did_you_mean(str(kind), KINDS[:-1])}")
    status = run_status(path)
    results = read_json(path / "results.json") if status == "complete" else {}
    digest = config.get("data_digest") or {}
    if kind == "train":
        from codea1.harness.jsonl import appended_rows

        steps = appended_rows(path / "steps.jsonl", lambda row: row, ReportError, hint="", repair=False) \
            if (path / "steps.jsonl").exists() else []
        if steps and steps[0].get("step") == 0:  # a log written when steps counted from 0
            steps = [{**s, "step": s["step"] + 1} for s in steps]
        return RunData(path, label, kind, config.get("benchmark", {}).get("name", ""), status, digest,
                       steps=steps, config=config, declared=run_columns(plugins, config))
    run = RunData(path, label, kind, benchmark_column(config.get("benchmark", ""), config.get("benchmark_options")),
                  status, digest, config=config,
                  # a figure equal to another of the run by definition (avg@n = pass@1) is one column
                  metrics={k: v for k, v in results.get("metrics", {}).items() if k not in results.get("metric_same", {})},
                  curves=results.get("curves", {}),
                  intervals={k: tuple(v) for k, v in (results.get("intervals") or {}).items() if v},
                  metric_tasks=dict(results.get("metric_tasks") or {}))
    for task, found in (results.get("tasks") or {}).items():
        # per task, each figure a metric gave it (evaluate: beside the task's counts)
        given = found.get("figures", found) if isinstance(found, dict) else {}
        for metric in run.metrics:
            if is_number(given.get(metric)) and not found.get("skipped"):
                run.task_figures.setdefault(metric, {})[task] = float(given[metric])
    if kind == "evaluate":
        # A skipped task (a library missing, the reference failing here) reads "skipped", never
        # 0.00 as if a sample had been judged and failed.
        run.tasks = {t: SKIPPED if r.get("skipped") else r["passed"] / r["n"]
                     for t, r in results.get("tasks", {}).items() if r.get("n")}
        counts = results.get("counts", {})
        run.in_process = (int(counts.get("judged_in_process", 0)), int(counts.get("samples", 0)))
        judged = results.get("judged") or {}
        if judged.get("tasks_with_in_process_tests"):
            run.outside_tasks = int(judged.get("tasks_wholly_outside", 0))
        coverage = results.get("coverage") or {}
        left_out = {t for t, r in results.get("tasks", {}).items()
                    if r.get("skipped") and coverage.get("skipped_count_as") == "left out"}
        run.task_set = frozenset(results.get("tasks", {})) - left_out
        if coverage.get("partial"):
            run.partial = f"{coverage.get('scored')} of {coverage.get('of')} tasks"
        run.skipped = {t: r["skipped"] for t, r in results.get("tasks", {}).items() if r.get("skipped")}
        run.skipped_count_as = ("left out of the figures" if coverage.get("skipped_count_as") == "left out"
                                else "counted as failures")
    if kind == "evaluate-tests" and results.get("tasks") is not None:
        run.task_set = frozenset(results["tasks"])
        coverage = results.get("coverage") or {}
        if coverage.get("partial"):
            run.partial = f"{coverage.get('scored')} of {coverage.get('of')} tasks"
    return run


benchmark_column = variant_name  # a column is one benchmark variant


def read_evalplus(plugins, path: Path, label: str) -> RunData:
    """evalplus' results: per task a list of samples with base_status and plus_status; a
    sample passes when both are "pass" (HumanEval+ / MBPP+ "plus"); "base:" figures from the
    base tests alone. With n samples a task, every code metric at each k of EVALPLUS_KS up
    to n and at n (avg@k at n only), computed as ``codea1 evaluate`` computes its own. The dataset hash
    evalplus records is the md5 of its data file."""
    from codea1.harness.flows.evaluate import code_metrics

    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise ReportError(f"{path}: field 'eval': expected evalplus results (task id -> samples)")
    plus, base, plus_only = {}, {}, {}
    for task_id, samples in doc["eval"].items():
        if not isinstance(samples, list) or not samples:
            raise ReportError(f"{path}: field 'eval.{task_id}': expected a non-empty list of samples")
        try:
            base[task_id] = [s["base_status"] == "pass" for s in samples]
            plus_only[task_id] = [s.get("plus_status") == "pass" for s in samples]
        except (KeyError, TypeError):
            raise ReportError(f"{path}: field 'eval.{task_id}': samples need 'base_status'") from None
        plus[task_id] = [b and p for b, p in zip(base[task_id], plus_only[task_id])]
    first = next(iter(doc["eval"]), "")
    benchmark = "humaneval+" if first.startswith("HumanEval/") else "mbpp+" if first.startswith("Mbpp/") else "evalplus"
    groups = {"": plus, "base:": base, "plus:": plus_only}
    if all(s.get("plus_status") is None for samples in doc["eval"].values() for s in samples):
        # evalplus --base-only writes plus_status null: its figures are the base tests', in the
        # column of `codea1 evaluate --base-only`
        benchmark, groups = benchmark_column(benchmark, {"base_only": "true"}), {"": base}
        plus = base
    n = min(len(v) for v in plus.values()) if plus else 0
    ks = sorted({k for k in EVALPLUS_KS if k <= n} | {n}) if n else []
    metrics, _, per_task, same, intervals = code_metrics(plugins, groups, ks)
    metrics = {k: v for k, v in metrics.items() if k not in same}
    digest = {"md5": doc["hash"]} if isinstance(doc.get("hash"), str) else {}
    figures: dict[str, dict[str, float]] = {}
    for task, by_metric in per_task.items():
        for metric, figure in by_metric.items():
            figures.setdefault(metric, {})[task] = figure
    return RunData(path, label, "evalplus", benchmark, "complete", digest, metrics=metrics,
                   tasks={t: sum(v) / len(v) for t, v in plus.items()}, task_set=frozenset(plus),
                   intervals={k: v for k, v in intervals.items() if v}, task_figures=figures)


# -- 2. labels -------------------------------------------------------------------------------

def labels_for(runs: list[str], names: dict[str, str]) -> list[str]:
    """--name RUN=LABEL, else the directory's (or file's) name; two different runs that would
    get the same default label get their parent's name in front."""
    resolved = {str(Path(r).resolve()): r for r in runs}
    named = {}
    for key, label in names.items():
        hit = resolved.get(str(Path(key).resolve()))
        if hit is None:
            raise ConfigError(f"--name {key}={label}: {key!r} is not one of the runs{did_you_mean(key, runs)}")
        named[hit] = label
    defaults = [Path(r).resolve().name.removesuffix("_eval_results.json") for r in runs]
    out = []
    for r, default in zip(runs, defaults):
        if r in named:
            out.append(named[r])
        elif defaults.count(default) > 1:
            out.append(f"{Path(r).resolve().parent.name}/{default}")
        else:
            out.append(default)
    return out


# -- 3. tables -------------------------------------------------------------------------------

def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def metric_table(name: str, title: str, runs: list[RunData], avg: bool = False):
    """One row per label, one column per (benchmark, metric); runs still going or broken
    off show their status and no figure. Returns the table and which run filled each cell
    (None, {} without runs)."""
    import pandas as pd

    if not runs:
        return None, {}
    cells: dict[str, dict[str, Any]] = {}
    owner: dict[tuple[str, str], RunData] = {}
    columns: list[str] = []
    status: dict[str, str] = {}
    intervals: dict[tuple[str, str], tuple[float, float]] = {}
    for run in runs:
        row = cells.setdefault(run.label, {})
        if run.status != "complete":
            status[run.label] = run.status
        for metric, value in run.metrics.items():
            if ":" in metric and not metric.startswith(OUTSIDE):  # base: / plus: groups stay in results.json
                continue
            column = f"{run.benchmark} {metric}"
            if (run.label, column) in owner:
                raise ReportError(f"{owner[(run.label, column)].path} and {run.path} both fill row {run.label!r}, "
                                  f"column {column!r}: give one of them another label with --name")
            owner[(run.label, column)] = run
            if column not in columns:
                columns.append(column)
            row[column] = float(value) if is_number(value) else None
            if run.intervals.get(metric) and is_number(value):
                intervals[(run.label, column)] = run.intervals[metric]
        status.setdefault(run.label, run.status)
    columns.sort(key=lambda c: (c.split(" ")[0], metric_order(c.split(" ", 1)[1])))
    if avg:
        by_metric: dict[str, list[str]] = {}
        for c in columns:
            by_metric.setdefault(c.split(" ", 1)[1], []).append(c)
        for metric, cols in by_metric.items():
            if len(cols) < 2 or metric.startswith(OUTSIDE):  # over some benchmarks only: no average
                continue
            columns.append(f"Avg {metric}")
            for label, row in cells.items():
                values = [row.get(c) for c in cols]
                row[f"Avg {metric}"] = sum(values) / len(values) if all(is_number(v) for v in values) else None
                parts = [intervals.get((label, c)) for c in cols]
                if is_number(row[f"Avg {metric}"]) and all(parts):
                    intervals[(label, f"Avg {metric}")] = average_interval(row[f"Avg {metric}"], parts)
    frame = pd.DataFrame.from_dict(cells, orient="index", columns=columns).astype(object)
    frame = frame.where(frame.notna(), None)
    table = Table(name, title, frame, metric_columns=list(columns), status=status, intervals=intervals)
    return table, owner


Z95 = 1.959964  # the normal quantile of a 95 % two-sided interval


def average_interval(average: float, parts: list[tuple[float, float]]) -> tuple[float, float]:
    """The 95 % interval of an average over benchmarks from each benchmark's own: the
    benchmarks' tasks are drawn independently, so the average's standard error is the root
    of the summed squared errors over the count, each error read off its interval's width
    (width / (2 x 1.96)); normal approximation."""
    error = math.sqrt(sum(((high - low) / (2 * Z95)) ** 2 for low, high in parts)) / len(parts)
    return average - Z95 * error, average + Z95 * error


def metric_order(metric: str) -> tuple:
    outside = metric.startswith(OUTSIDE)  # beside the figure it restricts
    head, _, k = metric.removeprefix(OUTSIDE).partition("@")
    # The order the summaries print (the metric plugins' ``order``): the headline first.
    order = ["pass", "avg", "test-pass", "mut", "Mul", "coverage", "branch-coverage", "best_of_n", "avg_at_m", "oracle"]
    return (order.index(head) if head in order else len(order), int(k) if k.isdigit() else 0, outside, metric)


def training_table(runs: list[RunData]) -> Table | None:
    """The last step of each train run: the columns its trainer declares (a rate in %, ranked;
    a plain number as is; a loss also at step 1), and the ablation options that differ between
    runs of one trainer."""
    import pandas as pd

    if not runs:
        return None
    trainers = {r.label: r.declared.trainer for r in runs}
    differing = ablation_axes(runs, trainers)
    options = [k for k in declared_union(runs, lambda d: d.ablation_keys) if any(k in keys for keys in differing.values())]
    cells, status, intervals, windows = {}, {}, {}, {}
    for run in runs:
        if run.label in cells:
            raise ReportError(f"two train runs are labelled {run.label!r} ({run.path}): give one another with --name")
        given = run.config.get("trainer", {})
        figures, bounds, windows[run.label] = last_figures(run)
        cells[run.label] = {"trainer": trainers[run.label], "steps": len(run.steps),
                            **{k: given[k] if isinstance(given[k], (int, float, str)) else json.dumps(given[k])
                               for k in differing[trainers[run.label]] if k in given},
                            **figures}
        intervals |= {(run.label, column): interval for column, interval in bounds.items()}
        status[run.label] = run.status
    declared = [c for c in declared_union(runs, lambda d: d.columns) if c.table]
    shown = [c for c in declared if any(name in row for row in cells.values() for name in table_names(c))]
    metric_columns = [c.column for c in shown if c.fraction]
    plain = [name for c in shown if not c.fraction for name in table_names(c)]
    frame = pd.DataFrame.from_dict(cells, orient="index", columns=["trainer", *options, "steps", *metric_columns, *plain])
    frame = frame.astype(object).where(frame.notna(), None)
    headers = {name: header for c in shown for name, header in zip(table_names(c), table_headers(c))}
    table = Table("training", "Training (the last steps)", frame, metric_columns=metric_columns, status=status,
                  headers=headers, lower_better=[c.column for c in shown if c.fraction and not c.higher_is_better],
                  intervals=intervals)
    for label, steps in windows.items():
        if steps < MIN_WINDOW:
            for column in metric_columns:
                if is_number(frame.at[label, column]):
                    table.marks[(label, column)] = "§"
    if table.marks:
        table.notes.append(f"§ fewer than {MIN_WINDOW} steps: shown, not ranked.")
    legend = [f"{', '.join(table_headers(c))}: {c.means}" + (" at step 1 and at the last step" if c.first else "")
              for c in shown if c.means]
    table.notes.append(f"A rate is the mean over the last quarter of a run's steps (at least {MIN_WINDOW}: "
                       f"{', '.join(f'{label} {n}' for label, n in windows.items())}), in square brackets its "
                       f"95 % interval over those steps (bootstrap, seed {METHOD['seed']}; steps taken as "
                       f"independent); other figures at the last step"
                       + (f". {'; '.join(legend)}." if legend else "."))
    axes = [f"{t}: {', '.join(keys)}" for t, keys in sorted(differing.items()) if keys]
    if axes:
        table.notes.append(f"Trainer options that differ between runs of one trainer (shown for that trainer's "
                           f"runs only): {'; '.join(axes)}.")
    return table


def declared_union(runs: list[RunData], what) -> list:
    """What the runs' trainers declare (columns by their report name, or ablation keys), each
    once, trainer by trainer in name order."""
    out: dict[str, Any] = {}
    for run in sorted(runs, key=lambda r: r.declared.trainer):
        for item in what(run.declared):
            out.setdefault(item.column if isinstance(item, LogColumn) else item, item)
    return list(out.values())


def table_names(column: LogColumn) -> list[str]:
    """The training table's columns of a declared column: its last value, and its first."""
    return [f"{column.column}_first", f"{column.column}_last"] if column.first else [column.column]


def table_headers(column: LogColumn) -> list[str]:
    return [f"first {column.label}", f"last {column.label}"] if column.first else [column.label]


def training_evaluation_table(runs: list[RunData]) -> Table | None:
    """Each train run's last evaluation of its policies (train's eval_every): the step it
    ran after, and per evaluated benchmark its metrics."""
    import pandas as pd

    cells, columns, status = {}, [], {}
    for run in runs:
        evaluated = [s for s in run.steps if s.get("evaluation")]
        if not evaluated:
            continue
        row = cells[run.label] = {"step": evaluated[-1].get("step")}
        for where, metrics in evaluated[-1]["evaluation"].items():
            row |= {f"{where} {metric}": float(value) for metric, value in metrics.items() if is_number(value)}
        columns += [c for c in row if c not in columns and c != "step"]
        status[run.label] = run.status
    if not cells:
        return None
    columns.sort(key=lambda c: (c.split(" ")[0], metric_order(c.split(" ", 1)[1])))
    frame = pd.DataFrame.from_dict(cells, orient="index", columns=["step", *columns]).astype(object)
    frame = frame.where(frame.notna(), None)
    table = Table("training_evaluation", "Training: the last evaluation of the policies", frame,
                  metric_columns=columns, status=status)
    table.notes.append("code/BENCHMARK: the code policy's samples scored by evaluate; tests/BENCHMARK: the test "
                       "policy's suites scored by evaluate-tests; step: the step after which they ran.")
    return table


def ablation_axes(runs: list[RunData], trainers: dict[str, str]) -> dict[str, list[str]]:
    """Per trainer, the options its runs disagree on among those it declares (an ablation
    set); runs of different trainers are never compared (sft's k is not code-a1's k)."""
    out = {}
    for trainer in sorted(set(trainers.values())):
        these = [r for r in runs if trainers[r.label] == trainer]
        given = [r.config.get("trainer", {}) for r in these]
        out[trainer] = [k for k in these[0].declared.ablation_keys if len({json.dumps(g.get(k)) for g in given}) > 1]
    return out


MIN_WINDOW = 3  # steps: a training figure over fewer is shown, not ranked


def window(steps: int) -> int:
    """The steps a training figure averages: the last quarter of the run, at least
    MIN_WINDOW (all of a shorter run)."""
    return min(steps, max(MIN_WINDOW, math.ceil(steps / 4)))


def last_figures(run: RunData) -> tuple[dict[str, Any], dict[str, tuple[float, float]], int]:
    """The values of the declared table columns (a rate as a fraction: the mean over the
    last ``window`` steps, with its 95 % interval over those steps; a plain number at the
    last step), at the first step too for those that show it (a loss: whether the run
    learned); and the window's length. One noisy step never decides a comparison."""
    out: dict[str, Any] = {}
    intervals: dict[str, tuple[float, float]] = {}
    last = window(len(run.steps))
    for column in run.declared.columns:
        values = [column.value(s) for s in run.steps if is_number(column.value(s))]
        if not column.table or not values:
            continue
        if column.first:
            out |= {f"{column.column}_first": values[0], f"{column.column}_last": values[-1]}
        elif column.fraction:
            recent = [float(column.value(s)) for s in run.steps[-last:] if is_number(column.value(s))]
            if recent:
                out[column.column] = math.fsum(recent) / len(recent)
                interval = mean_interval({f"{i:09d}": v for i, v in enumerate(recent)})
                if interval:
                    intervals[column.column] = interval
        elif is_number(column.value(run.steps[-1])):
            out[column.column] = values[-1]
    return out, intervals, last


def column_figures(owner: dict[tuple[str, str], RunData], row: str, column: str) -> dict[str, float] | None:
    """The per-task figures behind a cell (None where the run did not record them)."""
    run = owner.get((row, column))
    return run.task_figures.get(column.split(" ", 1)[1]) if run is not None else None


def avg_parts(table: Table, column: str) -> list[str]:
    """The benchmark columns an "Avg METRIC" column averages."""
    metric = column.removeprefix("Avg ")
    return [c for c in table.metric_columns if not c.startswith("Avg ") and c.split(" ", 1)[1] == metric]


def paired_in(table: Table, owner: dict, column: str, row: str, other: str) -> dict | None:
    """``row`` minus ``other`` in ``column``, paired over their common tasks
    (``intervals.paired``); an Avg column's from its benchmarks' (their mean, the errors
    combined as in ``average_interval``). None where a side lacks per-task figures."""
    if column.startswith("Avg "):
        parts = [paired_in(table, owner, c, row, other) for c in avg_parts(table, column)]
        if not parts or not all(p and p["interval"] for p in parts):
            return None
        difference = sum(p["difference"] for p in parts) / len(parts)
        low, high = average_interval(difference, [p["interval"] for p in parts])
        return {"difference": difference, "interval": (low, high), "tasks": sum(p["tasks"] for p in parts),
                "significant": low > 0 or high < 0}
    mine, theirs = column_figures(owner, row, column), column_figures(owner, other, column)
    return paired(mine, theirs) if mine and theirs else None


def tied(table: Table, owner: dict, column: str, a: str, b: str) -> bool:
    """Whether two cells do not differ at 95 %: paired over common tasks where both have
    per-task figures, else their intervals overlap, else their values are equal."""
    pair = paired_in(table, owner, column, a, b)
    if pair is not None and pair["interval"]:
        return not pair["significant"]
    ia, ib = table.intervals.get((a, column)), table.intervals.get((b, column))
    if ia and ib:
        return ia[0] <= ib[1] and ib[0] <= ia[1]
    return table.frame.at[a, column] == table.frame.at[b, column]


def figure_tasks(owner: dict, row: str, column: str) -> int | None:
    """How many tasks a cell's figure rests on, where the run says."""
    run = owner.get((row, column))
    if run is None:
        return None
    metric = column.split(" ", 1)[1]
    if metric in run.metric_tasks:
        return run.metric_tasks[metric]
    if metric in run.task_figures:
        return len(run.task_figures[metric])
    return len(run.task_set) if run.task_set is not None else None


def too_few_tasks(table: Table, owner: dict) -> None:
    """A figure over fewer than MIN_RANKED_TASKS tasks is shown but not ranked (one task
    more or less moves it by ten points or more): marked with a section sign."""
    for (row, column) in list(owner):
        tasks = figure_tasks(owner, row, column)
        if tasks is not None and tasks < MIN_RANKED_TASKS and is_number(table.frame.at[row, column]):
            table.marks[(row, column)] = table.marks.get((row, column), "") + "§"
    if any("§" in mark for mark in table.marks.values()):
        table.notes.append(f"§ a figure over fewer than {MIN_RANKED_TASKS} tasks: shown, not ranked.")


def rank(table: Table, owner: dict | None = None) -> None:
    """Best (1) and second (2) per metric column among complete rows over the column's tasks
    (a cell marked ‡ or § is not ranked), higher is better unless the column is one of
    ``lower_better``: rank 1 is the top figure and every row that does not differ from it
    at 95 % (``tied``: paired over common tasks where per-task figures exist, else by
    overlapping intervals); rank 2 the best of the rest and the rows tied with it. A tie is
    shown as a tie: every row of it is marked."""
    owner = owner or {}
    for column in table.metric_columns:
        rows = [row for row in table.frame.index if table.status.get(row, "complete") == "complete"
                and is_number(table.frame.at[row, column])
                and not {"‡", "§"} & set(table.marks.get((row, column), ""))]
        if len(rows) < 2:
            continue
        rows.sort(key=lambda r: table.frame.at[r, column], reverse=column not in table.lower_better)
        first = [r for r in rows if r == rows[0] or tied(table, owner, column, rows[0], r)]
        rest = [r for r in rows if r not in first]
        if len(first) == len(rows):
            continue  # no row differs from the best: nothing to mark
        second = [r for r in rest if r == rest[0] or tied(table, owner, column, rest[0], r)]
        for r in first:
            table.ranks[(r, column)] = 1
        for r in second:
            table.ranks[(r, column)] = 2


def deltas(table: Table, baseline: str | None, owner: dict | None = None) -> None:
    """Each row minus the baseline per metric column (``table.deltas``), and where per-task
    figures exist the paired difference with its interval (``table.paired``)."""
    import pandas as pd

    if baseline is None or baseline not in table.frame.index:
        return
    out = pd.DataFrame(index=table.frame.index, columns=table.metric_columns, dtype=object)
    for column in table.metric_columns:
        base = table.frame.at[baseline, column]
        for row in table.frame.index:
            value = table.frame.at[row, column]
            out.at[row, column] = (value - base) if row != baseline and is_number(value) and is_number(base) else None
            if out.at[row, column] is not None and owner:
                pair = paired_in(table, owner, column, row, baseline)
                if pair is not None:
                    table.paired[(row, column)] = pair
    table.deltas = out


def check_data(table: Table, owner: dict[tuple[str, str], RunData], warnings: list[str], strict: bool) -> None:
    """A column's runs must have read the same data: the first run's digest is the column's;
    a run whose digest disagrees on a kind both have (sha256, md5, tasks_sha256) is marked
    with a dagger (or refused with --strict)."""
    first: dict[str, RunData] = {}
    for (row, column), run in owner.items():
        if not run.digest:
            continue
        ref = first.setdefault(column, run)
        shared = set(ref.digest) & set(run.digest)
        if any(ref.digest[k] != run.digest[k] for k in shared):
            message = (f"column {column!r}: {run.path} read other data than {ref.path} "
                       f"({', '.join(f'{k} {run.digest[k][:12]} vs {ref.digest[k][:12]}' for k in sorted(shared))})")
            if strict:
                raise ReportError(message + " (--strict)")
            table.marks[(row, column)] = "†"
            warnings.append(message)
    if table.marks:
        table.notes.append("† the run read other benchmark data than the column's first run (see the warnings).")


def check_tasks(table: Table, owner: dict[tuple[str, str], RunData], warnings: list[str], strict: bool) -> None:
    """A column ranks runs over the same tasks: the first run's tasks are the column's; a run
    over other tasks (a partial samples file, --tasks, skipped tasks left out) is marked with
    a double dagger and named in the warnings (refused with --strict), and so is a partial
    run on its own."""
    first: dict[str, RunData] = {}
    for (row, column), run in owner.items():
        if run.task_set is None:
            continue
        ref = first.setdefault(column, run)
        differs = run.task_set != ref.task_set
        if differs:
            message = (f"column {column!r}: {run.path} covers {len(run.task_set)} tasks, {ref.path} "
                       f"{len(ref.task_set)} ({len(run.task_set ^ ref.task_set)} in one only): their figures are "
                       f"not comparable")
            if strict:
                raise ReportError(message + " (--strict)")
            warnings.append(message)
        if differs or run.partial:
            table.marks[(row, column)] = table.marks.get((row, column), "") + "‡"
    if any("‡" in mark for mark in table.marks.values()):
        table.notes.append("‡ a partial run (not the whole benchmark's tasks) or a run over other tasks than the "
                           "column's first (see the warnings): not ranked.")


def runs_table(runs: list[RunData]):
    import pandas as pd

    rows = [{"label": r.label, "kind": r.kind, "benchmark": r.benchmark, "status": r.status,
             "data": next((f"{k} {r.digest[k][:12]}" for k in ("sha256", "tasks_sha256", "md5") if k in r.digest), ""),
             "path": str(r.path)}
            for r in runs]
    frame = pd.DataFrame(rows, columns=["label", "kind", "benchmark", "status", "data", "path"])
    frame.index = [f"{i + 1}" for i in range(len(rows))]
    return Table("runs", "Runs", frame.astype(object))


# -- 4. figures ------------------------------------------------------------------------------

class Figures:
    """The figures of a report, each a PNG (matplotlib, Agg)."""

    def __init__(self):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.out: list[Figure] = []

    def save(self, fig, name: str, title: str) -> None:
        fig.suptitle(title)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        self.plt.close(fig)
        self.out.append(Figure(name, title, buf.getvalue()))


def figures(runs: list[RunData], code: Table | None) -> list[Figure]:
    out = Figures()
    train = [r for r in runs if r.kind == "train" and r.steps]
    step_figures(out, train)
    evaluated = sorted({(where, metric) for r in train for s in r.steps
                        for where, metrics in (s.get("evaluation") or {}).items() for metric in metrics})
    if evaluated:
        over_steps(out, "evaluation", "Evaluation of the policies during training", train,
                   [(f"{where} {metric}", [(metric, lambda run, s, w=where, m=metric:
                                            ((s.get("evaluation") or {}).get(w) or {}).get(m))])
                    for where, metric in evaluated])
    if code is not None:
        benchmark_bars(out, code)
    best_of_n_curves(out, [r for r in runs if r.kind == "tts" and r.curves and r.status == "complete"])
    sweeps(out, [r for r in train if r.status == "complete"])
    return out.out


def run_label(run: RunData) -> str:
    return run.label if run.status == "complete" else f"{run.label} ({run.status})"


def over_steps(out: Figures, name: str, title: str, train: list[RunData], panels: list[tuple[str, list]]) -> None:
    """One panel per (title, [(legend, get(run, step row))]), each run's series over its steps."""
    from matplotlib.ticker import MaxNLocator

    panels = [(t, series) for t, series in panels
              if any(is_number(get(r, s)) for r in train for _, get in series for s in r.steps)]
    if not panels:
        return
    fig, axes = out.plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
    for ax, (panel_title, series) in zip(axes[0], panels):
        steps = set()
        for run in train:
            for legend, get in series:
                points = [(s["step"], get(run, s)) for s in run.steps if is_number(get(run, s))]
                steps |= {x for x, _ in points}
                if points:
                    ax.plot(*zip(*points), marker="o", markersize=3,
                            label=f"{run_label(run)}: {legend}" if len(train) > 1 else legend)
        ax.set_title(panel_title)
        ax.set_xlabel("step")
        if len(steps) <= 12:  # few steps: each one a tick (a single point gets no fractional axis)
            ax.set_xticks(sorted(steps))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    out.save(fig, name, title)


def step_figures(out: Figures, train: list[RunData]) -> None:
    """The figures over steps the trainers declare (their columns' ``figure`` and ``panel``),
    each with the runs whose trainer plots into it."""
    plotted = [c for c in declared_union(train, lambda d: d.columns) if c.figure is not None]
    for figure in dict.fromkeys(c.figure for c in plotted):
        panels: dict[str, list] = {}
        for c in (c for c in plotted if c.figure == figure):
            panels.setdefault(c.panel, []).append((c.label, lambda run, s, c=c: declared_value(run, c, s)))
        runs = [r for r in train if any(d.figure == figure for d in r.declared.columns)]
        over_steps(out, figure.name, figure.title, runs, list(panels.items()))


def declared_value(run: RunData, column: LogColumn, row: dict) -> Any:
    """A step row's value of ``column`` as the run's own trainer declares it (an sft run
    logs its role's loss under the same column)."""
    own = next((c for c in run.declared.columns if c.column == column.column and c.figure == column.figure), None)
    return own.value(row) if own is not None else None


def benchmark_bars(out: Figures, code: Table) -> None:
    """The first metric of each benchmark, one bar per complete row."""
    first_metric = {}
    for column in code.metric_columns:
        bench, metric = column.split(" ", 1)
        if bench != "Avg":
            first_metric.setdefault(bench, column)
    rows = [r for r in code.frame.index if code.status.get(r, "complete") == "complete"]
    if not first_metric or not rows:
        return
    fig, ax = out.plt.subplots(figsize=(max(5, 1.6 * len(first_metric) * max(1, len(rows)) / 2), 3.8))
    width = 0.8 / len(rows)
    for i, row in enumerate(rows):
        values = [code.frame.at[row, c] for c in first_metric.values()]
        xs = [j + i * width for j in range(len(values))]
        ax.bar(xs, [100 * v if is_number(v) else 0 for v in values], width, label=row)
    ax.set_xticks([j + width * (len(rows) - 1) / 2 for j in range(len(first_metric))])
    ax.set_xticklabels([c for c in first_metric.values()], fontsize=8)
    ax.set_ylabel("%")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    out.save(fig, "benchmarks", "Code generation per benchmark")


def best_of_n_curves(out: Figures, curved: list[RunData]) -> None:
    """Best-of-N accuracy over N suites, one line per M codes (tts --curves)."""
    if not curved:
        return
    fig, axes = out.plt.subplots(1, len(curved), figsize=(5 * len(curved), 3.6), squeeze=False)
    for ax, run in zip(axes[0], curved):
        grid: dict[int, list[tuple[int, float]]] = {}
        for key, value in run.curves.items():
            m, n = (int(part.split("=")[1]) for part in key.split(","))
            grid.setdefault(m, []).append((n, 100 * value))
        for m, points in sorted(grid.items()):
            ax.plot(*zip(*sorted(points)), marker="o", label=f"M = {m} codes")
        ax.set_title(f"{run.label} ({run.benchmark})")
        ax.set_xlabel("N test suites")
        ax.set_ylabel("Best-of-N accuracy %")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    out.save(fig, "best_of_n", "Best-of-N: accuracy of the selected code")


def sweeps(out: Figures, complete: list[RunData]) -> None:
    """Per trainer, each numeric ablation option its complete runs vary (an alpha sweep):
    their last evaluation, or else the trainer's ``sweep`` columns, at the last step."""
    found = []
    for trainer in sorted({r.declared.trainer for r in complete}):
        runs = [r for r in complete if r.declared.trainer == trainer]
        for key, meaning in runs[0].declared.ablation_keys.items():
            values = [r.config.get("trainer", {}).get(key) for r in runs]
            if all(is_number(v) for v in values) and len(set(values)) >= 2:
                found.append((trainer, key, meaning, runs))
    keys = [key for _, key, _, _ in found]
    for trainer, key, meaning, runs in found:
        name = f"{key}_sweep" if keys.count(key) == 1 else f"{slug(trainer)}_{key}_sweep"
        sweep_figure(out, name, key, meaning, runs)


def sweep_figure(out: Figures, name: str, key: str, meaning: str, runs: list[RunData]) -> None:
    series = sorted({(w, m) for r in runs for s in r.steps[-1:] for w, ms in (s.get("evaluation") or {}).items()
                     for m in ms})
    getters = ([(f"{w} {m}", lambda r, w=w, m=m: ((r.steps[-1].get("evaluation") or {}).get(w) or {}).get(m))
                for w, m in series] if series else
               [(c.label, lambda r, c=c: c.value(r.steps[-1])) for c in runs[0].declared.columns if c.sweep])
    if not getters:
        return
    fig, ax = out.plt.subplots(figsize=(5.5, 3.6))
    for legend, get in getters:
        points = sorted((r.config["trainer"][key], 100 * get(r)) for r in runs if is_number(get(r)))
        if points:
            ax.plot(*zip(*points), marker="o", label=legend)
    ax.set_xlabel(f"{key} ({meaning})" if meaning else key)
    ax.set_ylabel("% at the last step")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    out.save(fig, name, f"{key[:1].upper()}{key[1:]} sweep")


# -- 5. details ------------------------------------------------------------------------------

def details(runs: list[RunData], baseline: str | None) -> list[Table]:
    import pandas as pd

    out = []
    graded = [r for r in runs if r.kind in ("evaluate", "evalplus") and r.tasks and r.status == "complete"]
    for bench in sorted({r.benchmark for r in graded}):
        these = [r for r in graded if r.benchmark == bench]
        frame = pd.DataFrame({r.label: pd.Series(r.tasks, dtype=object) for r in these}).astype(object)
        frame = frame.where(frame.notna(), None)
        if baseline is not None and baseline in frame.columns:
            for r in these:
                if r.label == baseline:
                    continue
                lost = [t for t in frame.index if is_number(frame.at[t, baseline]) and frame.at[t, baseline] > 0
                        and frame.at[t, r.label] == 0]
                if lost:
                    sub = frame.loc[lost, [baseline, r.label]]
                    tasks = f"{len(lost)} task{'s' if len(lost) != 1 else ''}"
                    out.append(Table(f"lost-{slug(bench)}-{slug(r.label)}",
                                     f"{bench}: {tasks} {r.label} fails that {baseline} passes", sub,
                                     metric_columns=[baseline, r.label]))
        out.append(Table(f"tasks-{slug(bench)}", f"{bench}: pass rate per task", frame, metric_columns=list(frame.columns)))
    return out


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


# -- the flow --------------------------------------------------------------------------------

def build_report(plugins, cfg: ReportConfig) -> Report:
    if not cfg.runs:
        raise ConfigError("codea1 report: name at least one run directory")
    labels = labels_for(cfg.runs, cfg.names)
    runs = [read_run(plugins, path, label) for path, label in zip(cfg.runs, labels)]
    baseline = None
    if cfg.baseline is not None:
        by_path = {str(r.path.resolve()): r.label for r in runs}
        baseline = by_path.get(str(Path(cfg.baseline).resolve()), cfg.baseline)
        if baseline not in labels:
            raise ConfigError(f"--baseline {cfg.baseline}: neither a run given nor a label"
                              f"{did_you_mean(cfg.baseline, labels)}")
    warnings = [f"{r.path}: {r.status}; shown with its status, never ranked" for r in runs if r.status != "complete"]
    warnings += [f"{r.path}: {r.in_process[0]} of {r.in_process[1]} verdicts judged in the program's own process "
                 f"(script tests a runner inside the program decided)" +
                 (f"; its '{OUTSIDE}' columns: the same figures over the {r.outside_tasks} tasks judged wholly "
                  f"outside (a gap is the in-process share's doing)" if r.outside_tasks is not None else "")
                 for r in runs if r.in_process[0]]
    warnings += [f"{r.path}: {r.declared.warning}" for r in runs if r.declared is not None and r.declared.warning]
    warnings += [f"{r.path}: a partial run ({r.partial}): its figures are not the benchmark's" for r in runs
                 if r.partial]
    warnings += [f"{r.path}: {len(r.skipped)} task(s) skipped, {r.skipped_count_as} (" +
                 "; ".join(f"{t}: {why}" for t, why in list(r.skipped.items())[:3]) +
                 (f"; {len(r.skipped) - 3} more in its results.json" if len(r.skipped) > 3 else "") + ")"
                 for r in runs if r.skipped]
    built = [
        metric_table("code", "Code generation", [r for r in runs if r.kind in ("evaluate", "evalplus")], avg=True),
        metric_table("tests", "Test generation", [r for r in runs if r.kind == "evaluate-tests"]),
        metric_table("best_of_n", "Best-of-N (test-time scaling)", [r for r in runs if r.kind == "tts"]),
        (training_table([r for r in runs if r.kind == "train"]), {}),
        (training_evaluation_table([r for r in runs if r.kind == "train"]), {}),
    ]
    tables = [t for t, _ in built if t is not None]
    code = built[0][0]
    for table, owner in built:
        if table is None:
            continue
        check_data(table, owner, warnings, cfg.strict)
        check_tasks(table, owner, warnings, cfg.strict)
        too_few_tasks(table, owner)
        rank(table, owner)
        deltas(table, baseline, owner)
        if table.intervals:
            table.notes.append(f"In square brackets: the 95 % interval over tasks ({METHOD['method']}, "
                               f"{METHOD['resamples']} draws, seed {METHOD['seed']}; an Avg column's from its "
                               f"benchmarks', normal approximation).")
        if table.paired:
            table.notes.append(f"In parentheses: the difference from {baseline} in points, paired over the tasks "
                               f"both scored, with its 95 % interval; * where the interval leaves out 0 "
                               f"(a significant difference).")
        elif table.deltas is not None and any(is_number(v) for v in table.deltas.to_numpy().ravel()):
            table.notes.append(f"In parentheses: the difference from {baseline} in points (no per-task figures "
                               f"to pair: not tested).")
        table.notes.append("Figures in %. Bold: best, with every run that does not differ from it at 95 % "
                           "(paired over common tasks where per-task figures exist, else overlapping "
                           "intervals); underlined: second, likewise (complete runs only).")
    return Report(cfg.title, runs_table(runs), tables, figures(runs, code), details(runs, baseline), warnings,
                  baseline)


def report(plugins, cfg: ReportConfig) -> dict[str, Any]:
    import importlib.util

    missing = [m for m in ("pandas", "matplotlib") if importlib.util.find_spec(m) is None]
    if missing:
        raise ReportError(f"codea1 report needs {' and '.join(missing)}: pip install 'codea1[report]' -c constraints.txt")
    reporters = [plugins.reporters.create(name) for name in cfg.formats]  # unknown formats fail before any work
    out = Path(cfg.out)
    for run in cfg.runs:
        if out.resolve() == Path(run).resolve() or Path(run).resolve() in out.resolve().parents:
            raise ConfigError(f"--out {out}: inside run {run}; a report never writes into the runs it reads")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file is there; a report is a directory (or does not exist yet)")
    if out.exists() and any(out.iterdir()) and not cfg.overwrite:
        raise ConfigError(f"--out {out} is not empty: pass --overwrite to replace the report there")
    built = build_report(plugins, cfg)
    make_directory(out, "--out", "the report directory")
    written = []
    for reporter in reporters:
        written += reporter.write(built, out)
    return {"report": built, "written": [str(p) for p in written]}
