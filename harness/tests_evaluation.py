"""`codea1 evaluate-tests`: score generated tests (a Test LLM's output) against reference code.

Per task, the first max(k) tests (in generation order) go through three stages, each one
batch through the executor, each with one progress bar (validity, coverage, mutants):

1. validity: every test runs against the reference; it is valid when it executes and its
   assertion holds (an unparseable assert is an invalid test in its position);
2. coverage: line and branch coverage of the reference function by the first k tests,
   measured with coverage.py inside the sandbox;
3. mutants: mutants of the reference (``harness.mutation``, cosmic-ray's operators) run
   against the leading valid tests of eligible tasks; a mutant is killed when a test fails,
   errors or times out, or when the mutant does not even load.

Each task is appended to tasks.jsonl as soon as its last mutant lands (a resumed run skips
it); metrics come from these records through the metric plugins whose ``applies_to`` is
"tests".
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from codea1.harness.asserts import AssertParseError, parse_assert
from codea1.harness.execution import run_jobs
from codea1.harness.jsonl import json_rows
from codea1.harness.judge import judge
from codea1.harness.parsing import extract_tests
from codea1.harness.plugin_manager import Plugins
from codea1.harness.progress import stage_bar
from codea1.harness.records import ExecJob, Problem, TestCase
from codea1.harness.reference import run_references
from codea1.harness.runstore import RunStore

GOLDEN = "golden"


class TestsFileError(ValueError):
    """A tests file that cannot be read: names file, line and field."""

    __test__ = False


@dataclass
class EvaluateTestsConfig:
    benchmark: str
    out: str
    tests: str  # a tests file, or "golden"
    data: str | None = None
    executor: str = "subprocess"
    executor_options: dict[str, str] = field(default_factory=dict)
    benchmark_options: dict[str, str] = field(default_factory=dict)
    k: list[int] = field(default_factory=lambda: [1, 2, 5])
    workers: int | None = None
    overwrite: bool = False
    progress: bool = True
    mutant_timeout: float = 10.0  # per mutant, all its tests (the reference evaluation's 10 s)
    test_timeout: float = 5.0  # per test, when validating on the reference
    mut_task_set: str = "per-k"  # or "largest-k": the reference fork's quirk
    coverage: bool = True
    suite: int = 0  # which suite of a task, when the tests file holds several (rows with "index")

    IDENTITY = ("benchmark", "tests", "data", "benchmark_options", "mutant_timeout", "test_timeout", "suite")


@dataclass
class TaskRecord:
    """One task's tests and what they did; the metric plugins read only this."""

    __test__ = False
    task_id: str
    tests: list[str]  # the first max(k) tests, as given
    valid: list[bool]  # per test position
    reasons: list[str]  # why each invalid test is invalid ("" when valid)
    mutants_total: int = 0  # mutation positions before dedupe
    mutants: list[dict] = field(default_factory=list)  # {id, first_fail (None = survived every test run), status, diff}
    mutated_with: int = 0  # how many leading tests the mutants ran against
    coverage: dict[str, dict] = field(default_factory=dict)  # str(k) -> {"line": f, "branch": f or None}
    tests_hash: str = ""

    def leading_valid(self) -> int:
        n = 0
        for ok in self.valid:
            if not ok:
                break
            n += 1
        return n


# -- reading tests ---------------------------------------------------------------------------


def asserts_from_completion(text: str) -> list[str]:
    """Assert statements, in order, from a model's answer (harness.parsing: the python block
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
    candidate code's). Rows without ``index`` are one per task."""
    out: dict[str, list[str]] = {}
    seen: set[tuple] = set()
    for where, task, index, code_index, tests in tests_rows(path, problems):
        if (task, code_index, index) in seen:
            suffix = f" with index {index}" if index is not None else " (number its suites with an 'index' field)"
            raise TestsFileError(f"{where}: field 'task_id': task {task!r} appears twice{suffix}")
        seen.add((task, code_index, index))
        if (index or 0) == suite and task not in out:
            out[task] = tests
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


# -- the stages ------------------------------------------------------------------------------
def _parse(problem: Problem, sources: list[str]) -> tuple[list[TestCase | None], list[str]]:
    parsed, reasons = [], []
    for i, src in enumerate(sources):
        try:
            parsed.append(parse_assert(src, problem.entry_point, f"test/{i}"))
            reasons.append("")
        except AssertParseError as exc:
            parsed.append(None)
            reasons.append(f"not a usable assert: {exc.reason}")
    return parsed, reasons


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


def _coverage_job(problem: Problem, sources: list[str], ks: list[int], timeout: float) -> ExecJob:
    code = (problem.reference + COVERAGE_HELPER + f"\n__codea1_tests__ = {sources!r}\n"
            f"__codea1_function__ = {problem.entry_point!r}\n")
    tests = [TestCase(id=f"coverage@{k}", kind="call", call=f"__codea1_coverage__({k})", op="==", expected=None)
             for k in ks]
    return ExecJob(job_id=f"cov:{problem.task_id}", code=code, tests=tests, entry_point=None,
                   time_limits=[timeout * k + 5 for k in ks], batch_timeout=sum(timeout * k + 5 for k in ks) + 5,
                   memory_mb=4096, fail_fast=False)


