"""What several built-in commands share: their common flags, turned into the flows' config, and
how they print figures. No hooks here: the command modules are plugins, this is their helper.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from codea1.harness.intervals import METHOD, interval_text
from codea1.harness.registry import OptionError

# What each figure means, printed beside it.
METRIC_NOTES = {
    "pass@k": "unbiased pass@k over all samples",
    "avg@k": "mean pass rate of each task's first k samples",
    "test-pass@k": "valid tests among the first k, over tasks x k",
    "mut@k": "mutants killed by the first k tests, eligible tasks",
    "Mul@k": "test-pass@k x mut@k",
}


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


# evalplus' --dataset names, and the benchmark of ours that reads the same data
EVALPLUS_DATASETS = {"humaneval": "humaneval+", "mbpp": "mbpp+"}


def evalplus_dataset(text: str) -> str:
    if text not in EVALPLUS_DATASETS:
        raise argparse.ArgumentTypeError(f"--dataset {text!r}: evalplus' datasets are humaneval and mbpp "
                                         f"(--benchmark humaneval+ / mbpp+); name any other benchmark with --benchmark")
    return EVALPLUS_DATASETS[text]


def benchmark_flags(p: argparse.ArgumentParser, help: str) -> None:
    """The benchmark and its options. evalplus' flags are accepted where they mean the same:
    ``--dataset humaneval|mbpp`` is ``--benchmark humaneval+|mbpp+``, and ``--base-only`` and
    ``--mini`` are spellings of ``--benchmark-opt base_only=true`` / ``mini=true`` (options of
    humaneval+ and mbpp+; another benchmark refuses them as unknown options)."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--benchmark", help=help)
    which.add_argument("--dataset", dest="benchmark", type=evalplus_dataset, metavar="{humaneval,mbpp}",
                       help="evalplus' name for the benchmark: humaneval is --benchmark humaneval+, mbpp is "
                            "--benchmark mbpp+")
    p.add_argument("--data", help="benchmark data file or directory (default: the benchmark's own loader)")
    p.add_argument("--benchmark-opt", action="append", default=[], metavar="KEY=VALUE", help="benchmark option")
    p.add_argument("--base-only", dest="benchmark_opt", action="append_const", const="base_only=true",
                   help="evalplus' --base-only: only the base tests (the original HumanEval / MBPP inputs) are run "
                        "and scored, not the plus tests (= --benchmark-opt base_only=true; humaneval+, mbpp+)")
    p.add_argument("--mini", dest="benchmark_opt", action="append_const", const="mini=true",
                   help="evalplus' --mini: the Mini data set (HumanEvalPlus-Mini-*.jsonl.gz, fewer plus tests): "
                        "--data's Mini sibling, or the file --data names when it is one (= --benchmark-opt "
                        "mini=true; humaneval+; evalplus publishes no MBPP+ Mini)")
    p.add_argument("--tasks", type=task_list, metavar="ID,...", help="these tasks only (see `codea1 tasks`)")
    p.add_argument("--limit", type=int, metavar="N", help="the first N tasks only")


def executor_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="subprocess", help="executor name (default: subprocess)")
    p.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE", help="executor option")
    p.add_argument("--workers", "--parallel", type=int,
                   help="parallel sandbox workers (default: all cores); --parallel is evalplus' name for it")


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


def run_dir_flags(p: argparse.ArgumentParser, what: str = "run directory", out_required: bool = True,
                  out_help: str = "") -> None:
    p.add_argument("--out", required=out_required, help=out_help or f"{what} (resumed when it exists)")
    p.add_argument("--overwrite", "--i-just-wanna-run", action="store_true",
                   help="discard what --out holds and start over (evalplus' --i-just-wanna-run)")
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


def print_metrics(metrics: dict, notes: dict, width: int = 18, same: dict | None = None,
                  intervals: dict | None = None) -> None:
    """One line per metric: its value, its 95 % interval over tasks where one is known
    (``harness.intervals``), and what it means, or n/a and why; a note on a metric that has
    a value (what was left out) goes on the same line. A figure in ``same`` (equal to an
    earlier one: avg@n and pass@1) is named beside that one instead of a line."""
    same, intervals = same or {}, intervals or {}
    aliases: dict[str, list[str]] = {}
    for label, twin in same.items():
        aliases.setdefault(twin, []).append(label)
    shown_any = False
    for name, value in metrics.items():
        if name in same:
            continue
        meaning = METRIC_NOTES.get(name.split(":")[-1].split("@")[0] + "@k", "")
        also = "; ".join(f"= {a.split(':')[-1]}" for a in aliases.get(name, []))
        said = "; ".join(x for x in (meaning if value is not None else "", notes.get(name, ""), also) if x)
        bounds = interval_text(intervals.get(name)) if value is not None else ""
        shown_any = shown_any or bool(bounds)
        print(f"  {name:<{width}} {percent(value)}" + (f" {bounds:<14}" if intervals else "")
              + (f"   ({said})" if said else ""))
    for name, note in notes.items():
        if name not in metrics:
            print(f"  {name:<{width}}    n/a   ({note})")
    if shown_any:
        print(f"  [in brackets: the 95 % interval over tasks, {METHOD['method']}, "
              f"{METHOD['resamples']} draws, seed {METHOD['seed']}]")