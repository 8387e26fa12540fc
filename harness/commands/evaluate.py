"""``codea1 evaluate``: score a samples file on a benchmark (pass@k, avg@k)."""

from __future__ import annotations

from pathlib import Path

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
from codea1.harness.errors import ConfigError
from codea1.harness.hookspecs import hookimpl


def default_out(samples: str | None) -> str:
    """evalplus' place for results when none is given: beside the samples (its
    ``samples_eval_results.json``; a run directory here, ``samples_eval/``)."""
    if not samples:
        raise ConfigError("--out is required when --samples is not given: the samples are the benchmark's own, "
                          "with no folder of yours to put the run beside")
    path = Path(samples)
    stem = path.name[:-len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return str(path.with_name(stem + "_eval"))


class EvaluateCommand(Command):
    name = "evaluate"
    description = "score a samples file on a benchmark (pass@k, avg@k)"

    def add_arguments(self, p):
        benchmark_flags(p, "benchmark name (see `codea1 plugins`)")
        p.add_argument("--samples", help="samples .jsonl (solution|completion per line) or evalplus samples directory")
        executor_flags(p)
        limit_flags(p)
        p.add_argument("--k", type=ks, default=[1], help="comma-separated k for pass@k/avg@k (default 1)")
        run_dir_flags(p, out_required=False,
                      out_help="run directory (resumed when it exists); without it, beside --samples: "
                               "SAMPLES_eval/ for SAMPLES.jsonl, where evalplus writes SAMPLES_eval_results.json")
        p.add_argument("--per-task", action="store_true", help="print the per-task table whatever the task count")
        p.add_argument("--no-reference-cache", action="store_true", help="recompute reference outputs")
        p.add_argument("--no-dedupe", action="store_true",
                       help="execute every sample, even identical programs of the same task")
        p.add_argument("--allow-partial", action="store_true",
                       help="score a samples file that lacks some of the selected tasks (without it the run is "
                            "refused, as evalplus refuses it); its figures are labelled partial everywhere")
        p.add_argument("--exclude-skipped", action="store_true",
                       help="leave tasks that cannot be judged here (a library missing, the reference failing) out "
                            "of the figures, labelled; by default they count as failures, as bigcodebench counts them")
        p.add_argument("--test-details", action="store_true",
                       help="evalplus' --test-details: run every test of every sample instead of stopping at its "
                            "first failure, and record them (up to 64 failing tests a sample, in verdicts.jsonl and "
                            "*_eval_results.json); verdicts and pass@k are the same, plus:pass@k "
                            "then counts the plus tests of samples that failed a base test too (slower)")

    def run(self, plugins, args):
        from codea1.harness.flows.evaluate import (
            EvaluateConfig,
            clock_lines,
            coverage_line,
            evaluate,
            provenance_line,
            verdict_lines,
        )

        if args.out is None:
            args.out = default_out(args.samples)
            print(f"out {args.out} (no --out: beside the samples, where evalplus writes its *_eval_results.json)")
        cfg = EvaluateConfig(**common(args), **limits(args), samples=args.samples, k=args.k,
                             reference_cache=not args.no_reference_cache, dedupe=not args.no_dedupe,
                             allow_partial=args.allow_partial, exclude_skipped=args.exclude_skipped,
                             test_details=args.test_details)
        r = evaluate(plugins, cfg)
        print(f"benchmark {r.get('variant', r['benchmark'])}  samples {r['counts']['samples']}  (resumed {r['resumed']})  "
              f"executor {r['executor']}")
        if provenance_line(r):
            print(provenance_line(r))
        print(coverage_line(r["coverage"]))
        print("\n".join(verdict_lines(r["counts"], r.get("judged")) + clock_lines(r.get("clock"))))
        print_metrics(r["metrics"], r["metric_notes"], same=r["metric_same"], intervals=r.get("intervals"))
        if args.per_task or len(r["tasks"]) <= 40:
            print(f"\n  {'task':<24} {'n':>3} {'pass':>4}  statuses")
            for t, d in r["tasks"].items():
                print(f"  {t:<24} {d['n']:>3} {d['passed']:>4}  {' '.join(d['statuses'])}"
                      + ("   (skipped: " + ("left out" if args.exclude_skipped else "counted as failed") + ")"
                         if "skipped" in d else ""))
        elif r["tasks"]:
            print(f"\n  ({len(r['tasks'])} tasks: --per-task prints the table; results.json holds it)")
        for task, reason in list(r["skipped_tasks"].items())[:10]:
            print(f"  {task}: {reason}")
        print(f"\nwrote {args.out}/results.json, verdicts.jsonl, config.json, environment.json")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(EvaluateCommand)