def evaluate_tests(plugins: Plugins, cfg: EvaluateTestsConfig) -> dict[str, Any]:
    import importlib.util

    from codea1.harness.mutation import MutationUnavailable, generate_mutants, require

    require()
    if cfg.coverage and importlib.util.find_spec("coverage") is None:
        raise MutationUnavailable("the coverage stage needs coverage.py: pip install 'codea1[mutation]' "
                                  "(or pass --no-coverage)")
    bench = plugins.benchmarks.create(cfg.benchmark, {**cfg.benchmark_options, **({"data": cfg.data} if cfg.data else {})})
    problems = {p.task_id: p for p in bench.load()}
    ks = sorted(set(cfg.k))
    kmax = ks[-1]
    if cfg.mut_task_set not in ("per-k", "largest-k"):
        raise ValueError(f"--mut-task-set {cfg.mut_task_set!r}: expected per-k or largest-k")
    if cfg.tests == GOLDEN:
        golden = {t: p.tests for t, p in problems.items() if p.tests}
        chosen = {t: [golden_source(x, problems[t].entry_point) for x in tests[:kmax]] for t, tests in golden.items()}
    else:
        chosen = {t: s[:kmax] for t, s in read_tests_file(cfg.tests, problems, cfg.suite).items()}
    config = {**asdict(cfg), "command": "evaluate-tests"}
    store = RunStore(cfg.out, config, EvaluateTestsConfig.IDENTITY, overwrite=cfg.overwrite, rows_name="tasks.jsonl")
    done = {r["task_id"]: TaskRecord(**r) for r in store.load_rows()}
    records: dict[str, TaskRecord] = {}
    todo = []
    for task_id in sorted(chosen):
        # what a task record depends on: its tests, the k list and the task-set rule
        h = hashlib.sha256(json.dumps([chosen[task_id], ks, cfg.mut_task_set]).encode()).hexdigest()[:16]
        if task_id in done and done[task_id].tests_hash == h:
            records[task_id] = done[task_id]
        else:
            todo.append((task_id, h))

    timing: dict[str, float] = {}
    executor = plugins.executors.create(cfg.executor, cfg.executor_options, workers=cfg.workers)
    with executor:
        store.write_environment({"executor": executor.info()})
        # 1. validity on the reference
        t0 = time.perf_counter()
        staged: dict[str, tuple[Problem, TaskRecord, list[TestCase | None]]] = {}
        to_validate = []
        for task_id, h in todo:
            problem = problems[task_id]
            if cfg.tests == GOLDEN:
                parsed = list(problem.tests[:kmax])
                reasons = [""] * len(parsed)
            else:
                parsed, reasons = _parse(problem, chosen[task_id])
            rec = TaskRecord(task_id=task_id, tests=chosen[task_id], valid=[False] * len(parsed), reasons=reasons,
                             tests_hash=h)
            staged[task_id] = (problem, rec, parsed)
            usable = [t for t in parsed if t is not None]
            if usable:
                to_validate.append(Problem(**{**problem.__dict__, "tests": usable}))
        with stage_bar("validity", len(to_validate), cfg.progress) as bar:
            # Golden tests of some benchmarks (HumanEval+) carry no expected values: the
            # reference's outputs are the expected values, and mutants are judged against them.
            from_reference = (lambda p: cfg.tests == GOLDEN and bench.reference_expected(p))
            refs = run_references(to_validate, executor, checks_tests=lambda p: not from_reference(p),
                                  memory_mb=bench.memory_mb, progress=bar, use_cache=False)
        ref_times: dict[str, list[float]] = {}
        for task_id, (problem, rec, parsed) in staged.items():
            ref = refs.get(task_id)
            j = 0
            times = []
            for i, test in enumerate(parsed):
                if test is None:
                    continue
                if ref is None:
                    rec.reasons[i] = "not run"
                elif j in ref.failed:
                    rec.reasons[i] = f"fails on the reference: {ref.failed[j][:300]}"
                else:
                    rec.valid[i] = True
                times.append(ref.times[j] if ref is not None and j < len(ref.times) else 0.0)
                j += 1
            ref_times[task_id] = times
        timing["validity_s"] = time.perf_counter() - t0

        # 2. coverage of the reference function
        t0 = time.perf_counter()
        cov_jobs = {}
        if cfg.coverage:
            for task_id, (problem, rec, parsed) in staged.items():
                sources = [s if t is not None else "" for s, t in zip(rec.tests, parsed)]
                if any(sources):
                    cov_jobs[f"cov:{task_id}"] = (rec, _coverage_job(problem, sources, ks, cfg.test_timeout))
        with stage_bar("coverage", len(cov_jobs), cfg.progress) as bar:
            def covered(raw):
                rec, job = cov_jobs[raw.job_id]
                for k, outcome in zip(ks, raw.outcomes):
                    v = outcome.value if outcome.status == "ok" else None
                    if isinstance(v, list) and len(v) == 4:
                        rec.coverage[str(k)] = {"line": v[0] / v[1] if v[1] else None,
                                                "branch": v[2] / v[3] if v[3] else None}
                    else:
                        rec.coverage[str(k)] = {"line": None, "branch": None,
                                                "error": (outcome.message or raw.load_error or outcome.status)[:300]}
                bar.update(1)

            run_jobs(executor, [j for _, j in cov_jobs.values()], on_result=covered)
        timing["coverage_s"] = time.perf_counter() - t0

        # 3. mutants, against the leading valid tests of eligible tasks; a task is written
        # to tasks.jsonl as soon as its last mutant lands (so an interrupted run resumes)
        t0 = time.perf_counter()
        needed = kmax if cfg.mut_task_set == "largest-k" else ks[0]
        jobs: dict[str, tuple[str, dict]] = {}
        all_jobs = []
        for task_id, (problem, rec, parsed) in staged.items():
            lead = min(rec.leading_valid(), kmax)
            if lead < needed:
                continue
            mutants, positions = generate_mutants(problem.reference)
            rec.mutants_total = positions
            rec.mutated_with = lead
            tests = [t for t in parsed[:lead]]
            limits = [min(cfg.mutant_timeout, max(1.0, 4 * t)) for t in ref_times[task_id][:lead]]
            for m in mutants:
                entry = {"id": m.mutant_id, "first_fail": None, "status": "pending", "diff": m.diff(problem.reference)}
                rec.mutants.append(entry)
                job = ExecJob(job_id=f"mut:{task_id}:{m.mutant_id}", code=m.code, tests=tests,
                              entry_point=problem.entry_point, prelude=problem.prelude, time_limits=limits,
                              batch_timeout=cfg.mutant_timeout, memory_mb=bench.memory_mb, fail_fast=True)
                jobs[job.job_id] = (task_id, entry)
                all_jobs.append(job)
        by_id = {j.job_id: j for j in all_jobs}
        remaining = {t: 0 for t in staged}
        for task_id, _ in jobs.values():
            remaining[task_id] += 1

        def finish(task_id: str) -> None:
            records[task_id] = staged[task_id][1]
            store.append_row(asdict(staged[task_id][1]))

        for task_id, count in remaining.items():
            if count == 0:
                finish(task_id)
        with stage_bar("mutants", len(all_jobs), cfg.progress) as bar:
            def landed(raw):
                task_id, entry = jobs[raw.job_id]
                problem = problems[task_id]
                override = refs[task_id].value if from_reference(problem) else None
                verdict = judge(task_id, 0, by_id[raw.job_id], raw, bench.checker(problem), expected_override=override)
                entry["status"] = verdict.status
                bad = next((i for i, t in enumerate(verdict.tests) if t.status != "pass"), None)
                if verdict.status == "error":
                    bad = 0  # the mutant did not load: every test fails
                elif verdict.status == "sandbox_error":
                    bad = None  # no verdict: left out of the mutation score
                entry["first_fail"] = bad
                bar.update(1)
                remaining[task_id] -= 1
                if remaining[task_id] == 0:
                    finish(task_id)

            run_jobs(executor, all_jobs, on_result=landed)
        timing["mutants_s"] = time.perf_counter() - t0
        timing["mutants_executed"] = len(all_jobs)


    results = tests_results(plugins, records, ks, cfg)
    results["timing"] = timing
    store.write_results(results)
    return results


