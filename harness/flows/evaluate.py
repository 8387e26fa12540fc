"""``codea1 evaluate``: score a samples file on a benchmark.

Stages (one progress bar each where work is done): read the samples; resume (verdicts
already in verdicts.jsonl for the same program are kept); reference (expected sides that
are expressions computed first, in jobs of their own: ``harness.verdicts.expected``; then each needed
reference solution run once, cached: expected outputs, time limits, tests the reference
itself fails); judge (every sample not judged yet, identical programs of a task once); summarise
(metrics from the code-metric plugins). Verdicts are appended to verdicts.jsonl as they
land; results.json is written at the end, and for evalplus' benchmarks an evalplus-style
``*_eval_results.json`` beside it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from codea1.harness.errors import ConfigError
from codea1.harness.intervals import METHOD, MIN_RANKED_TASKS, metric_interval, over_tasks
from codea1.harness.metrics import CodeMetric, in_order
from codea1.harness.progress import stage_bar
from codea1.harness.records import (
    OUTSIDE,
    PASS,
    SANDBOX_ERROR,
    SKIPPED,
    VERDICT_STATUSES,
    CodeSample,
    ExecJob,
    Problem,
    Verdict,
)
from codea1.harness.run import LimitedRunConfig, Run, open_run
from codea1.harness.samples import code_hash, load_samples
from codea1.harness.verdicts.execution import batch_timeout, clock_counts, stream_jobs
from codea1.harness.verdicts.expected import settle_expected_sources
from codea1.harness.verdicts.judge import RECHECK, ReplayChecker, judge
from codea1.harness.verdicts.reference import ReferenceRun, run_references


@dataclass(kw_only=True)
class EvaluateConfig(LimitedRunConfig):
    samples: str | None = None
    k: list[int] = field(default_factory=lambda: [1])
    reference_cache: bool = True
    dedupe: bool = True  # run identical programs of a task once and share the verdict
    allow_partial: bool = False  # score a samples file that lacks some of the selected tasks (labelled partial)
    exclude_skipped: bool = False  # leave skipped tasks out of the figures (labelled) instead of failing them
    # evalplus' --test-details: no early stop, every test of every sample runs and is recorded
    # (a verdict keeps up to 64 that did not pass). Verdicts and pass@k are the same either
    # way; the plus tests of a sample that failed a base test run too, so plus:pass@k counts
    # the plus group on its own, as evalplus' plus_status does
    test_details: bool = False

    COMMAND = "evaluate"
    ROWS = "verdicts.jsonl"
    # "limits": the values used, so an option given at its default is the same run as none
    IDENTITY = ("benchmark", "samples", "data", "benchmark_options", "limits", "test_details")

    def record(self) -> dict[str, Any]:
        record = super().record()
        if not self.test_details:  # absent, as in the run directories made before it existed
            del record["test_details"]
        return record


@dataclass
class Prepared:
    """A task ready to judge samples against: its tests (those the reference could not
    answer dropped, under the "drop_test" policy), the reference run, and time limits."""

    problem: Problem
    ref: ReferenceRun
    keep: list[int]  # index of each kept test in the original problem
    limits: list[float]
    expected: Callable[[int], Any] | None = None  # kept test -> expected value, where the reference's output is it


_UNSET = object()


def expected_values(bench, problem: Problem, ref: ReferenceRun, keep: list[int]) -> Callable[[int], Any]:
    """kept test i -> its expected value, made from the reference's output once per problem:
    early stop and the judge ask for it for every output of every sample (HumanEval+: 300,000
    times), and a large output is read from disk only when a sample first needs it."""
    values = [_UNSET] * len(keep)

    def expected(i: int) -> Any:
        value = values[i]
        if value is _UNSET:
            value = values[i] = bench.expected_from_reference(problem, ref.value(keep[i]))
        return value

    return expected


def evaluate(plugins, cfg: EvaluateConfig, executor=None) -> dict[str, Any]:
    with open_run(plugins, cfg, executor) as run:
        samples, samples_path, dropped = read_samples(run, cfg)
        check_coverage(run, cfg, {s.task_id for s in samples}, samples_path)
        run.start(samples=samples_path)
        log = VerdictLog(run)
        todo = log.resume(samples)
        skipped = tasks_missing_libraries(run, samples)
        prepared, reference_failures, timing = reference_stage(run, cfg, samples, skipped)
        timing |= judge_stage(run, cfg, todo, prepared, skipped, log)
        results = summarise(run, cfg, samples, log, skipped, reference_failures, timing, dropped)
        write_evalplus_results(run, samples, samples_path, log)
        return run.finish(results)


# -- stages ----------------------------------------------------------------------------------

def read_samples(run: Run, cfg: EvaluateConfig) -> tuple[list[CodeSample], str, int]:
    """The samples of the selected tasks, in file order (checked against every task of the
    benchmark, so a wrong file is named as such), and how many samples of other tasks
    (outside --tasks or --limit) were left out."""
    path = cfg.samples or run.bench.default_samples()
    if not path:
        raise ConfigError(f"benchmark {cfg.benchmark!r} has no default samples: pass --samples FILE")
    samples = load_samples(path, run.all_problems, run.bench.sample_code)
    kept = [s for s in samples if s.task_id in run.problems]
    return kept, path, len(samples) - len(kept)


def check_coverage(run: Run, cfg, covered: set[str], path: str, what: str = "samples") -> None:
    """A samples (or tests) file must cover every selected task (evalplus refuses one that
    does not): otherwise its figures would read as the benchmark's. ``cfg.allow_partial``
    scores it, labelled."""
    missing = [t for t in run.problems if t not in covered]
    if not missing or cfg.allow_partial:
        return
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    which = "selected tasks" if len(run.problems) < len(run.all_problems) else f"tasks of {cfg.benchmark}"
    raise ConfigError(f"{path}: {what} for {len(covered & set(run.problems))} of the {len(run.problems)} {which} "
                      f"(none for {shown}); score them as a partial run with --allow-partial, or choose the "
                      f"tasks with --tasks or --limit")


def task_coverage(run: Run, cfg, covered: set[str], skipped: dict[str, str], dropped: int = 0,
                  dropped_what: str = "sample(s)", exclude_skipped: bool = False) -> dict[str, Any]:
    """What the figures cover: tasks with samples or tests (``tasks``) of the benchmark's
    (``of``), which of them are skipped, and how skips count; ``partial`` when the figures
    are not over the whole benchmark; ``dropped``: rows of tasks outside the selection."""
    tasks = len(covered)
    scored = tasks - len(skipped) if exclude_skipped else tasks
    selected_by = [flag for flag, given in (("--tasks", cfg.tasks), ("--limit", cfg.limit is not None),
                                            ("--allow-partial", tasks < len(run.problems))) if given]
    return {"tasks": tasks, "of": len(run.all_problems), "scored": scored, "skipped": len(skipped),
            "skipped_count_as": "left out" if exclude_skipped else "failures",
            "partial": scored < len(run.all_problems), "selected_by": selected_by,
            "dropped": dropped, "dropped_what": dropped_what}


def coverage_line(cov: dict[str, Any]) -> str:
    """The summary's line on what the figures cover (results.json's ``coverage``)."""
    line = f"tasks: {cov['scored']} of {cov['of']}"
    notes = []
    if cov["partial"]:
        notes.append("PARTIAL: the figures are not the whole benchmark's"
                     + (f" (chosen with {', '.join(cov['selected_by'])})" if cov["selected_by"] else ""))
    if cov.get("dropped"):
        notes.append(f"{cov['dropped']} {cov.get('dropped_what', 'sample(s)')} of tasks outside the selection "
                     f"left out")
    if cov["skipped"]:
        notes.append(f"{cov['skipped']} skipped task(s) " + ("counted as failures (--exclude-skipped leaves them out)"
                                                             if cov["skipped_count_as"] == "failures"
                                                             else "left out of the figures (--exclude-skipped)"))
    return line + ("; " + "; ".join(notes) if notes else "")


class VerdictLog:
    """The verdicts of this run by (task, sample): resumed ones and new ones, each new one
    appended to verdicts.jsonl and announced as it lands."""

    def __init__(self, run: Run):
        self.run = run
        self.verdicts: dict[tuple[str, int], Verdict] = {}
        self.resumed = 0

    def resume(self, samples: list[CodeSample]) -> list[CodeSample]:
        """Keep earlier verdicts of the same programs; return the samples still to judge."""
        previous = self.run.store.load_verdicts()
        todo = []
        for s in samples:
            old = previous.get((s.task_id, s.index))
            if old is not None and old.code_hash == code_hash(s.code) and old.status != SANDBOX_ERROR:
                self.verdicts[(s.task_id, s.index)] = old
            else:
                todo.append(s)
        self.resumed = len(samples) - len(todo)
        return todo

    def record(self, verdict: Verdict) -> None:
        verdict.compact()
        self.verdicts[(verdict.task_id, verdict.sample_index)] = verdict
        self.run.store.append(verdict)
        self.run.plugins.hook.codea1_verdict_recorded(verdict=verdict)

    def of(self, samples: list[CodeSample]) -> list[Verdict]:
        return [self.verdicts[(s.task_id, s.index)] for s in samples]


def tasks_missing_libraries(run: Run, samples: list[CodeSample]) -> dict[str, str]:
    """Tasks that cannot be judged here (a library they import is missing): task -> reason."""
    skipped = {}
    for task_id in sorted({s.task_id for s in samples}):
        missing = run.bench.missing_libraries(run.problems[task_id])
        if missing:
            skipped[task_id] = f"skipped: missing library {', '.join(missing)}"
    return skipped


def reference_stage(run: Run, cfg: EvaluateConfig, samples: list[CodeSample], skipped: dict[str, str]
                    ) -> tuple[dict[str, Prepared], dict[str, dict[str, str]], dict[str, float]]:
    """Run the reference of every sampled task (cached, reported on resume too); tasks whose
    reference fails here are added to ``skipped`` or lose the tests it cannot answer."""
    bench = run.bench
    to_run = [run.problems[t] for t in sorted({s.task_id for s in samples}) if t not in skipped]
    t0 = time.perf_counter()
    # Expected sides that are expressions are computed here, in jobs of their own, before the
    # reference or any sample runs: no job of a program carries them (harness.verdicts.expected).
    to_run = settle_expected_sources(run.executor, to_run, memory_mb=bench.memory_mb, progress=cfg.progress)
    refs = run_references(to_run, run.executor, checks_tests=lambda p: not bench.reference_expected(p),
                          memory_mb=bench.memory_mb, progress=cfg.progress, use_cache=cfg.reference_cache)
    timing = {"reference_s": time.perf_counter() - t0}
    reference_failures, prepared = {}, {}
    for p in to_run:
        ref = refs[p.task_id]
        if ref.failed:
            reference_failures[p.task_id] = {p.tests[i].id: msg for i, msg in sorted(ref.failed.items())}
        policy = bench.reference_failure_policy
        if ref.error or (ref.failed and policy == "skip_task"):
            first = ref.error or next(iter(ref.failed.values()))
            skipped[p.task_id] = f"skipped: the reference solution fails here ({first[:300]})"
            continue
        keep = list(range(len(p.tests)))
        if ref.failed and policy == "drop_test":
            keep = [i for i in keep if i not in ref.failed]
            p = dataclasses.replace(p, tests=[p.tests[i] for i in keep])
        limits = bench.time_limits(p, [ref.times[i] for i in keep])
        expected = expected_values(bench, p, ref, keep) if bench.reference_expected(p) else None
        prepared[p.task_id] = Prepared(p, ref, keep, limits, expected)
    return prepared, reference_failures, timing


def sample_jobs(run: Run, cfg: EvaluateConfig, todo: list[CodeSample], prepared: dict[str, Prepared],
                skipped: dict[str, str], log: VerdictLog
                ) -> tuple[dict[str, tuple[CodeSample, ExecJob]], dict[str, list[CodeSample]]]:
    """One job per distinct program of a task (its identical twins share the verdict);
    samples of skipped tasks get their skipped verdict here."""
    bench = run.bench
    jobs: dict[str, tuple[CodeSample, ExecJob]] = {}
    copies: dict[str, list[CodeSample]] = defaultdict(list)  # job id -> identical samples
    for s in todo:
        if s.task_id in skipped:
            log.record(Verdict(task_id=s.task_id, sample_index=s.index, status=SKIPPED, message=skipped[s.task_id],
                               code_hash=code_hash(s.code)))
            continue
        job_id = f"{s.task_id}@{code_hash(s.code)}" if cfg.dedupe else f"{s.task_id}#{s.index}"
        if job_id in jobs:  # the same program of the same task: judged once
            copies[job_id].append(s)
            continue
        prep = prepared[s.task_id]
        p = prep.problem
        jobs[job_id] = (s, ExecJob(job_id=job_id, code=s.code, tests=p.tests, entry_point=p.entry_point,
                                   prelude=p.prelude, time_limits=prep.limits, batch_timeout=batch_timeout(prep.limits),
                                   memory_mb=bench.memory_mb, fail_fast=not cfg.test_details,
                                   large_output="digest" if bench.reference_expected(p) else "value"))
    return jobs, copies


def judge_stage(run: Run, cfg: EvaluateConfig, todo: list[CodeSample], prepared: dict[str, Prepared],
                skipped: dict[str, str], log: VerdictLog) -> dict[str, float]:
    """Judge every sample still to do; large outputs whose digest differs from the
    reference's are judged again on full values."""
    bench = run.bench
    jobs, copies = sample_jobs(run, cfg, todo, prepared, skipped, log)
    recheck: list[ExecJob] = []
    t0 = time.perf_counter()
    with stage_bar("evaluate", len(jobs), cfg.progress) as bar:
        def landed(raw):
            s, job = jobs[raw.job_id]
            prep = prepared[s.task_id]
            digest = None
            if prep.expected is not None:
                digest = lambda i: prep.ref.digests.get(prep.keep[i])  # noqa: E731
            checker = checkers.pop(job.job_id, None)
            checker = checker.rewind() if checker is not None else bench.checker(prep.problem)
            v = judge(s.task_id, s.index, job, raw, checker, prep.expected, digest)
            if v.status == RECHECK:
                recheck.append(dataclasses.replace(job, large_output="value"))
                return
            v.code_hash = code_hash(s.code)
            log.record(v)
            for twin in copies.get(job.job_id, ()):
                log.record(dataclasses.replace(v, sample_index=twin.index))
            bar.update(1)

        checkers: dict[str, ReplayChecker] = {}  # job id -> the checks early stop made, for the judge

        def settled_failure(job, i, outcome) -> bool:
            """early_stop for the executor: True once a test has certainly failed, as
            evalplus' fast check does, but decided here on plain data."""
            if outcome.status in ("exception", "timeout", "failed"):
                return True
            if outcome.status != "ok" or outcome.digest is not None:
                return False  # a digest mismatch is not yet a failure (1 == 1.0)
            prep = prepared[jobs[job.job_id][0].task_id]
            test = job.tests[i]
            if prep.expected is not None:
                expected = prep.expected(i)
            elif test.expected_error is not None:
                return True  # its expected side could not be computed: the judge fails it
            else:
                expected = test.expected
            checker = checkers.get(job.job_id)
            if checker is None:
                checker = checkers[job.job_id] = ReplayChecker(lambda: bench.checker(prep.problem))
            return not checker.check(test, outcome.value, expected)[0]

        # Longest first: a task's reference time bounds its jobs', and a long job started last
        # keeps one worker busy after the others ran out of work (HumanEval/139: 3.7 s).
        cost = {t: sum(p.ref.times) for t, p in prepared.items()}
        ordered = sorted((j for _, j in jobs.values()), key=lambda j: -cost[jobs[j.job_id][0].task_id])
        stop = None if cfg.test_details else settled_failure
        stream_jobs(run.executor, ordered, on_result=landed, early_stop=stop)
        if recheck:  # large outputs whose digest differed: judge them on full values
            stream_jobs(run.executor, recheck, on_result=landed, early_stop=stop)
    return {"evaluate_s": time.perf_counter() - t0, "executed_programs": len(jobs), "rechecked_samples": len(recheck)}


