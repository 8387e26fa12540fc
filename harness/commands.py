"""The built-in ``codea1`` commands, registered like any plugin's (``codea1_register_commands``).

Each command declares its flags and turns them into its flow's config; the flows
(``codea1.harness.flows``) do the work and are imported only when their command runs, so
``codea1 --help`` stays fast. What a command prints is for people: percentages with a %,
a line on what each figure means; the files it writes keep fractions.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from codea1.harness.cli import Command
from codea1.harness.hookspecs import hookimpl
from codea1.harness.registry import OptionError

# What each figure means, printed beside it.
METRIC_NOTES = {
    "avg@k": "mean pass rate of each task's first k samples",
    "pass@k": "unbiased pass@k over all samples",
    "test-pass@k": "valid tests among the first k, over tasks x k",
    "mut@k": "mutants killed by the first k tests, eligible tasks",
    "Mul@k": "test-pass@k x mut@k",
}


# -- shared flags ----------------------------------------------------------------------------

def key_values(pairs: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        if "=" not in pair:
            raise OptionError(f"{flag} {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
        out[key.strip()] = value
    return out


def ks(text: str) -> list[int]:
    try:
        values = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected comma-separated positive integers") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected comma-separated positive integers")
    return values


def task_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def benchmark_flags(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--benchmark", required=True, help=help)
    p.add_argument("--data", help="benchmark data file or directory (default: the benchmark's own loader)")
    p.add_argument("--benchmark-opt", action="append", default=[], metavar="KEY=VALUE", help="benchmark option")
    p.add_argument("--tasks", type=task_list, metavar="ID,...", help="these tasks only (see `codea1 tasks`)")
    p.add_argument("--limit", type=int, metavar="N", help="the first N tasks only")


def executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="subprocess", help="executor name (default: subprocess)")
    p.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE", help="executor option")
    p.add_argument("--workers", type=int, help="parallel sandbox workers (default: all cores)")


def limit_flags(p: argparse.ArgumentParser) -> None:
    """evalplus' knobs, with evalplus' names and meaning: per test max(floor, factor x the
    reference's time)."""
    p.add_argument("--min-time-limit", type=float, metavar="SECONDS",
                   help="floor of every test's time limit (default: the benchmark's; evalplus' 1 s)")
    p.add_argument("--gt-time-limit-factor", type=float, metavar="X",
                   help="a test's limit is X times the reference solution's time, at least the floor "
                        "(default: the benchmark's; evalplus' 4)")
    p.add_argument("--memory-mb", type=int, metavar="MB",
                   help="address-space limit of each sandboxed program (default: the benchmark's; 4096)")


def limits(args: argparse.Namespace) -> dict:
    return dict(min_time_limit=args.min_time_limit, gt_time_limit_factor=args.gt_time_limit_factor,
                memory_mb=args.memory_mb)


def run_dir_flags(p: argparse.ArgumentParser, what: str = "run directory") -> None:
    p.add_argument("--out", required=True, help=f"{what} (resumed when it exists)")
    p.add_argument("--overwrite", action="store_true", help="discard what --out holds and start over")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def common(args: argparse.Namespace, executor: bool = True) -> dict:
    """The RunConfig fields, from the shared flags."""
    fields = dict(benchmark=args.benchmark, out=args.out, data=args.data, tasks=args.tasks, limit=args.limit,
                  benchmark_options=key_values(args.benchmark_opt, "--benchmark-opt"), overwrite=args.overwrite,
                  progress=not args.no_progress)
    if executor:
        fields.update(executor=args.executor, executor_options=key_values(args.executor_opt, "--executor-opt"),
                      workers=args.workers)
    return fields


def percent(x: float | None) -> str:
    return "   n/a " if x is None else f"{100 * x:6.2f}%"


def print_metrics(metrics: dict, notes: dict, width: int = 18) -> None:
    """One line per metric: its value and what it means, or n/a and why; a note on a metric
    that has a value (what was left out) goes on the same line."""
    for name, value in metrics.items():
        meaning = METRIC_NOTES.get(name.split(":")[-1].split("@")[0] + "@k", "")
        said = "; ".join(x for x in (meaning if value is not None else "", notes.get(name, "")) if x)
        print(f"  {name:<{width}} {percent(value)}" + (f"   ({said})" if said else ""))
    for name, note in notes.items():
        if name not in metrics:
            print(f"  {name:<{width}}    n/a   ({note})")


# -- commands --------------------------------------------------------------------------------

class PluginsCommand(Command):
    name = "plugins"
    description = "list every plugin by kind, name and origin, with its options"

    def add_arguments(self, p):
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def run(self, plugins, args):
        rows = plugins.listing()
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        columns = ("kind", "name", "distribution")
        widths = [max(len(r[c]) for r in rows + [{"kind": "KIND", "name": "NAME", "distribution": "FROM"}])
                  for c in columns]
        print(f"{'KIND':<{widths[0]}}  {'NAME':<{widths[1]}}  {'FROM':<{widths[2]}}  DESCRIPTION")
        for r in rows:
            print(f"{r['kind']:<{widths[0]}}  {r['name']:<{widths[1]}}  {r['distribution']:<{widths[2]}}  "
                  f"{r['description']}")
            if r["options"]:
                opts = ", ".join(f"{o['name']}={_short(o['default'])}" for o in r["options"])
                print(f"{'':<{widths[0]}}  {'':<{widths[1]}}  options: {opts}")
        return 0


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


class TasksCommand(Command):
    name = "tasks"
    description = "list a benchmark's tasks: id, entry point, number of golden tests"

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


class EvaluateCommand(Command):
    name = "evaluate"
    description = "score a samples file on a benchmark (pass@k, avg@k)"

    def add_arguments(self, p):
        benchmark_flags(p, "benchmark name (see `codea1 plugins`)")
        p.add_argument("--samples", help="samples .jsonl (solution|completion per line) or evalplus samples directory")
        executor_flags(p)
        limit_flags(p)
        p.add_argument("--k", type=ks, default=[1], help="comma-separated k for pass@k/avg@k (default 1)")
        run_dir_flags(p)
        p.add_argument("--per-task", action="store_true", help="print the per-task table whatever the task count")
        p.add_argument("--no-reference-cache", action="store_true", help="recompute reference outputs")
        p.add_argument("--no-dedupe", action="store_true",
                       help="execute every sample, even identical programs of the same task")

    def run(self, plugins, args):
        from codea1.harness.flows.evaluate import EvaluateConfig, evaluate

        cfg = EvaluateConfig(**common(args), **limits(args), samples=args.samples, k=args.k,
                             reference_cache=not args.no_reference_cache, dedupe=not args.no_dedupe)
        r = evaluate(plugins, cfg)
        print(f"benchmark {r['benchmark']}  samples {r['counts']['samples']}  (resumed {r['resumed']})  "
              f"executor {r['executor']}")
        print("verdicts: " + ", ".join(f"{k} {v}" for k, v in r["counts"].items() if k != "samples" and v))
        print_metrics(r["metrics"], r["metric_notes"])
        if args.per_task or len(r["tasks"]) <= 40:
            print(f"\n  {'task':<24} {'n':>3} {'pass':>4}  statuses")
            for t, d in r["tasks"].items():
                print(f"  {t:<24} {d['n']:>3} {d['passed']:>4}  {' '.join(d['statuses'])}")
        elif r["tasks"]:
            print(f"\n  ({len(r['tasks'])} tasks: --per-task prints the table; results.json holds it)")
        for task, reason in list(r["skipped_tasks"].items())[:10]:
            print(f"  {task}: {reason}")
        print(f"\nwrote {args.out}/results.json, verdicts.jsonl, config.json, environment.json")
        return 0


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
        p.add_argument("--suite", type=int, default=0,
                       help="which suite of a task to score when the tests file holds several (default 0, the first)")
        p.add_argument("--allow-other-forms", action="store_true",
                       help="also run asserts outside the paper's form (assert f(args) == answer): operators other "
                            "than ==, bare truthy asserts, data that is code, as before and marked in-process "
                            "(results.json counts them: tests_in_process); for comparability with a benchmark's own "
                            "harness. Training never accepts them")
        run_dir_flags(p)

    def run(self, plugins, args):
        from codea1.harness.flows.evaluate_tests import (
            GOLDEN,
            EvaluateTestsConfig,
            evaluate_tests,
        )

        cfg = EvaluateTestsConfig(**common(args), **limits(args), tests=args.tests, k=args.k, mutant_timeout=args.mutant_timeout,
                                  mut_task_set=args.mut_task_set, coverage=not args.no_coverage, suite=args.suite,
                                  allow_other_forms=args.allow_other_forms)
        r = evaluate_tests(plugins, cfg)
        print(f"benchmark {r['benchmark']}  tasks {r['counts']['tasks']}  tests {args.tests}")
        print_metrics(r["metrics"], r["metric_notes"], width=22)
        if args.tests == GOLDEN and r.get("golden_note"):
            print(f"\n  note: {r['golden_note']}")
        print(f"\nwrote {args.out}/results.json, tasks.jsonl, config.json, environment.json")
        return 0


class GenerateCommand(Command):
    name = "generate"
    description = "sample code (samples.jsonl) or test suites (tests.jsonl) from a model"

    def add_arguments(self, p):
        p.add_argument("--role", required=True, choices=("code", "tests"), help="what to generate")
        benchmark_flags(p, "benchmark whose tasks are the questions")
        p.add_argument("--generator", required=True, help="generator name: hf, vllm, openai, replay (see `codea1 plugins`)")
        p.add_argument("--generator-opt", action="append", default=[], metavar="KEY=VALUE", help="generator option")
        p.add_argument("--model", help="checkpoint directory, hub name, or served model name")
        p.add_argument("--n", type=int, default=1, help="samples per task (per candidate code with --white-box-from)")
        p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7; 0 = greedy)")
        p.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling (default 0.95)")
        p.add_argument("--max-tokens", type=int, default=1024, help="new tokens per sample (default 1024)")
        p.add_argument("--seed", type=int, default=0, help="base seed; each prompt's seed derives from it")
        p.add_argument("--k", type=int, default=8, help="asserts per test suite (default 8, the paper's)")
        p.add_argument("--white-box-from", metavar="SAMPLES",
                       help="tests: attack these candidate codes (a suite per code and sample), paper's white-box prompt")
        p.add_argument("--prompt", help="prompt name (code, test-white-box, test-black-box, test-sft); default by role")
        p.add_argument("--prompt-file", help="TOML file overriding prompts (same tables as harness/prompts/paper.toml)")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the generation cache")
        p.add_argument("--cache-dir", help="generation cache (default $CODEA1_CACHE_DIR/generations or ~/.cache/codea1)")
        run_dir_flags(p, "output directory")

    def run(self, plugins, args):
        from codea1.harness.flows.generate import GenerateConfig, generate, rows_name

        cfg = GenerateConfig(**common(args, executor=False), role=args.role, generator=args.generator,
                             model=args.model, n=args.n, temperature=args.temperature, top_p=args.top_p,
                             max_tokens=args.max_tokens, seed=args.seed, k=args.k, white_box_from=args.white_box_from,
                             prompt=args.prompt, prompt_file=args.prompt_file,
                             generator_options=key_values(args.generator_opt, "--generator-opt"),
                             cache=not args.no_cache, cache_dir=args.cache_dir)
        r = generate(plugins, cfg)
        run = r["this_run"]
        print(f"{r['role']} from {r['generator']} ({r['model'] or '-'}), prompt {r['prompt']}: {r['rows']} rows for "
              f"{r['tasks']} tasks; this run {run['samples']} samples ({run['cache_hits']} from cache) in "
              f"{run['seconds']:.1f} s, {run['completion_tokens']} completion tokens "
              f"({run['completion_tokens_per_s'] or 0:.1f}/s)")
        print("parsing: " + ", ".join(f"{k} {v}" for k, v in r["parsing"].items()))
        print(f"\nwrote {args.out}/{rows_name(args.role)}, results.json, config.json, environment.json")
        return 0


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


