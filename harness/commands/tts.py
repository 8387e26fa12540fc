"""``codea1 tts``: Best-of-N: pick each task's code that passes the most unique generated tests."""

from __future__ import annotations

from codea1.harness.command import Command
from codea1.harness.commands.shared import benchmark_flags, common, executor_flags, percent, run_dir_flags
from codea1.harness.hookspecs import hookimpl


class TTSCommand(Command):
    name = "tts"
    description = "Best-of-N: pick each task's code that passes the most unique generated tests"

    def add_arguments(self, p):
        benchmark_flags(p, "benchmark (its golden tests score the chosen code)")
        p.add_argument("--codes", required=True, help="samples .jsonl: the M candidate codes per task")
        p.add_argument("--tests", required=True, help="tests .jsonl: the N test suites per task")
        executor_flags(p)
        p.add_argument("--test-timeout", type=float, default=2.0, help="seconds per generated test (default 2)")
        p.add_argument("--curves", action="store_true",
                       help="also CURE's per-(n_code, n_test) accuracy grid over the first m codes and n suites")
        run_dir_flags(p)

    def run(self, plugins, args):
        from codea1.harness.flows.tts import TTSConfig, best_of_n

        cfg = TTSConfig(**common(args), codes=args.codes, tests=args.tests, test_timeout=args.test_timeout,
                        curves=args.curves)
        r = best_of_n(plugins, cfg)
        m, c = r["metrics"], r["counts"]
        print(f"benchmark {r['benchmark']}  tasks {c['tasks']}  codes/task {c['max_codes']}  "
              f"suites/task {c['max_suites']}  unique tests {c['unique_tests']} ({c['unparsed_tests']} unparsed)")
        print(f"  best-of-n accuracy   {percent(m['best_of_n'])}   (golden pass rate of the chosen code)")
        print(f"  avg@M (no selection) {percent(m['avg_at_m'])}   (mean golden pass rate of all M codes)")
        print(f"  pass@M (oracle)      {percent(m['oracle'])}   (some code passes: the ceiling of selection)")
        written = ["results.json", "golden/ (evaluate run of the codes)"]
        if c["matrix_rows"]:
            written.insert(1, "matrix.jsonl")
        print(f"\nwrote {args.out}/" + ", ".join(written))
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(TTSCommand)