def tests_results(plugins: Plugins, records: dict[str, TaskRecord], ks: list[int], cfg: EvaluateTestsConfig) -> dict:
    metrics, notes = {}, {}
    ordered = [m for m in (plugins.metrics.create(n) for n in plugins.metrics.names()) if m.applies_to == "tests"]
    for k in ks:
        for metric in ordered:
            value = metric.compute_tests(records, k, task_set=cfg.mut_task_set, largest_k=ks[-1])
            metrics[metric.label(k)] = value.value
            if value.note:
                notes[metric.label(k)] = value.note
    per_task = {}
    for t, r in sorted(records.items()):
        per_task[t] = {
            "tests": len(r.tests), "valid": r.valid, "invalid_reasons": {str(i): x for i, x in enumerate(r.reasons) if x},
            "mutants": {"positions": r.mutants_total, "unique": len(r.mutants), "ran_against_tests": r.mutated_with,
                        "killed": sum(1 for m in r.mutants if m["first_fail"] is not None),
                        "survived": [{"id": m["id"], "diff": m["diff"]} for m in r.mutants
                                     if m["first_fail"] is None and m["status"] != "sandbox_error"]},
            "coverage": r.coverage,
        }
    return {"command": "evaluate-tests", "benchmark": cfg.benchmark, "k": ks, "metrics": metrics,
            "metric_notes": notes, "tasks": per_task, "counts": {"tasks": len(records)}}