def summarise(run: Run, cfg: EvaluateConfig, samples: list[CodeSample], log: VerdictLog, skipped: dict[str, str],
              reference_failures: dict, timing: dict, dropped: int = 0) -> dict[str, Any]:
    verdicts = log.of(samples)
    outside = wholly_outside(run.problems)
    metrics, notes, per_task, same, intervals = compute_metrics(run.plugins, verdicts, cfg.k,
                                                                skipped_fail=not cfg.exclude_skipped, outside=outside)
    scored_tasks = {v.task_id for v in verdicts if not cfg.exclude_skipped or v.status != SKIPPED}
    scored, scored_outside = len(scored_tasks), len(scored_tasks & outside)
    # the tasks a figure rests on, where fewer than the run's (the outside: figures)
    metric_tasks = {label: scored_outside for label in metrics if label.startswith(OUTSIDE)}
    for label in metrics:  # shown, and said to be too few to compare on
        rests_on = metric_tasks.get(label, scored)
        if rests_on < MIN_RANKED_TASKS and metrics[label] is not None and label not in same:
            notes[label] = "; ".join(x for x in (f"{over_tasks(rests_on)}: too few to rank", notes.get(label)) if x)
    counts = {status: 0 for status in VERDICT_STATUSES}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    # Verdicts a runner inside the program's own process decided (script tests that could not
    # be rewritten to report values): the program could have steered them.
    counts["judged_in_process"] = sum(v.judged == "in-process" for v in verdicts)
    judged_tasks = {v.task_id for v in verdicts}
    by_task: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_task[v.task_id].append(v)
    tasks = {}
    for task_id in run.problems:
        vs = sorted(by_task.get(task_id, []), key=lambda v: v.sample_index)
        if not vs:
            continue
        tasks[task_id] = {"n": len(vs), "passed": sum(v.passed for v in vs), "statuses": [v.status for v in vs],
                          **per_task.get(task_id, {})}
        if task_id in skipped:
            tasks[task_id]["skipped"] = skipped[task_id]
    return {"benchmark": cfg.benchmark, **provenance(run), "samples": run.store.config["samples"],
            "executor": cfg.executor,
            "coverage": task_coverage(run, cfg, {s.task_id for s in samples}, skipped, dropped,
                                      exclude_skipped=cfg.exclude_skipped),
            "metrics": metrics, "intervals": intervals, "metric_tasks": metric_tasks,
            "interval_method": METHOD, "metric_notes": notes, "metric_same": same,
            "counts": {"samples": len(verdicts), **counts},
            "judged": judged_block(judged_tasks, outside),
            "resumed": log.resumed, "timing": timing, "clock": clock_counts(run.executor), "skipped_tasks": skipped, "reference_failures": reference_failures, "tasks": tasks}


