"""Best-of-N test-time scaling: M candidate codes x N generated test suites per task.

The paper's protocol (appendix "Test-time Scaling Design"): every code runs against every
generated test; the code that passes the most *unique* tests (the union of the task's
suites, duplicates counted once) is the answer, and its accuracy on the benchmark's golden
tests is reported beside avg@M, the mean golden pass rate of all M codes (what sampling
without selection gets), and pass@M-oracle (some code is right: the ceiling of selection).

Ties: the earliest sample (lowest index in the codes file) among those with the most passes.
That rule is deterministic and independent of executor order; since samples are i.i.d., it
is as good as a random pick on average.

Stages: ``golden`` is an ordinary ``codea1 evaluate`` run of the codes (in DIR/golden, on the
same executor, so it resumes and dedupes as any evaluation); ``matrix`` runs each distinct
code of a task once against all the task's unique generated tests (one executor job per
code, no early stop), rows appended to DIR/matrix.jsonl as they land; ``select`` and the
metrics are pure functions of the two. ``--curves`` adds CURE's view: accuracy of the selection over the first m codes
with the first n suites, for a grid of (m, n).
"""

from __future__ import annotations

import ast
import hashlib
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.flows.evaluate_tests import tests_rows
from codea1.harness.progress import stage_bar
from codea1.harness.records import PASS, SANDBOX_ERROR, ExecJob, Problem, TestCase
from codea1.harness.run import ExecutingRunConfig, Run, open_run
from codea1.harness.samples import code_hash, load_samples
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.execution import batch_timeout, stream_jobs
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.syntax import parse_untrusted


# -- pure selection ------------------------------------------------------------------------------
def select_best(passes: Sequence[Sequence[bool]]) -> int:
    """Index of the code passing the most tests; the lowest index among equals. ``passes[i][j]``:
    code i passes unique test j."""
    if not passes:
        raise ValueError("no candidate codes")
    counts = [sum(bool(x) for x in row) for row in passes]
    return counts.index(max(counts))


def grid(limit: int) -> list[int]:
    """1, 2, 4, ... up to ``limit``, and ``limit`` itself."""
    out, x = [], 1
    while x < limit:
        out.append(x)
        x *= 2
    return out + [limit] if limit else []


def curves(tasks: Sequence[dict[str, Any]], ms: Sequence[int], ns: Sequence[int]) -> dict[str, float]:
    """CURE's grid: for each (m, n), mean over tasks of the golden result of the code chosen
    among the first m codes by the tests of the first n suites. Each task dict holds
    ``passes`` (codes x unique tests), ``first_suite`` (per unique test, the first suite that
    has it) and ``golden`` (per code)."""
    out = {}
    for m in ms:
        for n in ns:
            total = 0.0
            for t in tasks:
                codes = t["passes"][:m]
                if not codes:
                    continue
                cols = [j for j, s in enumerate(t["first_suite"]) if s < n]
                pick = select_best([[row[j] for j in cols] for row in codes])
                total += bool(t["golden"][pick])
            out[f"m={m},n={n}"] = total / len(tasks) if tasks else 0.0
    return out