class TrainCommand(Command):
    name = "train"
    description = "train policies with a trainer plugin (code-a1, golden-tests, self-play, sft) from a TOML config"

    def add_arguments(self, p):
        p.add_argument("--config", required=True, help="training config (TOML; examples in trainers/configs/)")
        p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a config key, e.g. --set trainer.alpha=0.25 (repeatable)")
        p.add_argument("--out", required=True, help="run directory: steps.jsonl, checkpoints/, mistake_book/, export/")
        again = p.add_mutually_exclusive_group()
        again.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
        again.add_argument("--overwrite", action="store_true", help="discard the run in --out and start over")
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        p.add_argument("--dry-run", action="store_true",
                       help="check the config and --out, print the resolved config and what would start; load no "
                            "model, write nothing")

    def resume_argv(self, args, argv):
        # Once --out holds a run, the same command without --resume is refused.
        again = super().resume_argv(args, argv)
        started = (Path(args.out) / "config.json").is_file()
        return [*again, "--resume"] if started and "--resume" not in again else again

    def run(self, plugins, args):
        from codea1.harness.flows.show import main_scalars
        from codea1.harness.flows.train import dry_run, load_config, train

        cfg = load_config(plugins, args.config, args.set, args.out, overwrite=args.overwrite, resume=args.resume,
                          progress=not args.no_progress)
        if args.dry_run:  # all of it TOML: the output saved is a config file
            r = dry_run(plugins, cfg)
            print("# codea1 train --dry-run: nothing loaded, nothing written. It would start:")
            print("\n".join(f"#   {line}" for line in r["plan"]))
            print(f"# The resolved config ({args.config}" + "".join(f" --set {s}" for s in args.set) + "):\n")
            print(r["config"], end="")
            return 0
        r = train(plugins, cfg)
        shown = main_scalars(r["last"])
        print(f"{r['trainer']}: {r['steps']} steps; last step: " +
              ", ".join(f"{k} {v:.3f}" for k, v in shown.items()))
        for role, path in r["exported"].items():
            print(f"  {role} policy exported to {path}")
        print(f"\nwrote {args.out}/steps.jsonl, checkpoints/, export/, results.json, config.json")
        return 0


