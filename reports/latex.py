"""Reporter ``tex``: report.tex, a LaTeX document with one ``tabular`` per comparison (best
\\textbf, second \\underline, deltas in brackets, as the paper's tables), standard LaTeX only
(the article class and graphicx), so each tabular can be pasted into a paper. Headers of
several words are stacked (``\\shortstack``), and a table still wider than the text is
scaled down to its width (``\\resizebox``): every table fits the page."""

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
    spec = "l" + "".join("r" if table.numeric(c) else "l" for c in columns)
    headers = [stacked(table.header(c), "r" if table.numeric(c) else "l") for c in columns]
    lines = [r"\begin{tabular}{" + spec + "}", r"\hline", " & ".join([""] + headers) + r" \\", r"\hline"]
    for row in table.frame.index:
        cells = []
        for column in columns:
            text = escape(table.cell(row, column))
            rank = table.ranks.get((row, column))
            cells.append(r"\textbf{" + text + "}" if rank == 1 else r"\underline{" + text + "}" if rank == 2 else text)
        lines.append(" & ".join([escape(table.row_label(row))] + cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}"]
    return lines


def stacked(header: str, align: str) -> str:
    """A header of several words, one word a line (each a strut high, so lines with and
    without descenders are evenly spaced): the column is as wide as its figures."""
    words = header.split(" ")
    if len(words) == 1:
        return escape(header)
    return rf"\shortstack[{align}]{{" + r"\\".join(r"\strut " + escape(w) for w in words) + "}"


# 2 cm margins (the article's own leave 345pt of text on A4); \fit: the table in \fitbox at
# its width, or scaled down to the text's width when wider.
PREAMBLE = [r"\setlength{\textwidth}{\paperwidth}", r"\addtolength{\textwidth}{-4cm}",
            r"\setlength{\oddsidemargin}{2cm}", r"\addtolength{\oddsidemargin}{-1in}",
            r"\setlength{\evensidemargin}{\oddsidemargin}", r"\newsavebox{\fitbox}",
            r"\newcommand{\fit}{\ifdim\wd\fitbox>\linewidth\resizebox{\linewidth}{!}{\usebox{\fitbox}}"
            r"\else\usebox{\fitbox}\fi}"]


class LatexReporter(Reporter):
    name = "tex"
    description = "report.tex: one tabular per table (best bold, second underlined), plain LaTeX"

    def write(self, report: Report, out_dir: Path) -> list[Path]:
        lines = [r"\documentclass{article}", r"\usepackage[utf8]{inputenc}", r"\usepackage{graphicx}", *PREAMBLE,
                 r"\begin{document}", r"\section*{" + escape(report.title) + "}"]
        for w in report.warnings:
            # a path may break after any "/": a warning naming two runs' paths fits the page
            lines.append(r"\noindent{\sloppy Warning: " + escape(w).replace("/", r"/\allowbreak{}") + r"\par}")
        for table in report.tables + [report.runs]:
            lines += [r"\subsection*{" + escape(table.title) + "}", r"{\small\setlength{\tabcolsep}{4pt}",
                      r"\begin{lrbox}{\fitbox}", *tabular(table), r"\end{lrbox}\fit}", ""]
            lines += [r"\par\noindent\textit{" + escape(n) + "}" for n in table.notes]
        lines.append(r"\end{document}")
        path = out_dir / "report.tex"
        path.write_text("\n".join(lines) + "\n")
        return [path]


@hookimpl
def codea1_register_reporters(registry):
    registry.add(LatexReporter)