def provenance(run: Run) -> dict[str, Any]:
    """What a run measured, for results.json: the benchmark variant (its options in the
    name), the data file it actually read and that file's digest, and the limits."""
    config = run.store.config
    return {"variant": config.get("variant", run.cfg.benchmark), "data_read": config.get("data_read"),
            "data_digest": config.get("data_digest", {}), "limits": config.get("limits", {})}


def provenance_line(results: dict) -> str:
    """The summary's line on the data read: "data FILE (sha256 0123456789ab)"; "" for a
    benchmark's embedded data."""
    read, digest = results.get("data_read"), results.get("data_digest") or {}
    if not read:
        return ""
    return f"data {read}" + (f" (sha256 {digest['sha256'][:12]})" if digest.get("sha256") else "")


def clock_lines(clock: dict | None) -> list[str]:
    """The summary's lines on results.json's ``clock`` (``execution.clock_counts``): said only
    when the machine's load touched a time limit."""
    if not clock:
        return []
    lines = []
    if clock.get("tests_deferred"):
        lines.append(f"  time limits: {clock['tests_deferred']} test(s) ran past their limit on the wall clock while "
                     f"their process waited for a CPU ({clock.get('waited_for_cpu_s', 0):g} s in all); judged on their "
                     f"own time")
    if clock.get("timeouts_at_wall_cap"):
        lines.append(f"  time limits: {clock['timeouts_at_wall_cap']} timeout(s) at the wall cap, under their limit "
                     f"on own time: the machine's load may have decided them; run again on a quieter machine")
    return lines


