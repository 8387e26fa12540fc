"""Reporter ``csv``: one CSV file per table (TABLE.csv), for scripts and spreadsheets.
Metric cells stay fractions in [0, 1], as in results.json (ten significant digits); beside each metric column with a
baseline, "COLUMN delta" (the row minus the baseline) and for every table a "status" column
(complete, interrupted, in progress). Ranks and data marks are in "rank" and "marks"
columns as text (e.g. "humaneval+ avg@1:1"). Per-task details go to tasks-*.csv and
lost-*.csv."""

from __future__ import annotations

from pathlib import Path

from codea1.harness.hookspecs import hookimpl
from codea1.harness.reporting import Report, Reporter, Table


def table_frame(table: Table):
    frame = table.frame.copy()
    if table.deltas is not None:
        for column in table.metric_columns:
            frame.insert(list(frame.columns).index(column) + 1, f"{column} delta", table.deltas[column])
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
