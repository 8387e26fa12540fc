"""Reporter ``md``: report.md, GitHub-flavoured Markdown: one pipe table per comparison (best
**bold**, second <u>underlined</u>), the warnings, the figures as PNG files under figures/,
and the per-task details."""

from __future__ import annotations

from pathlib import Path

from codea1.harness.hookspecs import hookimpl
from codea1.harness.reporting import Report, Reporter, Table


def escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> list[str]:
    columns = list(table.frame.columns)
    lines = ["| " + " | ".join([""] + [escape(table.header(c)) for c in columns]) + " |",
             "|" + "---|" + "".join("---:|" if table.numeric(c) else "---|" for c in columns)]
    for row in table.frame.index:
        cells = []
        for column in columns:
            text = escape(table.cell(row, column))
            rank = table.ranks.get((row, column))
            cells.append(f"**{text}**" if rank == 1 else f"<u>{text}</u>" if rank == 2 else text)
        lines.append("| " + " | ".join([escape(table.row_label(row))] + cells) + " |")
    return lines


class MarkdownReporter(Reporter):
    name = "md"
    description = "report.md: Markdown tables (best bold, second underlined), figures as PNG files, per-task details"

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        written = []
        lines = [f"# {escape(report.title)}", ""]
        if report.baseline:
            lines += [f"Baseline: {escape(report.baseline)}.", ""]
        if report.warnings:
            lines += ["**Warnings**", ""] + [f"- {escape(w)}" for w in report.warnings] + [""]
        for table in report.tables:
            lines += [f"## {escape(table.title)}", ""] + markdown_table(table) + [""]
            lines += [f"_{escape(n)}_  " for n in table.notes] + [""]
        if report.figures:
            (out_dir / "figures").mkdir(exist_ok=True)
            lines += ["## Figures", ""]
            for figure in report.figures:
                path = out_dir / "figures" / f"{figure.name}.png"
                path.write_bytes(figure.png)
                written.append(path)
                lines += [f"### {escape(figure.title)}", "", f"![{escape(figure.title)}](figures/{figure.name}.png)", ""]
        if report.details:
            lines += ["## Per task", ""]
            for table in report.details:
                lines += [f"### {escape(table.title)}", ""] + markdown_table(table) + [""]
        lines += ["## Runs", ""] + markdown_table(report.runs) + [""]
        path = out_dir / "report.md"
        path.write_text("\n".join(lines))
        return [path, *written]


@hookimpl
def codea1_register_reporters(registry):
    registry.add(MarkdownReporter)
