"""``codea1 evaluate-tests``: score generated tests: test-pass@k, mut@k, coverage@k, Mul."""

from __future__ import annotations

from codea1.harness.command import Command
from codea1.harness.commands.shared import (
    benchmark_flags,
    common,
    executor_flags,
    ks,
    limit_flags,
    limits,
    print_metrics,
    run_dir_flags,
)
from codea1.harness.hookspecs import hookimpl


class EvaluateTestsCommand(Command):
    name = "evaluate-tests"
    description = "score generated tests: test-pass@k, mut@k, coverage@k, Mul"

    def add_arguments(self, p):
        benchmark_flags(p, "benchmark with reference solutions (ult, demo, kodcode, ...)")
        p.add_argument("--tests", required=True,
                       help="tests .jsonl (task_id + tests list or completion per line), or 'golden' for the "
                            "benchmark's own")
        executor_flags(p)
        limit_flags(p)
        p.add_argument("--k", type=ks, default=[1, 2, 5], help="comma-separated k (default 1,2,5)")
        p.add_argument("--mutant-timeout", type=float, default=10.0, help="seconds per mutant, all its tests (default 10)")
        p.add_argument("--mut-task-set", choices=("per-k", "largest-k"), default="per-k",
                       help="tasks eligible for mut@k: per k (default), or the largest k's set for every k "
                            "(the reference evaluation fork's behaviour)")
        p.add_argument("--no-coverage", action="store_true", help="skip the coverage stage")
        p.add_argument("--allow-partial", action="store_true",
                       help="score a tests file that lacks some of the selected tasks (labelled PARTIAL)")
        p.add_argument("--suite", type=int, default=0,
                       help="which suite of a task to score when the tests file holds several (default 0, the first)")
        p.add_argument("--allow-other-forms", action="store_true",
                       help="also run asserts outside the paper's form (assert f(args) == answer): operators other "
                            "than ==, bare truthy asserts, data that is code, as before and marked in-process "
                            "(results.json counts them: tests_in_process); for comparability with a benchmark's own "
                            "harness. Training never accepts them")
        run_dir_flags(p)

    def run(self, plugins, args):
        from codea1.harness.flows.evaluate import clock_lines, coverage_line, provenance_line
        from codea1.harness.flows.evaluate_tests import (
            GOLDEN,
            EvaluateTestsConfig,
            count_lines,
            evaluate_tests,
        )

        cfg = EvaluateTestsConfig(**common(args), **limits(args), tests=args.tests, k=args.k, mutant_timeout=args.mutant_timeout,
                                  mut_task_set=args.mut_task_set, coverage=not args.no_coverage, suite=args.suite,
                                  allow_other_forms=args.allow_other_forms, allow_partial=args.allow_partial)
        r = evaluate_tests(plugins, cfg)
        print(f"benchmark {r.get('variant', r['benchmark'])}  tasks {r['counts']['tasks']}  tests {args.tests}")
        if provenance_line(r):
            print(provenance_line(r))
        if r.get("coverage"):
            print(coverage_line(r["coverage"]))
        for line in count_lines(r["counts"])[1:] + clock_lines(r.get("clock")):  # the task count: on the line above
            print(line)
        print_metrics(r["metrics"], r["metric_notes"], width=22, intervals=r.get("intervals"))
        if args.tests == GOLDEN and r.get("golden_note"):
            print(f"\n  note: {r['golden_note']}")
        print(f"\nwrote {args.out}/results.json, tasks.jsonl, config.json, environment.json")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(EvaluateTestsCommand)
