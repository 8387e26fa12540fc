"""Benchmark: codea1 evaluate vs evalplus.evaluate on the same HumanEval+ samples file.

Both tools get the same worker count and warm caches (each tool's ground-truth / reference
cache is filled by an untimed first run), and their per-sample verdicts are compared: a
figure is only printed for identical verdicts (HumanEval/32, which evalplus 0.3.1 fails for
every sample, is reported apart).

    python scripts/bench_evalplus.py --data ../shared/data/humanevalplus/HumanEvalPlus-v0.1.10.jsonl.gz

Sample files (--preset):
  canonical  one canonical solution per task (164 samples)
  mixed      n samples per task (--n, default 10) as a sampling model produces them:
             repeats of the canonical solution (temperature sampling repeats itself) and
             mutants of it (a flipped comparison, an off-by-one constant, a dropped
             return), built with ast from the canonical code
  mutants    distinct programs only: per task the canonical solution and up to --n - 1
             cosmic-ray mutants of it (the project's mutation module, harness.mutation),
             no two alike, so deduplication cannot help
  FILE       --samples FILE uses your own file

Beside both tools' times it prints the in-process limit: the same programs and the same
inputs (each sample's inputs up to the first one codea1 saw fail, as codea1 stops there;
a timed-out input counted at the time codea1 waited for it) run in plain Python processes,
one per worker, each taking the next program when it is free, with no isolation, no
encoding and no judging (timed from the moment the workers exist; the better of two runs,
programs in file order and longest first). And the process-per-program floor: the same,
each program run in a fork of its warm worker that exits after it (nothing confined, sent
back or judged), the least any harness pays that gives every program its own process.
evalplus' time over the limit is then about the most any harness can gain on evalplus
without deduplication (on the mutant preset, where no two programs are alike, at all).
--repeat R runs the tools R times, alternated, and prints medians.

Every process runs with Python's bytecode cache on, as an installed package does: a shell
that exports PYTHONDONTWRITEBYTECODE (some containers do) would otherwise have each tool
compile every module it imports on every run (about 0.1 s of codea1's start-up).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # see the module docstring
FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


class _Mutate(ast.NodeTransformer):
    def __init__(self, target: int):
        self.target, self.seen, self.done = target, 0, False

    def _hit(self) -> bool:
        self.seen += 1
        if self.seen == self.target and not self.done:
            self.done = True
            return True
        return False

    def visit_Compare(self, node):
        self.generic_visit(node)
        if type(node.ops[0]) in FLIP and self._hit():
            node.ops = [FLIP[type(node.ops[0])]()] + node.ops[1:]
        return node

    def visit_Constant(self, node):
        if type(node.value) is int and self._hit():
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None and self._hit():
            return ast.copy_location(ast.Return(ast.Constant(None)), node)
        return node


def mutants(code: str, rng: random.Random, count: int) -> list[str]:
    tree = ast.parse(code)
    counter = _Mutate(10 ** 9)
    counter.visit(ast.parse(code))
    sites = list(range(1, counter.seen + 1))
    rng.shuffle(sites)
    out = []
    for site in sites[:count]:
        m = _Mutate(site)
        new = ast.unparse(m.visit(ast.parse(code)))
        if m.done and new != ast.unparse(tree):
            out.append(new)
    return out


def build_samples(data: Path, preset: str, n: int, path: Path) -> int:
    rng = random.Random(0)
    rows = []
    for line in gzip.open(data, "rt"):
        task = json.loads(line)
        canonical = task["prompt"] + task["canonical_solution"]
        if preset == "mutants":
            from codea1.harness.mutation import generate_mutants

            distinct = [m.code for m in generate_mutants(canonical)[0] if m.code != canonical]
            rows += [{"task_id": task["task_id"], "solution": c}
                     for c in [canonical] + rng.sample(distinct, min(n - 1, len(distinct)))]
            continue
        if preset == "canonical":
            rows.append({"task_id": task["task_id"], "solution": canonical})
            continue
        wrong = mutants(canonical, rng, n)
        n_right = max(1, n - len(wrong)) if not wrong else rng.randint(n // 3, n - 1)
        picks = [canonical] * n_right + wrong[: n - n_right]
        picks += [canonical] * (n - len(picks))
        rng.shuffle(picks)
        rows += [{"task_id": task["task_id"], "solution": c} for c in picks]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def run_evalplus(data: Path, samples: Path, workers: int) -> tuple[float, float, dict]:
    """(seconds inside evaluate(), seconds of the whole process, verdicts)."""
    result_file = Path(str(samples).replace(".jsonl", "_eval_results.json"))
    result_file.unlink(missing_ok=True)
    code = ("import os, time\nt = time.perf_counter()\nfrom evalplus.evaluate import evaluate\n"
            f"evaluate('humaneval', samples={str(samples)!r}, parallel={workers}, i_just_wanna_run=True)\n"
            "print('CALL_SECONDS', time.perf_counter() - t)\n")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env={**ENV, "HUMANEVAL_OVERRIDE_PATH": str(data)},
                          capture_output=True, text=True, check=True)
    process = time.perf_counter() - start
    call = float(done.stdout.split("CALL_SECONDS")[1].split()[0])
    verdicts = {}
    for task_id, rows in json.loads(result_file.read_text())["eval"].items():
        for i, row in enumerate(rows):
            verdicts[(task_id, i)] = row["base_status"] == row["plus_status"] == "pass"
    return call, process, verdicts


LIMIT_RUNNER = r"""
import copy, multiprocessing, os, pickle, signal, sys, time

