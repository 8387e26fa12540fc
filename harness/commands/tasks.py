"""``codea1 tasks``: list a benchmark's tasks."""

from __future__ import annotations

import json

from codea1.harness.command import Command
from codea1.harness.commands.shared import key_values
from codea1.harness.hookspecs import hookimpl


class TasksCommand(Command):
    name = "tasks"
    description = ("list a benchmark's tasks: id, entry point, number of golden tests as loaded (a test script "
                   "counts once: a run may split it)")

    def add_arguments(self, p):
        p.add_argument("--benchmark", required=True, help="benchmark name (see `codea1 plugins`)")
        p.add_argument("--data", help="benchmark data file or directory")
        p.add_argument("--benchmark-opt", action="append", default=[], metavar="KEY=VALUE", help="benchmark option")
        p.add_argument("--json", action="store_true", help="print JSON lines instead of a table")

    def run(self, plugins, args):
        from codea1.harness.run import create_benchmark

        problems = create_benchmark(plugins, args.benchmark, args.data,
                                    key_values(args.benchmark_opt, "--benchmark-opt")).load()
        for p in problems:
            if args.json:
                print(json.dumps({"task_id": p.task_id, "entry_point": p.entry_point, "tests": len(p.tests)}))
            else:
                print(f"{p.task_id:<32} {p.entry_point:<32} {len(p.tests):>6} tests")
        if not args.json:
            print(f"\n{len(problems)} tasks in {args.benchmark}")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(TasksCommand)
