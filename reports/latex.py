"""Reporter ``tex``: report.tex, a LaTeX document with one ``tabular`` per comparison (best
\\textbf, second \\underline, deltas in brackets, as the paper's tables), standard LaTeX only
(no package beyond the article class), so each tabular can be pasted into a paper."""

from __future__ import annotations

from pathlib import Path

from codea1.harness.hookspecs import hookimpl
from codea1.harness.reporting import Report, Reporter, Table

SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
           "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "†": r"$^\dagger$"}


def escape(text) -> str:
    return "".join(SPECIAL.get(c, c) for c in str(text))


def tabular(table: Table) -> list[str]:
    columns = list(table.frame.columns)
    spec = "l" + "".join("r" if c in table.metric_columns else "l" for c in columns)
    lines = [r"\begin{tabular}{" + spec + "}", r"\hline",
             " & ".join([""] + [escape(table.header(c)) for c in columns]) + r" \\", r"\hline"]
    for row in table.frame.index:
        cells = []
        for column in columns:
            text = escape(table.cell(row, column))
            rank = table.ranks.get((row, column))
            cells.append(r"\textbf{" + text + "}" if rank == 1 else r"\underline{" + text + "}" if rank == 2 else text)
        lines.append(" & ".join([escape(table.row_label(row))] + cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}"]
    return lines


class LatexReporter(Reporter):
    name = "tex"
    description = "report.tex: one tabular per table (best bold, second underlined), plain LaTeX"

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        lines = [r"\documentclass{article}", r"\usepackage[utf8]{inputenc}",
                 r"\begin{document}", r"\section*{" + escape(report.title) + "}"]
        for w in report.warnings:
            lines.append(r"\noindent Warning: " + escape(w) + r"\\")
        for table in report.tables + [report.runs]:
            lines += [r"\subsection*{" + escape(table.title) + "}", r"{\small"] + tabular(table) + ["}", ""]
            lines += [r"\par\noindent\textit{" + escape(n) + "}" for n in table.notes]
        lines.append(r"\end{document}")
        path = out_dir / "report.tex"
        path.write_text("\n".join(lines) + "\n")
        return [path]


@hookimpl
def codea1_register_reporters(registry):
    registry.add(LatexReporter)