JUDGED_RULE = ("a task is judged wholly outside when every test of it is decided by the harness, outside the "
               "program's process, on values the program sent (call tests; script tests rewritten to report "
               "values); a script test that could not be rewritten is decided by its framework running inside "
               "the program's process (in-process), where a program that writes raw memory can change any "
               "state: figures named outside:<metric> are the same figures over the wholly-outside tasks "
               "only, and a gap between the two is the in-process share's doing")


def wholly_outside(problems: dict) -> set[str]:
    """The tasks every test of which is judged outside the program's process: from the
    problems as loaded (the benchmark's rewrite), never from what a program did."""
    return {task for task, p in problems.items() if all(t.judged == "parent" for t in p.tests)}


def judged_block(tasks: set[str], outside: set[str]) -> dict:
    """results.json's ``judged``: how many of the judged tasks are judged wholly outside."""
    return {"tasks": len(tasks), "tasks_wholly_outside": len(tasks & outside),
            "tasks_with_in_process_tests": len(tasks - outside), "rule": JUDGED_RULE}


def verdict_lines(counts: dict, judged: dict | None = None) -> list[str]:
    """The summary's lines on verdicts (results.json's ``counts``): each status's count, then
    what a sandbox error and an in-process verdict mean for the figures above them
    (``judged``: results.json's block of that name)."""
    lines = ["verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()
                                      if k not in ("samples", "judged_in_process") and v)]
    if counts.get(SANDBOX_ERROR):
        lines.append(f"  {counts[SANDBOX_ERROR]} sandbox error(s): the executor failed (retried once), not the "
                     f"program; counted as failures. Run the same command again to retry them.")
    if counts.get("judged_in_process"):
        lines.append(f"  {counts['judged_in_process']} of {counts.get('samples', '?')} verdicts judged in the "
                     f"program's own process (script tests a runner inside the program decided)")
    if judged and judged.get("tasks_with_in_process_tests"):
        lines.append(f"  {judged['tasks_with_in_process_tests']} of {judged['tasks']} tasks have tests judged "
                     f"in-process; {OUTSIDE}<metric>: the same figure over the {judged['tasks_wholly_outside']} "
                     f"tasks judged wholly outside (a gap between the two is the in-process share's doing)")
    return lines