def unique_tests(suites: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
    """The union of the suites in order of first appearance, duplicates (equal up to spacing
    and quotes) once, with the first suite holding each."""
    seen: dict[str, int] = {}
    tests, first = [], []
    for s, suite in enumerate(suites):
        for src in suite:
            try:
                key = ast.dump(parse_untrusted(src.strip()))
            except SyntaxError:
                key = src.strip()
            if key not in seen:
                seen[key] = len(tests)
                tests.append(src.strip())
                first.append(s)
    return tests, first


# -- reading the suites --------------------------------------------------------------------------
def read_suites(path: str, problems: dict[str, Problem]) -> dict[str, list[list[str]]]:
    """Every suite of every task, in file order (a tests.jsonl from ``codea1 generate``, or
    rows with ``tests`` or ``completion``)."""
    out: dict[str, list[list[str]]] = defaultdict(list)
    for _, task, _, _, tests in tests_rows(path, problems):
        out[task].append(tests)
    return dict(out)


# -- the flow ------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class TTSConfig(ExecutingRunConfig):
    codes: str
    tests: str
    test_timeout: float = 2.0
    curves: bool = False

    COMMAND = "tts"
    ROWS = "matrix.jsonl"
    IDENTITY = ("benchmark", "codes", "tests", "data", "benchmark_options", "test_timeout")


@dataclass
class TaskTests:
    """A task's unique generated tests: sources, the first suite holding each, which ones
    parsed (columns of the matrix) and the parsed tests, the rest with their reasons."""

    tests: list[str]
    first_suite: list[int]
    columns: list[int]
    parsed: list[TestCase]
    unparsed: list[dict]
    suites: int
    key: str  # what a matrix row depends on: the tests and the per-test limit


def best_of_n(plugins, cfg: TTSConfig) -> dict[str, Any]:
    with open_run(plugins, cfg) as run:
        codes = read_codes(run, cfg)
        suites = read_suites(cfg.tests, run.all_problems)
        run.start()
        timing: dict[str, float] = {}
        golden_run = golden_stage(plugins, run, cfg, timing)
        skipped = golden_run["skipped_tasks"]
        golden = {t: [s == PASS for s in d["statuses"]] for t, d in golden_run["tasks"].items() if t not in skipped}
        tests = {t: task_tests(run.problems[t], suites.get(t, []), cfg.test_timeout) for t in sorted(golden)}
        rows = matrix_stage(run, cfg, codes, tests, timing)
        results = select(cfg, codes, tests, golden, rows, skipped, timing)
        return run.finish(results)


def read_codes(run: Run, cfg: TTSConfig) -> dict[str, list[str]]:
    codes: dict[str, list[str]] = defaultdict(list)
    for s in load_samples(cfg.codes, run.all_problems, run.bench.sample_code):
        if s.task_id in run.problems:
            codes[s.task_id].append(s.code)
    return codes


def golden_stage(plugins, run: Run, cfg: TTSConfig, timing: dict) -> dict[str, Any]:
    """An ordinary evaluation of every code, in DIR/golden, on this run's executor."""
    t0 = time.perf_counter()
    golden_run = evaluate(plugins, EvaluateConfig(
        benchmark=cfg.benchmark, out=str(Path(cfg.out) / "golden"), samples=cfg.codes, data=cfg.data,
        benchmark_options=cfg.benchmark_options, tasks=cfg.tasks, limit=cfg.limit, executor=cfg.executor,
        executor_options=cfg.executor_options, workers=cfg.workers, overwrite=cfg.overwrite, progress=cfg.progress,
        allow_partial=True), executor=run.executor)  # the tasks best-of-N runs on are the codes file's
    timing["golden_s"] = round(time.perf_counter() - t0, 3)
    return golden_run


def task_tests(problem: Problem, suites: list[list[str]], test_timeout: float) -> TaskTests:
    tests, first = unique_tests(suites)
    parsed, columns, unparsed = [], [], []
    for j, src in enumerate(tests):
        try:
            parsed.append(parse_assert(src, problem.entry_point, f"gen/{j}"))
            columns.append(j)
        except AssertParseError as exc:
            unparsed.append({"test": src, "reason": exc.reason})
    key = hashlib.sha256(json.dumps([tests, test_timeout]).encode()).hexdigest()[:16]
    return TaskTests(tests, first, columns, parsed, unparsed, len(suites), key)


def matrix_stage(run: Run, cfg: TTSConfig, codes: dict[str, list[str]], tests: dict[str, TaskTests],
                 timing: dict) -> dict[tuple[str, str], dict]:
    """Each distinct code of a task against the task's parsed unique tests (no early stop);
    rows by (task, job id), resumed ones included."""
    done = {(r["task_id"], r["job"]): r for r in run.store.load_rows()}
    rows: dict[tuple[str, str], dict] = {}
    jobs: dict[str, tuple[str, ExecJob]] = {}
    for task_id, tt in tests.items():
        if not tt.parsed:
            continue
        p = run.problems[task_id]
        limits = [cfg.test_timeout] * len(tt.parsed)
        for code in dict.fromkeys(codes[task_id]):
            job_id = f"{task_id}@{code_hash(code)}@{tt.key}"
            if (task_id, job_id) in done:
                rows[(task_id, job_id)] = done[(task_id, job_id)]
                continue
            jobs[job_id] = (task_id, ExecJob(job_id=job_id, code=code, tests=tt.parsed, entry_point=p.entry_point,
                                             prelude=p.prelude, time_limits=limits, batch_timeout=batch_timeout(limits),
                                             memory_mb=run.bench.memory_mb, fail_fast=False, large_output="value"))
    t0 = time.perf_counter()
    with stage_bar("matrix", len(jobs), cfg.progress) as bar:
        def landed(raw):
            task_id, job = jobs[raw.job_id]
            v = judge(task_id, 0, job, raw, run.bench.checker(run.problems[task_id]))
            row = {"task_id": task_id, "job": raw.job_id, "status": v.status,
                   "passes": [t.status == "pass" for t in v.tests]}
            rows[(task_id, raw.job_id)] = row
            run.store.append_row(row)
            bar.update(1)

        stream_jobs(run.executor, [j for _, j in jobs.values()], on_result=landed)
    timing["matrix_s"] = round(time.perf_counter() - t0, 3)
    return rows


def select(cfg: TTSConfig, codes: dict[str, list[str]], tests: dict[str, TaskTests], golden: dict[str, list[bool]],
           rows: dict[tuple[str, str], dict], skipped: dict[str, str], timing: dict) -> dict[str, Any]:
    """Per task, the code passing the most unique tests; then the metrics."""
    selection_tasks = []
    sandbox_errors = 0
    for task_id, tt in tests.items():
        passes = []
        for code in codes[task_id]:
            row = rows.get((task_id, f"{task_id}@{code_hash(code)}@{tt.key}"))
            full = [False] * len(tt.tests)
            if row is not None:
                sandbox_errors += row["status"] == SANDBOX_ERROR
                for col, ok in zip(tt.columns, row["passes"]):
                    full[col] = ok
            passes.append(full)
        chosen = select_best(passes)
        selection_tasks.append({"task_id": task_id, "tests": tt.tests, "first_suite": tt.first_suite,
                                "columns": tt.columns, "unparsed": tt.unparsed, "suites": tt.suites,
                                "passes": passes, "golden": golden[task_id], "chosen": chosen,
                                "chosen_correct": golden[task_id][chosen], "pass_counts": [sum(r) for r in passes]})

    def mean(xs):
        xs = list(xs)
        return sum(xs) / len(xs) if xs else 0.0

    metrics = {"best_of_n": mean(t["chosen_correct"] for t in selection_tasks),
               "avg_at_m": mean(mean(t["golden"]) for t in selection_tasks),
               "oracle": mean(any(t["golden"]) for t in selection_tasks)}
    results: dict[str, Any] = {
        "command": "tts", "benchmark": cfg.benchmark, "codes": cfg.codes, "tests": cfg.tests, "metrics": metrics,
        "selection_rule": "most unique generated tests passed; ties: the lowest sample index",
        "counts": {"tasks": len(selection_tasks),
                   "max_codes": max((len(t["golden"]) for t in selection_tasks), default=0),
                   "max_suites": max((t["suites"] for t in selection_tasks), default=0),
                   "unique_tests": sum(len(t["tests"]) for t in selection_tasks),
                   "unparsed_tests": sum(len(t["unparsed"]) for t in selection_tasks),
                   "tasks_without_tests": sum(1 for t in selection_tasks if not t["columns"]),
                   "matrix_rows": len(rows), "matrix_sandbox_errors": sandbox_errors, "skipped_tasks": len(skipped)},
        "timing": timing, "skipped_tasks": skipped,
        "tasks": {t["task_id"]: {k: t[k] for k in ("chosen", "chosen_correct", "pass_counts", "golden", "suites",
                                                   "unparsed")} | {"unique_tests": len(t["tests"])}
                  for t in selection_tasks},
    }
    if cfg.curves:
        results["curves"] = curves(selection_tasks, grid(results["counts"]["max_codes"]),
                                   [0] + grid(results["counts"]["max_suites"]))
    return results