class ShowCommand(Command):
    name = "show"
    description = "one run directory at a glance: kind, status, key config, headline figures"

    def add_arguments(self, p):
        p.add_argument("run", metavar="RUN", help="a run directory (evaluate, evaluate-tests, generate, tts, train) "
                                                  "or a report directory")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")

    def run(self, plugins, args):
        from codea1.harness.flows.show import show

        r = show(args.run)
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
            print_metrics(r["metrics"], r["metric_notes"], width=max(map(len, r["metrics"] or [""]), default=0) + 2)
        return 0


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


class DevCommand(Command):
    name = "dev"
    description = "developer helpers (tiny-model: a random-init Qwen2 and a local tokenizer)"

    def add_arguments(self, p):
        dev = p.add_subparsers(dest="dev_command", required=True)
        d = dev.add_parser("tiny-model", help="write a tiny random-init Qwen2 model and local tokenizer to DIR")
        d.add_argument("directory")
        d.add_argument("--seed", type=int, default=0)

    def run(self, plugins, args):
        from codea1.harness.testing.tiny_model import build_tiny_model

        print(f"wrote {build_tiny_model(args.directory, seed=args.seed)}")
        return 0


BUILTIN_COMMANDS = (PluginsCommand, TasksCommand, EvaluateCommand, EvaluateTestsCommand, GenerateCommand, TTSCommand,
                    TrainCommand, ShowCommand, ReportCommand, DevCommand)


@hookimpl
def codea1_register_commands(registry):
    for command in BUILTIN_COMMANDS:
        registry.add(command)