def compute_metrics(plugins, verdicts: list[Verdict], ks: list[int], skipped_fail: bool = True,
                    outside: set[str] | None = None):
    """(metrics, notes, per-task figures, same, intervals: ``code_metrics``) from the code-metric plugins. Groups (e.g.
    HumanEval+'s base tests) get their own entries, named "<group>:<metric>", when a benchmark
    has more than one group. ``outside``: the tasks judged wholly outside the program's process
    (``wholly_outside``); where some judged task is not, each figure is given again over those
    tasks alone, named "outside:<metric>"."""
    groups = sorted({g for v in verdicts for g in v.groups})
    targets: list[tuple[str, str | None]] = [("", None)]
    if len(groups) > 1:
        targets += [(f"{g}:", g) for g in groups]
    outcomes = {prefix: sample_outcomes(verdicts, group, skipped_fail) for prefix, group in targets}
    if outside is not None and set(outcomes[""]) - outside:
        outcomes[OUTSIDE] = {t: o for t, o in outcomes[""].items() if t in outside}
    return code_metrics(plugins, outcomes, ks)


def code_metrics(plugins, outcomes: dict[str, dict[str, list[bool]]], ks: list[int]
                 ) -> tuple[dict[str, float], dict[str, str], dict[str, dict[str, float]], dict[str, str],
                            dict[str, tuple[float, float] | None]]:
    """Every code-metric plugin, in printing order, at every k (a metric computed at n: at
    the number of samples every task has; none where tasks have different numbers) over ``outcomes`` (a metric-name prefix, "" or
    "<group>:", -> task -> pass/fail per sample, in sample order): (metrics, notes on the
    undefined ones, per-task figures of the unprefixed outcomes, same). ``same`` maps a
    figure computed at n that equals one before it to that one (avg@n is pass@1 when every
    task has n samples): the summary prints the first and names the other beside it. The
    report computes evalplus results with it too, so both read alike. ``intervals``: each
    figure's 95 % interval over tasks (``harness.intervals``)."""
    metrics, notes, per_task, same, intervals = {}, {}, defaultdict(dict), {}, {}
    for prefix, by_task in outcomes.items():
        # A metric computed at n needs the same n everywhere: with 1 sample here and 2 there,
        # "the first n" would be the first sample of every task, which is not what it names.
        sizes = {len(o) for o in by_task.values() if o}
        judged = {t: o for t, o in by_task.items() if o}  # the tasks an interval draws from
        for metric in in_order(plugins, CodeMetric):
            for k in ((list(sizes) if len(sizes) == 1 else []) if metric.at_n else ks):
                label = prefix + metric.label(k)
                value = metric.compute(by_task, k)
                if value.value is None:
                    notes[label] = value.note
                    continue
                if metric.at_n:
                    twin = next((m for m, v in metrics.items() if m.startswith(prefix) and ":" not in m[len(prefix):]
                                 and abs(v - value.value) < 1e-12), None)
                    if twin is not None:
                        same[label] = twin
                metrics[label] = value.value
                intervals[label] = metric_interval(lambda units, m=metric, k=k: m.compute(units, k), judged)
                if not prefix:
                    for task, fig in value.per_task.items():
                        per_task[task][label] = fig
    return metrics, notes, per_task, same, intervals


