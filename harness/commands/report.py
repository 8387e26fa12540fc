"""``codea1 report``: compare runs: tables and figures."""

from __future__ import annotations

from codea1.harness.command import Command
from codea1.harness.commands.shared import key_values, task_list
from codea1.harness.hookspecs import hookimpl


class ReportCommand(Command):
    name = "report"
    description = "compare runs (evaluate, evaluate-tests, tts, train, evalplus results): tables and figures"

    def add_arguments(self, p):
        p.add_argument("runs", nargs="+", metavar="RUN", help="run directories, or evalplus *_eval_results.json files")
        p.add_argument("--baseline", metavar="RUN", help="deltas against this run (a RUN given, or its label)")
        p.add_argument("--name", action="append", default=[], metavar="RUN=LABEL",
                       help="the row label of a run; runs with one label share a row (repeatable)")
        p.add_argument("--format", default="md,csv,tex,html", help="reporters, comma-separated (default: md,csv,tex,html)")
        p.add_argument("--title", default="codea1 report")
        p.add_argument("--strict", action="store_true", help="refuse runs of other data in one column instead of marking them")
        p.add_argument("--out", required=True, help="report directory (never a run directory)")
        p.add_argument("--overwrite", action="store_true", help="replace the report in --out")

    def run(self, plugins, args):
        from codea1.harness.flows.report import ReportConfig, report

        cfg = ReportConfig(runs=args.runs, out=args.out, formats=task_list(args.format), baseline=args.baseline,
                           names=key_values(args.name, "--name"), title=args.title, strict=args.strict,
                           overwrite=args.overwrite)
        r = report(plugins, cfg)
        built = r["report"]
        for warning in built.warnings:
            print(f"warning: {warning}")
        for table in built.tables:
            print(f"{table.title}: {len(table.frame.index)} rows x {len(table.metric_columns)} figures")
        print(f"{len(built.figures)} figures, {len(built.details)} per-task tables")
        print("wrote " + ", ".join(r["written"]))
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(ReportCommand)
