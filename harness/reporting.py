"""Reporter plugin base, and the comparison a reporter receives.

The report flow (``codea1.harness.flows.report``) reads the results of evaluate,
evaluate-tests, tts and train runs (and evalplus' ``*_eval_results.json``) into one
``Report``: tables (pandas DataFrames, one row per run label), figures (PNG bytes),
per-task details and warnings. Each reporter writes it in its own format (Markdown, CSV,
LaTeX, HTML, or a third party's: a W&B exporter, say). Reporters never change the runs they
read, and never recompute a figure: every number, rank, delta and mark is in the Report, so
all formats agree. Register through ``codea1_register_reporters``.

A reporter::

    from codea1.api import Reporter, hookimpl

    class JsonReporter(Reporter):
        name = "json"
        description = "the tables as JSON"
        def write(self, report, out_dir):
            path = out_dir / "report.json"
            path.write_text(json.dumps({t.name: t.frame.to_dict() for t in report.tables}))
            return [path]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Table:
    """One comparison table. ``frame``: rows are run labels (the index), columns are plain
    strings; numeric cells of ``metric_columns`` are fractions in [0, 1] (shown as
    percentages), other columns are text or plain numbers. ``ranks[(row, column)]`` is 1
    (best: bold) or 2 (second: underlined) among complete rows; ``deltas`` holds, for metric
    columns, the row minus the baseline row (fractions; None without a baseline);
    ``marks[(row, column)]`` a footnote mark (a dagger: data differs from the column's
    first run); ``status[row]`` is "complete", "interrupted" or "in progress";
    ``headers[column]`` a short header for formats read on a page (a note gives the legend;
    the CSV keeps the column's name); ``lower_better``: metric columns whose best is the
    lowest."""

    name: str
    title: str
    frame: Any
    metric_columns: list[str] = field(default_factory=list)
    ranks: dict[tuple[str, str], int] = field(default_factory=dict)
    deltas: Any = None
    marks: dict[tuple[str, str], str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    lower_better: list[str] = field(default_factory=list)  # metric columns ranked lowest first
    # 95 % intervals over tasks (fractions) per (row, column), and each row's paired difference
    # from the baseline (``harness.intervals.paired``: difference, interval, tasks, significant)
    intervals: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    paired: dict[tuple[str, str], dict] = field(default_factory=dict)

    def row_label(self, row: str) -> str:
        """The row's label, with its status when the run is not complete."""
        state = self.status.get(row, "complete")
        return row if state == "complete" else f"{row} ({state})"

    def cell(self, row: str, column: str, digits: int = 2) -> str:
        """The cell as text: a metric as a percentage, its 95 % interval in brackets where
        known, then the difference from the baseline in points: paired over the common
        tasks, "(+1.20* [+0.3, +2.1])" with a star when its interval leaves out 0, else the
        plain "(+1.20)" (the mark, if any, follows); other values as they are; "" when
        missing. The rank is not in the text: each format marks it its own way."""
        value = self.frame.at[row, column]
        if value is None or (isinstance(value, float) and value != value):
            return ""
        if isinstance(value, str):  # a word in a metric column ("skipped"): no figure to format
            return value
        if column not in self.metric_columns:
            if isinstance(value, float):
                return str(int(value)) if value.is_integer() else f"{value:.4g}"
            return str(value)
        text = f"{100 * float(value):.{digits}f}"
        interval = self.intervals.get((row, column))
        if interval:
            text += f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"
        pair = self.paired.get((row, column))
        if pair is not None and pair.get("interval"):
            low, high = pair["interval"]
            star = "*" if pair["significant"] else ""
            text += f" ({100 * pair['difference']:+.{digits}f}{star} [{100 * low:+.1f}, {100 * high:+.1f}])"
        elif self.deltas is not None and row in self.deltas.index and column in self.deltas.columns:
            delta = self.deltas.at[row, column]
            if delta is not None and delta == delta:
                text += f" ({100 * float(delta):+.{digits}f})"
        return text + self.marks.get((row, column), "")

    def numeric(self, column: str) -> bool:
        """A metric column, or one holding only numbers (steps, a loss): aligned right."""
        values = [v for v in self.frame[column] if v is not None and v == v]
        return column in self.metric_columns or bool(values) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)

    def header(self, column: str) -> str:
        name = self.headers.get(column, column)
        return f"{name} (%)" if column in self.metric_columns else name


@dataclass
class Figure:
    """A PNG image (``png``: its bytes) with a title and a file-safe name."""

    name: str
    title: str
    png: bytes


@dataclass
class Report:
    """Everything a reporter writes. ``runs`` is the table of the runs read (label, kind,
    benchmark, status, data digest, path); ``details`` are per-task tables shown on demand
    (which tasks a run fails that the baseline passes, and every task's pass rate)."""

    title: str
    runs: Table
    tables: list[Table]
    figures: list[Figure] = field(default_factory=list)
    details: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    baseline: str | None = None


class Reporter:
    """Subclasses set ``name`` (the format: "md", "html", ...) and ``description``, may
    declare an ``Options`` dataclass, and implement ``write``."""

    name = ""
    description = ""

    def __init__(self, options: Any = None):
        self.options = options

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        """Write ``report`` under ``out_dir`` (it exists); return the files written."""
        raise NotImplementedError
