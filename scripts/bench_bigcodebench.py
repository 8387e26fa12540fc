"""Benchmark: codea1 evaluate vs bigcodebench's own evaluator on the same BigCodeBench samples.

Runs in ``tox -e bigcodebench``'s environment (the libraries BigCodeBench's tasks import):

    .tox/bigcodebench/bin/python scripts/bench_bigcodebench.py [--tasks 60] [--n 3] [--workers 2]

The samples: ``--tasks`` tasks drawn with a fixed seed, each with its canonical solution and
``--n`` - 1 mutants of it (a flipped comparison, an off-by-one constant, a dropped return:
``bench_evalplus.mutants``), as complete programs ("solution"). Both tools get the same
file, the same worker count and warm caches (each tool's reference / ground-truth cache is
filled by an untimed first run, in a temporary cache directory of its own): bigcodebench
0.2.5's ``evaluate(execution="local", parallel=W, selective_evaluate=...)`` with its defaults
otherwise (calibrated), and ``codea1 evaluate --benchmark bigcodebench``. Each is timed as a
whole process, start-up included. Per-sample verdicts are compared; a task codea1 skips (its
reference fails here, as bigcodebench's own ground-truth check reports) is counted apart.
``--repeat R`` alternates the tools R times and prints medians. ``--before PYTHON`` times a
second codea1 too, the one PYTHON imports (another checkout's environment: "before" and
"after" a change, back to back in one run). ``--work DIR`` keeps the samples and caches
there; with ``--no-warmup`` a second run on the same DIR skips the untimed first runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_evalplus import mutants

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bigcodebench" / "BigCodeBench-v0.1.0.jsonl.gz"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed package runs
BIGCODEBENCH = """
import sys
from bigcodebench.evaluate import evaluate
evaluate(split="complete", subset="full", samples=sys.argv[1], execution="local", parallel=int(sys.argv[2]),
         selective_evaluate=sys.argv[3], pass_k="1", save_pass_rate=False)
"""


def build_samples(data: Path, tasks: int, n: int, seed: int, path: Path) -> list[str]:
    """Writes the samples file; returns the task ids, in file order."""
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    rng = random.Random(seed)
    chosen = sorted(rng.sample(rows, min(tasks, len(rows))), key=lambda t: int(t["task_id"].split("/")[1]))
    out = []
    for task in chosen:
        canonical = task["complete_prompt"] + "\n" + task["canonical_solution"]
        out += [{"task_id": task["task_id"], "solution": code} for code in [canonical] + mutants(canonical, rng, n - 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return [t["task_id"] for t in chosen]


def run_bigcodebench(data: Path, samples: Path, ids: list[str], workers: int, cache: Path) -> tuple[float, dict]:
    result_file = Path(str(samples).replace(".jsonl", "_eval_results.json"))
    result_file.unlink(missing_ok=True)  # it would be read back instead of evaluating
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BIGCODEBENCH, str(samples), str(workers), ",".join(ids)], check=True,
                   capture_output=True, text=True,
                   env={**ENV, "BIGCODEBENCH_OVERRIDE_PATH": str(data), "XDG_CACHE_HOME": str(cache)})
    seconds = time.perf_counter() - start
    verdicts = {(task_id, i): r["status"] == "pass"
                for task_id, results in json.loads(result_file.read_text())["eval"].items()
                for i, r in enumerate(results)}
    return seconds, verdicts


def run_codea1(data: Path, samples: Path, ids: list[str], workers: int, out: Path, cache: Path,
               python: str = sys.executable) -> tuple[float, dict, set[str]]:
    start = time.perf_counter()
    subprocess.run([python, "-m", "codea1", "evaluate", "--benchmark", "bigcodebench", "--data", str(data),
                    "--samples", str(samples), "--tasks", ",".join(ids), "--workers", str(workers), "--out",
                    str(out), "--overwrite", "--no-progress"], check=True, capture_output=True, text=True,
                   env={**ENV, "CODEA1_CACHE_DIR": str(cache)})
    seconds = time.perf_counter() - start
    verdicts, skipped = {}, set()
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = v["status"] == "pass"
        if v["status"] == "skipped":
            skipped.add(v["task_id"])
    return seconds, verdicts, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--n", type=int, default=3, help="samples per task: the canonical solution and n-1 mutants")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", help="the python of another codea1 to time beside this one")
    parser.add_argument("--work", type=Path, help="folder for the samples and caches (default: a new one)")
    parser.add_argument("--no-warmup", action="store_true", help="the caches in --work are warm: no untimed runs")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="codea1-bench-bcb-"))
    work.mkdir(parents=True, exist_ok=True)
    samples = work / "samples.jsonl"
    ids = build_samples(args.data, args.tasks, args.n, args.seed, samples)
    count = len(samples.read_text().splitlines())
    print(f"{count} samples over {len(ids)} tasks, {args.workers} workers (in {work})", flush=True)
    bcb_cache = work / "bigcodebench-cache"
    codea1s = {"codea1": sys.executable, **({"codea1 before": args.before} if args.before else {})}
    caches = {name: work / f"cache-{i}" for i, name in enumerate(codea1s)}
    if not args.no_warmup:  # untimed: ground truth and references cached
        run_bigcodebench(args.data, samples, ids, args.workers, bcb_cache)
        for name, python in codea1s.items():
            run_codea1(args.data, samples, ids, args.workers, work / "out", caches[name], python)
    times: dict[str, list[float]] = {"bigcodebench": [], **{name: [] for name in codea1s}}
    verdicts: dict[str, dict] = {}
    skipped: dict[str, set[str]] = {}
    for _ in range(args.repeat):
        seconds, verdicts["bigcodebench"] = run_bigcodebench(args.data, samples, ids, args.workers, bcb_cache)
        times["bigcodebench"].append(seconds)
        for name, python in codea1s.items():
            seconds, verdicts[name], skipped[name] = run_codea1(args.data, samples, ids, args.workers, work / "out",
                                                                caches[name], python)
            times[name].append(seconds)
        print("  " + ", ".join(f"{name} {t[-1]:.1f} s" for name, t in times.items()), flush=True)
    bcb = statistics.median(times["bigcodebench"])
    for name in codea1s:
        ours, theirs = verdicts[name], verdicts["bigcodebench"]
        compared = [key for key in ours if key[0] not in skipped[name]]
        differ = sorted(key for key in compared if ours[key] != theirs.get(key))
        seconds = statistics.median(times[name])
        print(f"{name} evaluate: {seconds:.1f} s   bigcodebench evaluate: {bcb:.1f} s   ({bcb / seconds:.2f}x); "
              f"verdicts: {len(compared) - len(differ)} of {len(compared)} equal"
              + (f"; differ: {', '.join(f'{t}#{i}' for t, i in differ[:8])}" if differ else ""))
    for name, tasks in skipped.items():
        if tasks:
            print(f"{len(tasks)} task(s) {name} skips (its reference fails here), not compared: "
                  f"{', '.join(sorted(tasks))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