class Late(BaseException):
    pass

def alarm(*_):
    raise Late()

JOBS = pickle.load(open(sys.argv[1], "rb"))

def run(index):
    began = time.perf_counter()
    code, entry_point, inputs = JOBS[index]
    signal.signal(signal.SIGALRM, alarm)
    namespace = {"__name__": "__main__"}
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        exec(code, namespace)
        fn = namespace[entry_point]
        for args in inputs:
            try:
                fn(*copy.deepcopy(args))
            except Exception:
                pass
    except BaseException:
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    return index, time.perf_counter() - began

def run_in_fork(index):
    # The floor of any harness that gives each program its own process: a fork of the warm
    # worker runs it and exits; nothing is confined, sent back or judged.
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        run(index)
        os._exit(0)
    os.waitpid(pid, 0)
    return index, time.perf_counter() - began

def timed(order, runner):
    # Forked workers inherit JOBS and take the next job when they are free, as codea1's
    # workers do (a fixed split of the jobs left one worker idle for seconds). A fresh
    # pool each time: no worker has imported what an earlier pass's programs imported.
    took = {}
    with multiprocessing.get_context("fork").Pool(int(sys.argv[2])) as pool:
        start = time.perf_counter()
        for index, seconds in pool.imap_unordered(runner, order, chunksize=1):
            took[index] = seconds
        return time.perf_counter() - start, took

if __name__ == "__main__":
    in_file_order, took = timed(range(len(JOBS)), run)
    longest = sorted(took, key=lambda i: -took[i])
    longest_first, _ = timed(longest, run)
    floor = min(timed(range(len(JOBS)), run_in_fork)[0], timed(longest, run_in_fork)[0])
    print("FILE_ORDER", in_file_order, "LONGEST_FIRST", longest_first, "SECONDS", min(in_file_order, longest_first),
          "FORK_SECONDS", floor)
