"""Reporter ``html``: report.html, one self-contained page (inline CSS, figures as data URIs,
no script, no external resource) that opens from disk with no server. Tables with the best
value bold and the second underlined; warnings on top; per-task details folded in
``<details>`` elements, shown on demand (which tasks a run fails that the baseline passes,
and every task's pass rate)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from codea1.harness.hookspecs import hookimpl
from codea1.harness.reporting import Report, Reporter, Table

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       color: #1b1b1b; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.best { font-weight: bold; } td.second { text-decoration: underline; }
tr.incomplete td { color: #777; font-style: italic; }
.note { color: #555; font-size: 0.85em; margin: 0.2em 0; }
.warning { background: #fff4e5; border-left: 4px solid #f0a030; padding: 0.4em 0.8em; margin: 0.3em 0; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
.scroll { overflow-x: auto; }  /* a table wider than the page, its words wrapped, scrolls */
"""


def wrappable(text: str) -> str:
    """Escaped, with a line break allowed after "_" and "/" too (as after "-" and spaces):
    a table's column is as narrow as the longest part of its words."""
    return escape(text).replace("_", "_<wbr>").replace("/", "/<wbr>")


def html_table(table: Table) -> str:
    columns = list(table.frame.columns)
    head = "".join(f"<th>{wrappable(table.header(c))}</th>" for c in columns)
    rows = []
    for row in table.frame.index:
        state = table.status.get(row, "complete")
        cells = []
        for column in columns:
            classes = ["num"] if table.numeric(column) else []
            rank = table.ranks.get((row, column))
            classes += ["best"] if rank == 1 else ["second"] if rank == 2 else []
            cells.append(f'<td class="{" ".join(classes)}">{wrappable(table.cell(row, column))}</td>')
        rows.append(f'<tr class="{"complete" if state == "complete" else "incomplete"}">'
                    f"<th>{wrappable(table.row_label(row))}</th>{''.join(cells)}</tr>")
    return (f'<div class="scroll"><table id="table-{escape(table.name)}"><thead><tr><th></th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


class HtmlReporter(Reporter):
    name = "html"
    description = "report.html: one self-contained page (inline CSS, figures as data URIs), details on demand"

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(report.title)}</title>"
                 f"<style>{STYLE}</style></head><body><h1>{escape(report.title)}</h1>"]
        if report.baseline:
            parts.append(f'<p class="note">Baseline: {escape(report.baseline)}.</p>')
        parts += [f'<div class="warning">{escape(w)}</div>' for w in report.warnings]
        for table in report.tables:
            parts.append(f"<h2>{escape(table.title)}</h2>{html_table(table)}")
            parts += [f'<p class="note">{escape(n)}</p>' for n in table.notes]
        if report.figures:
            parts.append("<h2>Figures</h2>")
            for figure in report.figures:
                data = base64.b64encode(figure.png).decode("ascii")
                parts.append(f'<figure id="figure-{escape(figure.name)}"><img alt="{escape(figure.title)}" '
                             f'src="data:image/png;base64,{data}"><figcaption>{escape(figure.title)}</figcaption>'
                             f"</figure>")
        if report.details:
            parts.append("<h2>Per task</h2>")
            for table in report.details:
                parts.append(f"<details><summary>{escape(table.title)}</summary>{html_table(table)}</details>")
        parts.append(f"<h2>Runs</h2>{html_table(report.runs)}</body></html>")
        path = out_dir / "report.html"
        path.write_text("".join(parts), encoding="utf-8")
        return [path]


@hookimpl
def codea1_register_reporters(registry):
    registry.add(HtmlReporter)
