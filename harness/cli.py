"""The ``codea1`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from codea1.harness.benchmark import BenchmarkError
from codea1.harness.execution import ExecutorUnavailable
from codea1.harness.generation import GenerationError, GeneratorUnavailable
from codea1.harness.mutation import MutationUnavailable
from codea1.harness.plugin_manager import PluginLoadError, load_plugins
from codea1.harness.registry import OptionError, UnknownPluginError
from codea1.harness.runstore import RunStoreError
from codea1.harness.samples import SamplesError

USER_ERRORS = (BenchmarkError, ExecutorUnavailable, GeneratorUnavailable, GenerationError, MutationUnavailable,
               UnknownPluginError, OptionError, RunStoreError, SamplesError, PluginLoadError, FileNotFoundError,
               ValueError)


def _key_values(pairs: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        if "=" not in pair:
            raise OptionError(f"{flag} {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
        out[key.strip()] = value
    return out


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected comma-separated positive integers") from None
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected comma-separated positive integers")
    return ks


def _benchmark_flags(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--benchmark", required=True, help=help)
    p.add_argument("--data", help="benchmark data file or directory (default: the benchmark's own loader)")
    p.add_argument("--benchmark-opt", action="append", default=[], metavar="KEY=VALUE", help="benchmark option")


def _executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="subprocess", help="executor name (default: subprocess)")
    p.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE", help="executor option")
    p.add_argument("--workers", type=int, help="parallel sandbox workers (default: all cores)")


def _run_dir_flags(p: argparse.ArgumentParser, what: str = "run directory") -> None:
    p.add_argument("--out", required=True, help=f"{what} (resumed when it exists)")
    p.add_argument("--overwrite", action="store_true", help="discard what --out holds and start over")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codea1", description="Evaluate and train code LLMs and test LLMs.")
    parser.add_argument("--plugin", action="append", default=[], metavar="PATH",
                        help="load a plugin from a local .py file (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plugins", help="list every plugin by kind, name and origin")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p = sub.add_parser("evaluate", help="score a samples file on a benchmark (pass@k, avg@k)")
    _benchmark_flags(p, "benchmark name (see `codea1 plugins`)")
    p.add_argument("--samples", help="samples .jsonl (solution|completion per line) or evalplus samples directory")
    _executor_flags(p)
    p.add_argument("--k", type=_ks, default=[1], help="comma-separated k for pass@k/avg@k (default 1)")
    _run_dir_flags(p)
    p.add_argument("--no-reference-cache", action="store_true", help="recompute reference outputs")
    p.add_argument("--no-dedupe", action="store_true",
                   help="execute every sample, even identical programs of the same task")

    p = sub.add_parser("evaluate-tests", help="score generated tests: test-pass@k, mut@k, coverage@k, Mul")
    _benchmark_flags(p, "benchmark with reference solutions (ult, demo, kodcode, ...)")
    p.add_argument("--tests", required=True,
                   help="tests .jsonl (task_id + tests list or completion per line), or 'golden' for the benchmark's own")
    _executor_flags(p)
    p.add_argument("--k", type=_ks, default=[1, 2, 5], help="comma-separated k (default 1,2,5)")
    p.add_argument("--mutant-timeout", type=float, default=10.0, help="seconds per mutant, all its tests (default 10)")
    p.add_argument("--mut-task-set", choices=("per-k", "largest-k"), default="per-k",
                   help="tasks eligible for mut@k: per k (default), or the largest k's set for every k "
                        "(the reference evaluation fork's behaviour)")
    p.add_argument("--no-coverage", action="store_true", help="skip the coverage stage")
    p.add_argument("--suite", type=int, default=0,
                   help="which suite of a task to score when the tests file holds several (default 0, the first)")
    _run_dir_flags(p)

    p = sub.add_parser("generate", help="sample code (samples.jsonl) or test suites (tests.jsonl) from a model")
    p.add_argument("--role", required=True, choices=("code", "tests"), help="what to generate")
    _benchmark_flags(p, "benchmark whose tasks are the questions")
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
    p.add_argument("--limit", type=int, help="the first N tasks only")
    p.add_argument("--tasks", help="comma-separated task ids: these tasks only")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the generation cache")
    p.add_argument("--cache-dir", help="generation cache (default $CODEA1_CACHE_DIR/generations or ~/.cache/codea1)")
    _run_dir_flags(p, "output directory")

    p = sub.add_parser("tts", help="Best-of-N: pick each task's code that passes the most unique generated tests")
    _benchmark_flags(p, "benchmark (its golden tests score the chosen code)")
    p.add_argument("--codes", required=True, help="samples .jsonl: the M candidate codes per task")
    p.add_argument("--tests", required=True, help="tests .jsonl: the N test suites per task")
    _executor_flags(p)
    p.add_argument("--test-timeout", type=float, default=2.0, help="seconds per generated test (default 2)")
    p.add_argument("--curves", action="store_true",
                   help="also CURE's per-(n_code, n_test) accuracy grid over the first m codes and n suites")
    _run_dir_flags(p)

    p = sub.add_parser("dev", help="developer helpers")
    dev = p.add_subparsers(dest="dev_command", required=True)
    d = dev.add_parser("tiny-model", help="write a tiny random-init Qwen2 model and local tokenizer to DIR")
    d.add_argument("directory")
    d.add_argument("--seed", type=int, default=0)
    return parser


def cmd_plugins(plugins, args) -> int:
    rows = plugins.listing()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    widths = [max(len(r[c]) for r in rows + [{"kind": "KIND", "name": "NAME", "distribution": "FROM"}])
              for c in ("kind", "name", "distribution")]
    print(f"{'KIND':<{widths[0]}}  {'NAME':<{widths[1]}}  {'FROM':<{widths[2]}}  DESCRIPTION")
    for r in rows:
        print(f"{r['kind']:<{widths[0]}}  {r['name']:<{widths[1]}}  {r['distribution']:<{widths[2]}}  {r['description']}")
    return 0


def _fmt(x: float) -> str:
    return f"{100 * x:6.2f}"


def cmd_evaluate(plugins, args) -> int:
    from codea1.harness.evaluation import EvaluateConfig, evaluate

    cfg = EvaluateConfig(benchmark=args.benchmark, out=args.out, samples=args.samples, data=args.data,
                         executor=args.executor, executor_options=_key_values(args.executor_opt, "--executor-opt"),
                         benchmark_options=_key_values(args.benchmark_opt, "--benchmark-opt"), k=args.k,
                         workers=args.workers, overwrite=args.overwrite, progress=not args.no_progress,
                         reference_cache=not args.no_reference_cache, dedupe=not args.no_dedupe)
    results = evaluate(plugins, cfg)
    print(f"benchmark {results['benchmark']}  samples {results['counts']['samples']}  "
          f"(resumed {results['resumed']})  executor {results['executor']}")
    counts = ", ".join(f"{k} {v}" for k, v in results["counts"].items() if k != "samples" and v)
    print(f"verdicts: {counts}")
    for name, value in results["metrics"].items():
        print(f"  {name:<16} {_fmt(value)}")
    for name, note in results["metric_notes"].items():
        print(f"  {name:<16}    n/a  ({note})")
    rows = [(t, d) for t, d in results["tasks"].items()]
    if len(rows) <= 40:
        print(f"\n  {'task':<24} {'n':>3} {'pass':>4}  statuses")
        for t, d in rows:
            print(f"  {t:<24} {d['n']:>3} {d['passed']:>4}  {' '.join(d['statuses'])}")
    for task, reason in list(results["skipped_tasks"].items())[:10]:
        print(f"  {task}: {reason}")
    print(f"\nwrote {args.out}/results.json, verdicts.jsonl, config.json, environment.json")
    return 0


def cmd_evaluate_tests(plugins, args) -> int:
    from codea1.harness.tests_evaluation import EvaluateTestsConfig, evaluate_tests

    cfg = EvaluateTestsConfig(benchmark=args.benchmark, out=args.out, tests=args.tests, data=args.data,
                              executor=args.executor, executor_options=_key_values(args.executor_opt, "--executor-opt"),
                              benchmark_options=_key_values(args.benchmark_opt, "--benchmark-opt"), k=args.k,
                              workers=args.workers, overwrite=args.overwrite, progress=not args.no_progress,
                              mutant_timeout=args.mutant_timeout, mut_task_set=args.mut_task_set,
                              coverage=not args.no_coverage, suite=args.suite)
    results = evaluate_tests(plugins, cfg)
    print(f"benchmark {results['benchmark']}  tasks {results['counts']['tasks']}  tests {args.tests}")
    for name, value in results["metrics"].items():
        print(f"  {name:<22} {_fmt(value) if value is not None else '   n/a'}")
    for name, note in results["metric_notes"].items():
        print(f"  {name:<22} note: {note}")
    print(f"\nwrote {args.out}/results.json, tasks.jsonl, config.json, environment.json")
    return 0


def cmd_generate(plugins, args) -> int:
    from codea1.harness.generation import GenerateConfig, generate

    cfg = GenerateConfig(benchmark=args.benchmark, role=args.role, generator=args.generator, out=args.out,
                         model=args.model, n=args.n, temperature=args.temperature, top_p=args.top_p,
                         max_tokens=args.max_tokens, seed=args.seed, k=args.k, white_box_from=args.white_box_from,
                         prompt=args.prompt, prompt_file=args.prompt_file, data=args.data, limit=args.limit,
                         tasks=[t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None,
                         benchmark_options=_key_values(args.benchmark_opt, "--benchmark-opt"),
                         generator_options=_key_values(args.generator_opt, "--generator-opt"),
                         cache=not args.no_cache, cache_dir=args.cache_dir, overwrite=args.overwrite,
                         progress=not args.no_progress)
    r = generate(plugins, cfg)
    run = r["this_run"]
    print(f"{r['role']} from {r['generator']} ({r['model'] or '-'}), prompt {r['prompt']}: {r['rows']} rows for "
          f"{r['tasks']} tasks; this run {run['samples']} samples ({run['cache_hits']} from cache) in "
          f"{run['seconds']:.1f} s, {run['completion_tokens']} completion tokens "
          f"({run['completion_tokens_per_s'] or 0:.1f}/s)")
    print("parsing: " + ", ".join(f"{k} {v}" for k, v in r["parsing"].items()))
    from codea1.harness.generation import rows_name
    print(f"\nwrote {args.out}/{rows_name(args.role)}, results.json, config.json, environment.json")
    return 0


def cmd_tts(plugins, args) -> int:
    from codea1.harness.tts import TTSConfig, best_of_n

    cfg = TTSConfig(benchmark=args.benchmark, codes=args.codes, tests=args.tests, out=args.out, data=args.data,
                    benchmark_options=_key_values(args.benchmark_opt, "--benchmark-opt"), executor=args.executor,
                    executor_options=_key_values(args.executor_opt, "--executor-opt"), workers=args.workers,
                    test_timeout=args.test_timeout, curves=args.curves, overwrite=args.overwrite,
                    progress=not args.no_progress)
    r = best_of_n(plugins, cfg)
    m = r["metrics"]
    print(f"benchmark {r['benchmark']}  tasks {r['counts']['tasks']}  codes/task {r['counts']['max_codes']}  "
          f"suites/task {r['counts']['max_suites']}")
    print(f"  best-of-n accuracy   {_fmt(m['best_of_n'])}")
    print(f"  avg@M (no selection) {_fmt(m['avg_at_m'])}")
    print(f"  pass@M (oracle)      {_fmt(m['oracle'])}")
    print(f"\nwrote {args.out}/results.json, matrix.jsonl, golden/ (evaluate run of the codes)")
    return 0


def cmd_dev(plugins, args) -> int:
    from codea1.harness.testing.tiny_model import build_tiny_model

    print(f"wrote {build_tiny_model(args.directory, seed=args.seed)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        plugins = load_plugins(args.plugin)
        if args.command == "plugins":
            return cmd_plugins(plugins, args)
        if args.command == "evaluate":
            return cmd_evaluate(plugins, args)
        if args.command == "evaluate-tests":
            return cmd_evaluate_tests(plugins, args)
        if args.command == "generate":
            return cmd_generate(plugins, args)
        if args.command == "tts":
            return cmd_tts(plugins, args)
        if args.command == "dev":
            return cmd_dev(plugins, args)
    except USER_ERRORS as exc:
        print(f"codea1: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("codea1: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
