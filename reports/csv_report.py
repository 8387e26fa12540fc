"""Reporter ``csv``: one CSV file per table (TABLE.csv), for scripts and spreadsheets.
Metric cells stay fractions in [0, 1], as in results.json (ten significant digits); beside each metric column
"COLUMN low" and "COLUMN high" (its 95 % interval over tasks), with a baseline "COLUMN delta" (the row minus the
baseline) and, where it was paired over common tasks, "COLUMN delta low", "COLUMN delta high" and "COLUMN delta
significant" (the interval leaves out 0); for every table a "status" column
(complete, interrupted, in progress). Ranks and data marks are in "rank" and "marks"
columns as text (e.g. "humaneval+ avg@1:1"). Per-task details go to tasks-*.csv and
lost-*.csv."""

from __future__ import annotations

from pathlib import Path

from codea1.harness.hookspecs import hookimpl
from codea1.harness.reporting import Report, Reporter, Table


def table_frame(table: Table):
    frame = table.frame.copy()
    for column in table.metric_columns:
        at = list(frame.columns).index(column) + 1
        added = {}
        if table.intervals:
            added[f"{column} low"] = [(table.intervals.get((row, column)) or (None, None))[0] for row in frame.index]
            added[f"{column} high"] = [(table.intervals.get((row, column)) or (None, None))[1] for row in frame.index]
        if table.deltas is not None:
            added[f"{column} delta"] = table.deltas[column]
        if table.paired:
            pairs = [table.paired.get((row, column)) or {} for row in frame.index]
            added[f"{column} delta low"] = [(p.get("interval") or (None, None))[0] for p in pairs]
            added[f"{column} delta high"] = [(p.get("interval") or (None, None))[1] for p in pairs]
            added[f"{column} delta significant"] = [p.get("significant") for p in pairs]
        for offset, (name, values) in enumerate(added.items()):
            frame.insert(at + offset, name, list(values))
    frame.insert(0, "status", [table.status.get(row, "complete") for row in frame.index])
    frame["rank"] = [";".join(f"{c}:{r}" for (row_, c), r in sorted(table.ranks.items()) if row_ == row)
                     for row in frame.index]
    frame["marks"] = [";".join(f"{c}:{m}" for (row_, c), m in sorted(table.marks.items()) if row_ == row)
                      for row in frame.index]
    frame.index.name = "label"
    for column in frame.columns:  # ten significant digits: what a figure means, not its float noise
        frame[column] = [float(f"{v:.10g}") if isinstance(v, float) else v for v in frame[column]]
    return frame


class CsvReporter(Reporter):
    name = "csv"
    description = "one CSV per table: fractions, deltas against the baseline, status, ranks"

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        written = []
        for table in [*report.tables, *report.details]:
            path = out_dir / f"{table.name}.csv"
            table_frame(table).to_csv(path)
            written.append(path)
        path = out_dir / "runs.csv"
        report.runs.frame.to_csv(path, index=False)
        return [*written, path]


@hookimpl
def codea1_register_reporters(registry):
    registry.add(CsvReporter)