def sample_outcomes(verdicts: list[Verdict], group: str | None = None, skipped_fail: bool = True
                    ) -> dict[str, list[bool]]:
    """task -> pass/fail per sample, in sample order. A skipped sample (its task cannot be
    judged here: a library missing, the reference failing) is a failure, as bigcodebench
    counts it, unless ``skipped_fail`` is False (then its task is left out); a sandbox error
    (the executor failed, retried once: nothing a program can cause) is a failure too, so no
    status a program can reach takes a sample out of the denominators."""
    by_task: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if skipped_fail or v.status != SKIPPED:
            by_task[v.task_id].append(v)
    return {task: [(v.groups.get(group) == PASS) if group else v.passed
                   for v in sorted(vs, key=lambda v: v.sample_index)]
            for task, vs in by_task.items()}


def write_evalplus_results(run: Run, samples: list[CodeSample], samples_path: str, log: VerdictLog) -> Path | None:
    """evalplus' ``*_eval_results.json`` for the benchmarks evalplus knows, so that scripts
    written for evalplus read this run as they read evalplus' own."""
    document = run.bench.evalplus_results(samples, log.of(samples), run.problems)
    if document is None:
        return None
    name = "eval_results.json" if Path(samples_path).is_dir() else Path(samples_path).name.replace(".jsonl", "") + \
        "_eval_results.json"
    path = run.store.dir / name
    path.write_text(json.dumps(document))
    return path
