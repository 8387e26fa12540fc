"""``codea1 show``: one run directory at a glance."""

from __future__ import annotations

import json

from codea1.harness.command import Command
from codea1.harness.commands.shared import print_metrics
from codea1.harness.hookspecs import hookimpl


class ShowCommand(Command):
    name = "show"
    description = "one run directory at a glance: kind, status, key config, headline figures"

    def add_arguments(self, p):
        p.add_argument("run", metavar="RUN", help="a run directory (evaluate, evaluate-tests, generate, tts, train) "
                                                  "or a report directory")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")

    def run(self, plugins, args):
        from codea1.harness.flows.show import show

        r = show(args.run, plugins)
        if args.json:
            print(json.dumps(r, indent=1))
            return 0
        print(f"{r['path']}: {r['kind']}, {r['status']}" + (f" ({r['state']})" if r["state"] else ""))
        for label, value in r["config"].items():
            print(f"  {label:<12} {value}")
        if r["lines"] or r["metrics"] or r["metric_notes"]:
            print()
        for line in r["lines"]:
            print(line)
        if r["metrics"] or r["metric_notes"]:
            print_metrics(r["metrics"], r["metric_notes"], width=max(map(len, r["metrics"] or [""]), default=0) + 2,
                          same=r.get("metric_same"), intervals=r.get("intervals"))
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(ShowCommand)
