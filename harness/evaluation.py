"""``codea1 evaluate``: score a samples file on a benchmark.

Stages (one progress bar each): reference (run each needed reference solution once, cached),
evaluate (every sample not already judged in the run directory). Verdicts are appended to
verdicts.jsonl as they land; results.json is written at the end.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from codea1.harness.execution import batch_timeout, run_jobs, time_limits
from codea1.harness.judge import RECHECK, judge
from codea1.harness.plugin_manager import Plugins
from codea1.harness.progress import stage_bar
from codea1.harness.records import PASS, SANDBOX_ERROR, SKIPPED, VERDICT_STATUSES, CodeSample, ExecJob, Problem, Verdict
from codea1.harness.reference import ReferenceRun, run_references
from codea1.harness.runstore import RunStore
from codea1.harness.samples import code_hash, load_samples


@dataclass
class _Prepared:
    problem: Problem  # tests the reference could not answer dropped ("drop_test" policy)
    ref: ReferenceRun
    keep: list[int]  # index of each kept test in the original problem
    limits: list[float]


@dataclass
class EvaluateConfig:
    benchmark: str
    out: str
    samples: str | None = None
    data: str | None = None
    executor: str = "subprocess"
    executor_options: dict[str, str] = field(default_factory=dict)
    benchmark_options: dict[str, str] = field(default_factory=dict)
    k: list[int] = field(default_factory=lambda: [1])
    workers: int | None = None
    overwrite: bool = False
    progress: bool = True
    reference_cache: bool = True
    dedupe: bool = True  # run identical programs of a task once and share the verdict

    IDENTITY = ("benchmark", "samples", "data", "benchmark_options")


def _outcomes(verdicts: list[Verdict], group: str | None = None) -> dict[str, list[bool]]:
    """task -> pass/fail per judged sample, in sample order; skipped and sandbox errors left out."""
    by_task: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if v.status in (SKIPPED, SANDBOX_ERROR):
            continue
        by_task[v.task_id].append(v)
    out = {}
    for task, vs in by_task.items():
        vs.sort(key=lambda v: v.sample_index)
        out[task] = [(v.groups.get(group) == PASS) if group else v.passed for v in vs]
    return out


def compute_metrics(plugins: Plugins, verdicts: list[Verdict], ks: list[int], applies_to: str = "code"
                    ) -> tuple[dict[str, float], dict[str, str], dict[str, dict[str, float]]]:
    """(metrics, notes, per-task figures). Groups (e.g. HumanEval+'s base tests) get their own
    entries, named "<group>:<metric>", when a benchmark has more than one group."""
    groups = sorted({g for v in verdicts for g in v.groups})
    targets: list[tuple[str, str | None]] = [("", None)]
    if len(groups) > 1:
        targets += [(f"{g}:", g) for g in groups]
    metrics, notes, per_task = {}, {}, defaultdict(dict)
    for prefix, group in targets:
        outcomes = _outcomes(verdicts, group)
        for name in plugins.metrics.names():
            metric = plugins.metrics.create(name)
            if metric.applies_to != applies_to:
                continue
            for k in ks:
                label = prefix + metric.label(k)
                value = metric.compute(outcomes, k)
                if value.value is None:
                    notes[label] = value.note
                    continue
                metrics[label] = value.value
                if not prefix:
                    for task, fig in value.per_task.items():
                        per_task[task][label] = fig
    return metrics, notes, per_task


def evaluate(plugins: Plugins, cfg: EvaluateConfig) -> dict[str, Any]:
    bench = plugins.benchmarks.create(cfg.benchmark, {**cfg.benchmark_options, **({"data": cfg.data} if cfg.data else {})})
    problems = {p.task_id: p for p in bench.load()}
    samples_path = cfg.samples or bench.default_samples()
    if not samples_path:
        raise ValueError(f"benchmark {cfg.benchmark!r} has no default samples: pass --samples FILE")
    samples = load_samples(samples_path, problems, bench.sample_code)
    config = {**asdict(cfg), "samples": samples_path, "command": "evaluate"}
    store = RunStore(cfg.out, config, EvaluateConfig.IDENTITY, overwrite=cfg.overwrite)
    previous = store.load_verdicts()
    verdicts: dict[tuple[str, int], Verdict] = {}
    todo: list[CodeSample] = []
    for s in samples:
        old = previous.get((s.task_id, s.index))
        if old is not None and old.code_hash == code_hash(s.code) and old.status != SANDBOX_ERROR:
            verdicts[(s.task_id, s.index)] = old
        else:
            todo.append(s)
    plugins.hook.codea1_run_started(config=store.config, out_dir=str(store.dir))

    def record(v: Verdict):
        v.compact()
        verdicts[(v.task_id, v.sample_index)] = v
        store.append(v)
        plugins.hook.codea1_verdict_recorded(verdict=v)

    timing: dict[str, float] = {}
    # References of every sampled task (cached): reference failures are reported on resume too.
    needed = {s.task_id for s in samples}
    skipped_tasks: dict[str, str] = {}
    for task_id in sorted(needed):
        missing = bench.missing_libraries(problems[task_id])
        if missing:
            skipped_tasks[task_id] = f"skipped: missing library {', '.join(missing)}"
    executor = plugins.executors.create(cfg.executor, cfg.executor_options, workers=cfg.workers)
    with executor:
        store.write_environment({"executor": executor.info()})
        t0 = time.perf_counter()
        to_run = [problems[t] for t in sorted(needed) if t not in skipped_tasks]
        with stage_bar("reference", len(to_run), cfg.progress) as bar:
            refs = run_references(to_run, executor, checks_tests=lambda p: not bench.reference_expected(p),
                                  memory_mb=bench.memory_mb, progress=bar, use_cache=cfg.reference_cache)
        timing["reference_s"] = time.perf_counter() - t0

        reference_failures = {}
        prepared: dict[str, _Prepared] = {}
        for p in to_run:
            ref = refs[p.task_id]
            if ref.failed:
                reference_failures[p.task_id] = {p.tests[i].id: msg for i, msg in sorted(ref.failed.items())}
            policy = bench.reference_failure_policy
            if ref.error or (ref.failed and policy == "skip_task"):
                first = ref.error or next(iter(ref.failed.values()))
                skipped_tasks[p.task_id] = f"skipped: the reference solution fails here ({first[:300]})"
                continue
            keep = list(range(len(p.tests)))
            if ref.failed and policy == "drop_test":
                keep = [i for i in keep if i not in ref.failed]
                p = Problem(**{**p.__dict__, "tests": [p.tests[i] for i in keep]})
            prepared[p.task_id] = _Prepared(p, ref, keep, time_limits([ref.times[i] for i in keep],
                                                                        bench.min_time_limit, bench.time_factor))

        jobs: dict[str, tuple[CodeSample, ExecJob]] = {}
        copies: dict[str, list[CodeSample]] = defaultdict(list)  # job id -> identical samples
        for s in todo:
            if s.task_id in skipped_tasks:
                record(Verdict(task_id=s.task_id, sample_index=s.index, status=SKIPPED,
                               message=skipped_tasks[s.task_id], code_hash=code_hash(s.code)))
                continue
            job_id = f"{s.task_id}@{code_hash(s.code)}" if cfg.dedupe else f"{s.task_id}#{s.index}"
            if job_id in jobs:  # the same program of the same task: judged once
                copies[job_id].append(s)
                continue
            prep = prepared[s.task_id]
            p = prep.problem
            large = "digest" if bench.reference_expected(p) else "value"
            job = ExecJob(job_id=job_id, code=s.code, tests=p.tests, entry_point=p.entry_point,
                          prelude=p.prelude, time_limits=prep.limits, batch_timeout=batch_timeout(prep.limits),
                          memory_mb=bench.memory_mb, fail_fast=True, large_output=large)
            jobs[job.job_id] = (s, job)

        t0 = time.perf_counter()
        recheck: list[ExecJob] = []
        timing["executed_programs"] = len(jobs)
        with stage_bar("evaluate", len(jobs), cfg.progress) as bar:
            def landed(raw):
                s, job = jobs[raw.job_id]
                prep = prepared[s.task_id]
                p = prep.problem
                expected = digest = None
                if bench.reference_expected(p):
                    expected = lambda i: bench.expected_from_reference(p, prep.ref.value(prep.keep[i]))  # noqa: E731
                    digest = lambda i: prep.ref.digests.get(prep.keep[i])  # noqa: E731
                v = judge(s.task_id, s.index, job, raw, bench.checker(p), expected, digest)
                if v.status == RECHECK:
                    recheck.append(dataclasses.replace(job, large_output="value"))
                    return
                v.code_hash = code_hash(s.code)
                record(v)
                for twin in copies.get(job.job_id, ()):
                    record(dataclasses.replace(v, sample_index=twin.index))
                bar.update(1)

            def settled_failure():
                """early_stop for the executor: True once a test has certainly failed, as
                evalplus' fast check does, but decided here on plain data."""
                checkers = {}

                def stop(job, i, outcome):
                    if outcome.status in ("exception", "timeout", "failed"):
                        return True
                    if outcome.status != "ok" or outcome.digest is not None:
                        return False  # a digest mismatch is not yet a failure (1 == 1.0)
                    s, _ = jobs[job.job_id]
                    prep = prepared[s.task_id]
                    test = job.tests[i]
                    if bench.reference_expected(prep.problem):
                        expected = bench.expected_from_reference(prep.problem, prep.ref.value(prep.keep[i]))
                    elif test.expected_source:
                        return False
                    else:
                        expected = test.expected
                    checker = checkers.setdefault(job.job_id, bench.checker(prep.problem))
                    return not checker.check(test, outcome.value, expected)[0]

                return stop

            run_jobs(executor, [j for _, j in jobs.values()], on_result=landed, early_stop=settled_failure())
            if recheck:  # large outputs whose digest differed: judge them on full values
                run_jobs(executor, recheck, on_result=landed, early_stop=settled_failure())
        timing["evaluate_s"] = time.perf_counter() - t0
        timing["rechecked_samples"] = len(recheck)

    all_verdicts = [verdicts[(s.task_id, s.index)] for s in samples]
    metrics, notes, per_task = compute_metrics(plugins, all_verdicts, cfg.k)
    counts = {status: 0 for status in VERDICT_STATUSES}
    for v in all_verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    by_task: dict[str, list[Verdict]] = defaultdict(list)
    for v in all_verdicts:
        by_task[v.task_id].append(v)
    tasks = {}
    for task_id in problems:
        vs = by_task.get(task_id)
        if not vs:
            continue
        tasks[task_id] = {"n": len(vs), "passed": sum(v.passed for v in vs),
                          "statuses": [v.status for v in sorted(vs, key=lambda v: v.sample_index)],
                          **per_task.get(task_id, {})}
        if task_id in skipped_tasks:
            tasks[task_id]["skipped"] = skipped_tasks[task_id]
    results = {"benchmark": cfg.benchmark, "samples": samples_path, "executor": cfg.executor,
               "metrics": metrics, "metric_notes": notes, "counts": {"samples": len(all_verdicts), **counts},
               "resumed": len(samples) - len(todo), "timing": timing, "skipped_tasks": skipped_tasks,
               "reference_failures": reference_failures, "tasks": tasks}
    store.write_results(results)
    plugins.hook.codea1_run_finished(results=results, out_dir=str(store.dir))
    return results
