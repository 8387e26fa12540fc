"""Benchmark: the same `codea1 evaluate` workload through each executor.

Runs the real command (`codea1 evaluate --executor X`) on HumanEval+ canonical solutions plus
the repository's wrong samples, once per executor, after one untimed run that fills the
reference cache (so every timed run does the same work: the evaluate stage). Prints, per
executor, the wall time of the evaluate stage, the tests executed per second, the overhead
ratio to the subprocess executor measured in the same run, and whether every verdict equals
the subprocess executor's.

    python scripts/bench_executors.py --data ../shared/data/humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz
    python scripts/bench_executors.py --data ... --executors subprocess,firejail --tasks 40

sandbox-fusion is measured against a local server (tests/sandbox_fusion_server.py) unless
SANDBOX_FUSION_ENDPOINT is set: the figure then includes HTTP and one interpreter start per
program, which is what its per-request design costs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_samples(data: Path, out: Path, tasks: int | None) -> int:
    rows = []
    with gzip.open(data, "rt") as src:
        for line in src:
            task = json.loads(line)
            rows.append({"task_id": task["task_id"], "solution": task["prompt"] + task["canonical_solution"]})
    rows = rows[:tasks] if tasks else rows
    keep = {r["task_id"] for r in rows}
    wrong = [json.loads(x) for x in (ROOT / "tests/data/humaneval_wrong_samples.jsonl").read_text().splitlines()]
    rows += [w for w in wrong if w["task_id"] in keep]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def evaluate(executor: str, options: list[str], data: Path, samples: Path, out: Path, workers: int, env: dict) -> float:
    cmd = [sys.executable, "-m", "codea1", "evaluate", "--benchmark", "humaneval+", "--data", str(data),
           "--samples", str(samples), "--executor", executor, "--out", str(out), "--workers", str(workers),
           "--overwrite", "--no-progress"]
    for opt in options:
        cmd += ["--executor-opt", opt]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def read_run(out: Path) -> tuple[dict, dict]:
    verdicts = {}
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = (v["status"], tuple(sorted(v.get("groups", {}).items())))
    return verdicts, json.loads((out / "results.json").read_text())


def tests_executed(out: Path) -> int:
    total = 0
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        total += v.get("n_tests", 0) if v["status"] == "pass" else v.get("n_passed", 0) + 1
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--executors", default="subprocess,firejail,bubblewrap,ray,sandbox-fusion")
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks only")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "tests"))
    tmp = Path(tempfile.mkdtemp(prefix="codea1-bench-executors-"))
    env = {**os.environ, "CODEA1_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(ROOT)}
    samples = tmp / "samples.jsonl"
    n = write_samples(args.data, samples, args.tasks)
    print(f"workload: {n} samples ({args.data.name}), {args.workers} workers; reference cache warm-up ...")
    evaluate("subprocess", [], args.data, samples, tmp / "warmup", args.workers, env)

    rows = []
    baseline = None
    server = None
    for name in args.executors.split(","):
        options = []
        if name == "sandbox-fusion" and not os.environ.get("SANDBOX_FUSION_ENDPOINT"):
            from sandbox_fusion_server import SandboxFusionServer

            server = SandboxFusionServer().__enter__()
            options = [f"endpoint={server.endpoint}", f"concurrency={args.workers}"]
        if name == "ray":
            options = ["object_store_mb=200", "batch_size=4"]
        out = tmp / name
        whole = evaluate(name, options, args.data, samples, out, args.workers, env)
        verdicts, results = read_run(out)
        stage = results.get("timing", {}).get("evaluate_s", whole)
        tests = tests_executed(out)
        if baseline is None:
            baseline = (verdicts, stage)
        diff = sum(1 for k in baseline[0] if baseline[0][k] != verdicts.get(k)) + len(set(verdicts) - set(baseline[0]))
        rows.append((name, whole, stage, tests / stage, stage / baseline[1], diff))
        if server is not None:
            server.__exit__(None, None, None)
            server = None

    print(f"\n{'executor':16} {'whole s':>8} {'stage s':>8} {'tests/s':>10} {'x subprocess':>13} {'verdict diffs':>14}")
    for name, whole, stage, rate, ratio, diff in rows:
        print(f"{name:16} {whole:8.1f} {stage:8.1f} {rate:10.0f} {ratio:13.2f} {diff:14d}")
    print("\ntests/s counts tests judged (all tests of a passing sample, up to the first failure otherwise), "
          "the same count for every executor.")
    print("'stage s' is the evaluate stage (results.json timing.evaluate_s); 'whole s' adds start-up "
          "(interpreter, Ray, zygotes). Ratio = stage time / subprocess stage time, this run.")
    return 0 if all(r[5] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
