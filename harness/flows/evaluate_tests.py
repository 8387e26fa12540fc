"""``codea1 evaluate-tests``: score generated tests (a Test LLM's output) against reference code.

Per task, the first max(k) tests (in generation order) go through three stages, each one
batch through the executor, each with one progress bar:

1. validity (``harness.verdicts.validity``): every test runs against the reference; it is valid when
   it executes and its assertion holds, and holds again in a second run under another hash
   seed and random state and under the time limit mutants get (else "nondeterministic");
   an unparseable assert is an invalid test in its position;
2. coverage: line and branch coverage of the reference function by the first k tests,
   measured with coverage.py inside the sandbox;
3. mutants: mutants of the reference (``harness.mutation``, cosmic-ray's operators) run
   against the leading valid tests of eligible tasks; a mutant is killed when a test fails
   or errors, or when the mutant does not even load. A mutant's tests get evalplus' limits from
   the reference's times in the second validation run (``--min-time-limit``,
   ``--gt-time-limit-factor``; by default max(1 s, 4 x)) and the
   mutant a budget of at least their sum plus load time, so a test that is slow but valid
   on the reference cannot time out an equally fast mutant. A timeout is no kill: the
   mutant's ``first_timeout`` is kept, and for k beyond it the mutant counts as neither
   killed nor completed (its later tests did not run).

Each task is appended to tasks.jsonl as soon as its last mutant lands (a resumed run skips
it); metrics come from these records through the test-metric plugins.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from codea1.harness.errors import Codea1Error, ConfigError
from codea1.harness.flows.evaluate import check_coverage, provenance, task_coverage
from codea1.harness.intervals import METHOD, MIN_RANKED_TASKS, metric_interval, over_tasks
from codea1.harness.jsonl import json_rows
from codea1.harness.metrics import TestMetric, in_order
from codea1.harness.progress import stage_bar
from codea1.harness.records import OUTSIDE, ExecJob, Problem, TaskRecord, TestCase
from codea1.harness.run import LimitedRunConfig, Run, open_run
from codea1.harness.verdicts.execution import clock_counts, stream_jobs, time_limits
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.responses import extract_tests
from codea1.harness.verdicts.validity import SuiteCheck, check_suites

GOLDEN = "golden"


MUTANT_LOAD_ALLOWANCE = 5.0  # seconds of a mutant's budget for loading it, beyond its tests' limits


class TestsFileError(Codea1Error):
    """A tests file that cannot be read: names file, line and field."""

    __test__ = False


@dataclass(kw_only=True)
class EvaluateTestsConfig(LimitedRunConfig):
    tests: str  # a tests file, or "golden"
    k: list[int] = field(default_factory=lambda: [1, 2, 5])
    mutant_timeout: float = 10.0  # per mutant, all its tests (the reference evaluation's 10 s); at least their limits + 5 s
    test_timeout: float = 5.0  # per test, when validating on the reference
    mut_task_set: str = "per-k"  # or "largest-k": the reference fork's quirk
    coverage: bool = True
    suite: int = 0  # which suite of a task, when the tests file holds several (rows with "index")
    # Asserts outside the paper's form run as before, marked in-process (never for training).
    allow_other_forms: bool = False
    allow_partial: bool = False  # score a tests file that lacks some of the selected tasks (labelled partial)

    COMMAND = "evaluate-tests"
    ROWS = "tasks.jsonl"
    IDENTITY = ("benchmark", "tests", "data", "benchmark_options", "mutant_timeout", "test_timeout", "suite",
                "allow_other_forms", "limits")  # the limits used: an option at its default changes nothing


@dataclass
class Staged:
    """A task under evaluation: its problem, its record (written when done) and its tests
    as the validity stage parsed them."""

    problem: Problem
    record: TaskRecord
    check: SuiteCheck


def evaluate_tests(plugins, cfg: EvaluateTestsConfig) -> dict[str, Any]:
    from codea1.harness.mutation import require

    require(coverage=cfg.coverage)
    if cfg.mut_task_set not in ("per-k", "largest-k"):
        raise ConfigError(f"--mut-task-set {cfg.mut_task_set!r}: expected per-k or largest-k")
    ks = sorted(set(cfg.k))
    with open_run(plugins, cfg) as run:
        chosen, coverage = choose_tests(run, cfg, ks[-1])
        run.start()
        records, todo = resume(run, cfg, chosen, ks)
        timing: dict[str, float] = {}
        staged = validity_stage(run, cfg, chosen, todo, timing)
        if cfg.coverage:
            coverage_stage(run, cfg, staged, ks, timing)
        mutants_stage(run, cfg, staged, ks, records, timing)
        results = tests_results(plugins, records, ks, cfg)
        results.update(provenance(run))
        results["coverage"] = coverage
        results["timing"] = timing
        results["clock"] = clock_counts(run.executor)
        if cfg.tests == GOLDEN and run.bench.golden_tests_note:
            results["golden_note"] = run.bench.golden_tests_note
        return run.finish(results)


# -- inputs ----------------------------------------------------------------------------------



def asserts_from_completion(text: str) -> list[str]:
    """Assert statements, in order, from a model's answer (harness.verdicts.responses: the python block
    holding the asserts, or the whole text); broken ones are kept, as invalid tests."""
    return extract_tests(text, None, k=sys.maxsize).tests


def tests_rows(path: str, problems: dict[str, Problem]) -> Iterator[tuple[str, str, int | None, int | None, list[str]]]:
    """Each suite of a tests file, in file order: ``(where, task_id, index, code_index, tests)``.
    A row holds ``tests`` (assert strings) or ``completion`` (a model's answer, parsed)."""
    for where, row in json_rows(path, TestsFileError, label="--tests ", what="a tests row"):
        if "task_id" not in row:
            raise TestsFileError(f"{where}: field 'task_id' is missing")
        task = str(row["task_id"])
        if task not in problems:
            raise TestsFileError(f"{where}: field 'task_id': unknown task {task!r}")
        index = row.get("index")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise TestsFileError(f"{where}: field 'index' must be a suite number (an integer >= 0)")
        if "tests" in row and "completion" in row:
            raise TestsFileError(f"{where}: both fields 'tests' and 'completion': keep one (a list of asserts, or "
                                 f"a model's answer to parse)")
        if "tests" in row:
            if not isinstance(row["tests"], list) or not all(isinstance(t, str) for t in row["tests"]):
                raise TestsFileError(f"{where}: field 'tests' must be a list of assert strings")
            tests = list(row["tests"])
        elif "completion" in row:
            if not isinstance(row["completion"], str):
                raise TestsFileError(f"{where}: field 'completion' must be a string")
            tests = asserts_from_completion(row["completion"])
        else:
            raise TestsFileError(f"{where}: neither field 'tests' nor field 'completion'")
        yield where, task, index, row.get("code_index"), tests


def read_tests_file(path: str, problems: dict[str, Problem], suite: int = 0) -> dict[str, list[str]]:
    """One suite per task. A file from ``codea1 generate`` may hold several per task, each row
    numbered by its ``index`` field: suite ``suite`` is read (for white-box files, the first
    candidate code's). Rows without ``index`` are one per task. A suite number no row has
    is refused, naming the ones the file holds."""
    out: dict[str, list[str]] = {}
    seen: set[tuple] = set()
    suites: set[int] = set()
    for where, task, index, code_index, tests in tests_rows(path, problems):
        suites.add(index or 0)
        if (task, code_index, index) in seen:
            suffix = f" with index {index}" if index is not None else " (number its suites with an 'index' field)"
            raise TestsFileError(f"{where}: field 'task_id': task {task!r} appears twice{suffix}")
        seen.add((task, code_index, index))
        if (index or 0) == suite and task not in out:
            out[task] = tests
    if suites and suite not in suites:
        raise TestsFileError(f"{path}: --suite {suite}: no row has index {suite} (the file holds suite"
                             f"{'s' if len(suites) > 1 else ''} {', '.join(map(str, sorted(suites)))})")
    return out


def golden_source(test: TestCase, entry_point: str) -> str:
    """The golden test as a statement (for coverage): its assert, or the bare call."""
    if test.source:
        return test.source
    if test.kind == "call" and test.args is not None:
        return f"{entry_point}(*{list(test.args)!r})"
    if test.kind == "call" and test.call:
        return test.call
    return test.script or ""



def choose_tests(run: Run, cfg: EvaluateTestsConfig, kmax: int) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Each selected task's first max(k) tests, as sources: the benchmark's own (golden) or
    the tests file's; and the coverage block (``evaluate.task_coverage``). A tests file must hold
    every selected task (as evaluate's samples file must): one that lacks some is refused
    unless ``allow_partial``, and then labelled PARTIAL."""
    if cfg.tests == GOLDEN:
        chosen = {t: [golden_source(x, p.entry_point) for x in p.tests[:kmax]]
                  for t, p in run.problems.items() if p.tests}
        return chosen, task_coverage(run, cfg, set(chosen), {}, 0, "suite(s)")
    given = read_tests_file(cfg.tests, run.all_problems, cfg.suite)
    chosen = {t: s[:kmax] for t, s in given.items() if t in run.problems}
    check_coverage(run, cfg, set(chosen), cfg.tests, "tests")
    return chosen, task_coverage(run, cfg, set(chosen), {}, len(given) - len(chosen), "suite(s)")


def resume(run: Run, cfg: EvaluateTestsConfig, chosen: dict[str, list[str]], ks: list[int]
           ) -> tuple[dict[str, TaskRecord], list[tuple[str, str]]]:
    """Records of tasks finished earlier with the same tests, k list and task-set rule; and
    the (task, hash) pairs still to do."""
    done = {r.task_id: r for r in run.store.load_rows(TaskRecord.from_json)}
    records, todo = {}, []
    for task_id in sorted(chosen):
        h = hashlib.sha256(json.dumps([chosen[task_id], ks, cfg.mut_task_set]).encode()).hexdigest()[:16]
        if task_id in done and done[task_id].tests_hash == h:
            records[task_id] = done[task_id]
        else:
            todo.append((task_id, h))
    return records, todo


# -- stages ----------------------------------------------------------------------------------

def expected_from_reference(run: Run, cfg: EvaluateTestsConfig, problem: Problem) -> bool:
    """Golden tests of some benchmarks (HumanEval+) carry no expected values: the
    reference's outputs are the expected values, and mutants are judged against them."""
    return cfg.tests == GOLDEN and run.bench.reference_expected(problem)


def validity_stage(run: Run, cfg: EvaluateTestsConfig, chosen: dict[str, list[str]], todo: list[tuple[str, str]],
                   timing: dict) -> dict[str, Staged]:
    t0 = time.perf_counter()
    suites = {}
    for task_id, _ in todo:
        problem = run.problems[task_id]
        tests = problem.tests[:len(chosen[task_id])] if cfg.tests == GOLDEN else chosen[task_id]
        suites[task_id] = (problem, tests)
    checks = check_suites(run.executor, suites, memory_mb=run.bench.memory_mb, progress=cfg.progress,
                          expected_from_reference=lambda p: expected_from_reference(run, cfg, p),
                          allow_other_forms=cfg.allow_other_forms)
    staged = {}
    for task_id, h in todo:
        check = checks[task_id]
        record = TaskRecord(task_id=task_id, tests=chosen[task_id], valid=list(check.valid),
                            reasons=list(check.reasons), tests_hash=h,
                            in_process=[i for i, t in enumerate(check.tests)
                                        if t is not None and t.kind == "call" and t.judged == "in-process"])
        staged[task_id] = Staged(run.problems[task_id], record, check)
    timing["validity_s"] = time.perf_counter() - t0
    return staged


def coverage_stage(run: Run, cfg: EvaluateTestsConfig, staged: dict[str, Staged], ks: list[int], timing: dict) -> None:
    """Line and branch coverage of the reference function by the first k tests of each task
    (the parseable ones), into each record's ``coverage``."""
    t0 = time.perf_counter()
    jobs = {}
    for task_id, s in staged.items():
        sources = [src if t is not None else "" for src, t in zip(s.record.tests, s.check.tests)]
        if any(sources):
            job = coverage_job(s.problem, sources, ks, cfg.test_timeout)
            jobs[job.job_id] = (s.record, job)
    with stage_bar("coverage", len(jobs), cfg.progress) as bar:
        def landed(raw):
            record, _ = jobs[raw.job_id]
            for k, outcome in zip(ks, raw.outcomes):
                v = outcome.value if outcome.status == "ok" else None
                if isinstance(v, list) and len(v) == 4:
                    record.coverage[str(k)] = {"line": v[0] / v[1] if v[1] else None,
                                               "branch": v[2] / v[3] if v[3] else None}
                else:
                    record.coverage[str(k)] = {"line": None, "branch": None,
                                               "error": (outcome.message or raw.load_error or outcome.status)[:300]}
            bar.update(1)

        stream_jobs(run.executor, [j for _, j in jobs.values()], on_result=landed)
    timing["coverage_s"] = time.perf_counter() - t0


def coverage_job(problem: Problem, sources: list[str], ks: list[int], timeout: float) -> ExecJob:
    code = (problem.reference + COVERAGE_HELPER + f"\n__codea1_tests__ = {sources!r}\n"
            f"__codea1_function__ = {problem.entry_point!r}\n")
    tests = [TestCase(id=f"coverage@{k}", kind="call", call=f"__codea1_coverage__({k})", op="==", expected=None)
             for k in ks]
    return ExecJob(job_id=f"cov:{problem.task_id}", code=code, tests=tests, entry_point=None,
                   time_limits=[timeout * k + 5 for k in ks], batch_timeout=sum(timeout * k + 5 for k in ks) + 5,
                   memory_mb=4096, fail_fast=False)


def mutants_stage(run: Run, cfg: EvaluateTestsConfig, staged: dict[str, Staged], ks: list[int],
                  records: dict[str, TaskRecord], timing: dict) -> None:
    """Mutants of each eligible task's reference against its leading valid tests; a task's
    record is written to tasks.jsonl (and added to ``records``) when its last mutant lands."""
    from codea1.harness.mutation import generate_mutants

    t0 = time.perf_counter()
    needed = ks[-1] if cfg.mut_task_set == "largest-k" else ks[0]
    jobs: dict[str, tuple[str, dict, ExecJob]] = {}
    remaining = {task_id: 0 for task_id in staged}
    for task_id, s in staged.items():
        lead = min(s.record.leading_valid(), ks[-1])
        if lead < needed:
            continue
        mutants, s.record.mutants_total = generate_mutants(s.problem.reference)
        s.record.mutated_with = lead
        tests = s.check.tests[:lead]
        limits = time_limits(s.check.times[:lead], run.bench.min_time_limit, run.bench.time_factor)
        budget = max(cfg.mutant_timeout, sum(limits) + MUTANT_LOAD_ALLOWANCE)
        for m in mutants:
            entry = {"id": m.mutant_id, "first_fail": None, "first_timeout": None, "status": "pending",
                     "diff": m.diff(s.problem.reference)}
            s.record.mutants.append(entry)
            job = ExecJob(job_id=f"mut:{task_id}:{m.mutant_id}", code=m.code, tests=tests,
                          entry_point=s.problem.entry_point, prelude=s.problem.prelude, time_limits=limits,
                          batch_timeout=budget, memory_mb=run.bench.memory_mb, fail_fast=True)
            jobs[job.job_id] = (task_id, entry, job)
            remaining[task_id] += 1

    def finish(task_id: str) -> None:
        records[task_id] = staged[task_id].record
        run.store.append_row(asdict(staged[task_id].record))

    for task_id, count in remaining.items():
        if count == 0:
            finish(task_id)
    with stage_bar("mutants", len(jobs), cfg.progress) as bar:
        def landed(raw):
            task_id, entry, job = jobs[raw.job_id]
            s = staged[task_id]
            override = s.check.reference.value if expected_from_reference(run, cfg, s.problem) else None
            verdict = judge(task_id, 0, job, raw, run.bench.checker(s.problem), expected_override=override)
            entry["status"] = verdict.status
            bad = next((i for i, t in enumerate(verdict.tests) if t.status != "pass"), None)
            if verdict.status == "error":
                bad = 0  # the mutant did not load: every test fails
            elif verdict.status == "sandbox_error":
                bad = None  # no verdict: no kill (formulas.task_mutation_score keeps it in the denominator)
            elif bad is not None and verdict.tests[bad].status in ("timeout", "not_run"):
                entry["first_timeout"], bad = bad, None  # no kill: the tests from here on gave no verdict
            entry["first_fail"] = bad
            bar.update(1)
            remaining[task_id] -= 1
            if remaining[task_id] == 0:
                finish(task_id)

        stream_jobs(run.executor, [j for _, _, j in jobs.values()], on_result=landed)
    timing["mutants_s"] = time.perf_counter() - t0
    timing["mutants_executed"] = len(jobs)


def tests_results(plugins, records: dict[str, TaskRecord], ks: list[int], cfg: EvaluateTestsConfig) -> dict:
    records = dict(sorted(records.items()))  # sums in task order: the same figures, to the last bit, every run
    metrics, notes, intervals, counts = {}, {}, {}, {}
    figures: dict[str, dict[str, float]] = {t: {} for t in records}  # per task: each figure a metric gives it
    outside = {t: r for t, r in records.items() if not r.in_process}
    # Every figure over all tasks, and where some tasks have tests judged in the program's
    # process, again over the others (outside:<metric>), with the same notes.
    targets = [("", records)] + ([(OUTSIDE, outside)] if len(outside) < len(records) else [])
    for prefix, units_all in targets:
        for metric in in_order(plugins, TestMetric):
            for k in ks:
                def compute(units, metric=metric, k=k):
                    return metric.compute(units, k, task_set=cfg.mut_task_set, largest_k=ks[-1])

                label = prefix + metric.label(k)
                if not units_all:
                    notes[label] = "no task has all its tests judged outside"
                    continue
                value = compute(units_all)
                if prefix and value.value is None:
                    notes[label] = value.note
                    continue
                metrics[label] = value.value
                intervals[label] = metric_interval(compute, units_all, value)
                if not prefix:
                    for t, figure in value.per_task.items():
                        figures[t][label] = figure
                # A figure over some of the tasks says over how many (mut@k: those whose first
                # k tests are all valid; coverage: where it was measured).
                counted = f"over {value.task_count} of {len(units_all)} tasks" \
                    if value.value is not None and 0 < value.task_count < len(units_all) else ""
                rests_on = value.task_count or len(units_all)
                if value.value is not None and rests_on < MIN_RANKED_TASKS:
                    counted = (counted or over_tasks(rests_on)) + ": too few to rank"
                if value.value is not None:
                    counts[label] = rests_on
                if value.note or counted:
                    notes[label] = "; ".join(x for x in (counted, value.note) if x)
    per_task = {}
    for t, r in sorted(records.items()):
        per_task[t] = {
            "tests": len(r.tests), "valid": r.valid, "invalid_reasons": {str(i): x for i, x in enumerate(r.reasons) if x},
            "mutants": {"positions": r.mutants_total, "unique": len(r.mutants), "ran_against_tests": r.mutated_with,
                        "killed": sum(1 for m in r.mutants if m["first_fail"] is not None),
                        "timed_out": sum(1 for m in r.mutants if m.get("first_timeout") is not None),
                        "survived": [{"id": m["id"], "diff": m["diff"]} for m in r.mutants
                                     if m["first_fail"] is None and m.get("first_timeout") is None
                                     and m["status"] != "sandbox_error"]},
            "coverage": r.coverage,
            "in_process": r.in_process,
            "figures": figures[t],
        }
    return {"command": "evaluate-tests", "benchmark": cfg.benchmark, "k": ks, "metrics": metrics,
            "intervals": intervals, "interval_method": METHOD, "metric_tasks": counts, "metric_notes": notes,
            "tasks": per_task,
            "counts": {"tasks": len(records), "tests_in_process": sum(len(r.in_process) for r in records.values()),
                       "tasks_wholly_outside": len(outside),
                       "sandbox_error_mutants": sum(m["status"] == "sandbox_error" for r in records.values()
                                                    for m in r.mutants)}}


def count_lines(counts: dict) -> list[str]:
    """The summary's lines on results.json's ``counts``: what each count means for the figures."""
    lines = [f"tasks: {counts.get('tasks')}"]
    if counts.get("tests_in_process"):
        lines.append(f"  {counts['tests_in_process']} test(s) judged in the program's own process (asserts outside "
                     f"the paper's form, --allow-other-forms): the code under test could have steered them; "
                     f"{OUTSIDE}<metric>: the same figure over the {counts.get('tasks_wholly_outside', '?')} tasks "
                     f"with none")
    if counts.get("sandbox_error_mutants"):
        lines.append(f"  {counts['sandbox_error_mutants']} mutant run(s) ended in a sandbox error (the executor, not "
                     f"the program): counted as not killed")
    return lines


COVERAGE_HELPER = '''

def __codea1_coverage__(k):
    # Runs the first k tests under coverage.py and reports the function's own figures.
    import coverage as _coverage, json as _json
    cov = _coverage.Coverage(data_file=None, branch=True, include=[__file__])
    cov.start()
    try:
        for _src in __codea1_tests__[:k]:
            _ns = dict(globals())
            try:
                exec(_src, _ns)
            except Exception:
                continue
            # script tests define tests: call pytest-style functions, run unittest classes
            for _name, _obj in list(_ns.items()):
                if _name in globals():
                    continue
                try:
                    if isinstance(_obj, type) and _name == "TestCases":
                        import unittest as _ut
                        _ut.TestLoader().loadTestsFromTestCase(_obj).run(_ut.TestResult())
                    elif _name.startswith("test") and callable(_obj) and not isinstance(_obj, type):
                        _obj()
                except Exception:
                    pass
    finally:
        cov.stop()
    cov.json_report(outfile="coverage.json", include=[__file__])
    with open("coverage.json") as _fh:
        _report = _json.load(_fh)
    _file = next(iter(_report["files"].values()))
    _fn = _file.get("functions", {}).get(__codea1_function__)
    if _fn is None:
        return None
    _s = _fn["summary"]
    return [_s["covered_lines"], _s["num_statements"], _s.get("covered_branches", 0), _s.get("num_branches", 0)]
'''