"""


def limit_and_floor(data: Path, samples: Path, verdicts_path: Path, workers: int) -> tuple[float, float]:
    """(in-process limit, process-per-program floor) in wall seconds. The limit: the same
    programs and inputs in plain processes, ``workers`` of them taking the next program as
    they become free (see the module docstring), the better of two orders, the file's and
    longest first (by each program's time in the first pass; a long program started last
    keeps one worker busy alone). The floor: the same, each program run in a fork of its
    worker. The inputs each sample ran in codea1 are read from its verdicts."""
    import pickle

    tasks = {}
    for line in gzip.open(data, "rt"):
        task = json.loads(line)
        tasks[task["task_id"]] = task
    verdicts = {}
    for line in verdicts_path.read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = v
    counts: dict[str, int] = {}
    jobs, waited = [], 0.0
    for line in samples.read_text().splitlines():
        row = json.loads(line)
        index = counts.get(row["task_id"], 0)
        counts[row["task_id"]] = index + 1
        task, verdict = tasks[row["task_id"]], verdicts[(row["task_id"], index)]
        inputs = task["base_input"] + task["plus_input"]
        failed = (verdict.get("first_failure") or {}).get("test", "")
        if verdict["status"] != "pass" and failed:
            group, _, i = failed.partition("/")
            position = int(i) + (len(task["base_input"]) if group == "plus" else 0)
            timed_out = [t for t in verdict["tests"] if t["id"] == failed and t["status"] == "timeout"]
            inputs = inputs[:position] if timed_out else inputs[:position + 1]
            waited += sum(t.get("time") or 0.0 for t in timed_out)
        elif verdict["status"] != "pass":
            inputs = []  # it did not load
        jobs.append((row.get("solution") or task["prompt"] + row["completion"], task["entry_point"], inputs))
    path = Path(tempfile.mkdtemp(prefix="codea1-limit-")) / "jobs.pkl"
    path.write_bytes(pickle.dumps(jobs))
    done = subprocess.run([sys.executable, "-c", LIMIT_RUNNER, str(path), str(workers)], env=ENV, capture_output=True,
                          text=True, check=True)
    figures = done.stdout.split()
    return tuple(float(figures[figures.index(name) + 1]) + waited / workers for name in ("SECONDS", "FORK_SECONDS"))


def run_codea1(data: Path, samples: Path, workers: int, out: Path, extra: list[str]) -> tuple[float, dict, dict]:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codea1", "evaluate", "--benchmark", "humaneval+", "--data", str(data),
                    "--samples", str(samples), "--workers", str(workers), "--out", str(out), "--overwrite",
                    "--no-progress", *extra], check=True, capture_output=True, text=True,
                   env={**ENV, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - start
    verdicts = {}
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        verdicts[(v["task_id"], v["sample_index"])] = v["status"] == "pass"
    return seconds, verdicts, json.loads((out / "results.json").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--preset", choices=("canonical", "mixed", "mutants"), default="mixed")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tool, alternated; medians are printed")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--samples", type=Path)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-warmup", action="store_true", help="caches are warm already: skip the untimed runs")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codea1-bench-"))
    samples = args.samples or work / "samples.jsonl"
    if not args.samples:
        count = build_samples(args.data, args.preset, args.n, samples)
        print(f"samples: {count} ({args.preset}{', n=%d' % args.n if args.preset == 'mixed' else ''}) in {samples}")
    print(f"workers: {args.workers} each", flush=True)
    if not args.no_warmup:
        print("warming both caches (untimed)...", flush=True)
        run_evalplus(args.data, samples, args.workers)
        run_codea1(args.data, samples, args.workers, work / "warm", [])

    import statistics

    timings: dict[str, list[float]] = {"evalplus": [], "evalplus_process": [], "codea1": [], "nodedupe": [],
                                       "limit": [], "floor": []}
    for _ in range(args.repeat):  # alternated, so a busy moment does not fall on one tool alone
        ep_call, ep_process, ep = run_evalplus(args.data, samples, args.workers)
        ours_s, ours, results = run_codea1(args.data, samples, args.workers, work / "run", [])
        nodedupe_s, nodedupe, _ = run_codea1(args.data, samples, args.workers, work / "run-nodedupe", ["--no-dedupe"])
        limit_s, floor_s = limit_and_floor(args.data, samples, work / "run" / "verdicts.jsonl", args.workers)
        for name, value in (("evalplus", ep_call), ("evalplus_process", ep_process), ("codea1", ours_s),
                            ("nodedupe", nodedupe_s), ("limit", limit_s), ("floor", floor_s)):
            timings[name].append(value)
    ep_call, ep_process, ours_s, nodedupe_s, limit_s, floor_s = (
        statistics.median(timings[k]) for k in ("evalplus", "evalplus_process", "codea1", "nodedupe", "limit", "floor"))

    bug = {"HumanEval/32"}
    differ = [k for k in ours if k[0] not in bug and ours[k] != ep.get(k)]
    differ += [k for k in nodedupe if k[0] not in bug and nodedupe[k] != ep.get(k)]
    bug_rows = [k for k in ours if k[0] in bug]
    print(f"verdicts: {len(ours)} samples; differing from evalplus: {len(differ)}"
          f" (+{len(bug_rows)} HumanEval/32 samples evalplus always fails)")
    if differ:
        print("  first differences:", differ[:5])
    print(f"codea1 executed {results['timing']['executed_programs']} distinct programs of {len(ours)} samples")
    print(f"evalplus.evaluate()  call {ep_call:8.2f} s   whole process (exit waits on its watchdog) {ep_process:8.2f} s")
    print(f"codea1 evaluate              {ours_s:8.2f} s   ratio (evalplus call / codea1) {ep_call / ours_s:6.2f}x"
          f"   (whole processes {ep_process / ours_s:6.2f}x)")
    print(f"codea1 evaluate --no-dedupe  {nodedupe_s:8.2f} s   ratio (evalplus call / codea1) {ep_call / nodedupe_s:6.2f}x")
    print(f"in-process limit             {limit_s:8.2f} s   codea1 / limit {ours_s / limit_s:6.2f}x"
          f"   (evalplus call / limit {ep_call / limit_s:6.2f}x: about the most any harness gains on evalplus"
          " without deduplication)")
    print(f"process-per-program floor    {floor_s:8.2f} s   codea1 / floor {ours_s / floor_s:6.2f}x"
          f"   (medians of {args.repeat}; all runs: " +
          ", ".join(f"{k} {[round(x, 2) for x in v]}" for k, v in timings.items()) + ")")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
