"""How many KodCode and BigCodeBench script tests are judged outside the program's process
(harness.verdicts.script_tests), and whether the references still pass them.

    .venv/bin/python scripts/script_tests_share.py [--data DIR] [--references] [--bigcodebench-tasks 100]

Counts, over the whole data sets: test functions (KodCode) / test methods (BigCodeBench) and
their checks (asserts, ``self.assert*`` calls, raises-blocks), by where they are judged
("call": KodCode's plain-assert functions, call tests; "parent": in a rewritten script;
"in-process"), tasks whose every test is judged outside, the functions that would be
rewritable on their own (a finer granularity than one script per task), and the reasons that
keep scripts in-process. Expected sides that slices compute (harness.verdicts.slices) are
settled first, on the subprocess executor, as a run settles them: a test whose slice fails
here (a library missing, a value that differs between two runs) counts as in-process. With ``--references``: each KodCode reference and the first N
BigCodeBench canonical solutions run against their tests as loaded before the rewrite (every
script in-process) and after it, on the subprocess executor: pass / fail / skip (a library is
missing) each time.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
from pathlib import Path

from codea1.harness.records import ExecJob
from codea1.harness.verdicts import script_tests
from codea1.harness.verdicts.expected import settle_expected_sources
from codea1.harness.verdicts.slices import context_of

CHECK_CALL = re.compile(r"^(assert|fail)")


def checks_in(fn: ast.AST) -> int:
    """The checks a test function makes: asserts, assert*/fail calls, raises-blocks."""
    count = 0
    for n in ast.walk(fn):
        if isinstance(n, ast.Assert):
            count += 1
        elif isinstance(n, ast.Call):
            name = script_tests._dotted(n.func) or ""
            last = name.rsplit(".", 1)[-1]
            if CHECK_CALL.match(last) or name in ("pytest.raises", "raises"):
                count += 1
    return count


def why_in_process(module: ast.Module, qualname: str, framework: str, context: str = "") -> str:
    """Why this test function, in a script of its own, is not rewritten."""
    names = {q for _, q in script_tests._test_functions(module, framework)}
    text = script_tests._without(module, framework, names - {qualname})
    why = script_tests.rewrite_script(text, framework, context)[1]
    return re.sub(r"^line \d+: |^[\w.]+: ", "", why)[:90] or "its slice failed (a library missing here, or unstable)"


def counts(problems: list, originals: dict[str, str], framework: str) -> dict:
    """``originals``: task -> its test code as the data set has it."""
    out = collections.Counter()
    reasons = collections.Counter()
    unit = "functions" if framework == "pytest" else "methods"
    for p in problems:
        call_functions = {t.id.split("/")[1] for t in p.tests if t.kind == "call"}
        out["tests with slices"] += sum("slice" in (t.expected or {}) for t in p.tests if t.kind == "script")
        parent_functions = {f for t in p.tests if t.kind == "script" and t.judged == "parent"
                            for f in t.expected["functions"]}
        module = ast.parse(originals[p.task_id])
        out["tasks"] += 1
        out["tasks all outside"] += all(t.judged == "parent" for t in p.tests)
        for fn, qualname in script_tests._test_functions(module, framework):
            where = "call" if qualname in call_functions else "parent" if qualname in parent_functions else "in-process"
            out[f"{unit} {where}"] += 1
            out[f"checks {where}"] += checks_in(fn)
            if where == "in-process":
                reasons[why_in_process(module, qualname, framework, context_of(p.metadata.get("complete_prompt", "")))] += 1
    return {"counts": dict(sorted(out.items())), f"{unit} in-process, why (first reason)": dict(reasons.most_common(15))}


def reference_results(bench, before: list, after: list, executor) -> dict:
    """``before``/``after``: the same problems, loaded without and with the rewrite."""
    from codea1.harness.verdicts.execution import run_jobs
    from codea1.harness.verdicts.judge import judge

    tally: dict[str, collections.Counter] = {"before": collections.Counter(), "after": collections.Counter()}
    failures: dict[str, list] = {"before": [], "after": []}
    jobs = {}
    for p_before, p_after in zip(before, after):
        missing = bench.missing_libraries(p_after)
        for when, p in (("before", p_before), ("after", p_after)):
            if missing:
                tally[when]["skip"] += 1
                continue
            tests = p.tests
            limits = [60.0 if t.kind == "script" else 10.0 for t in tests]
            job = ExecJob(job_id=f"{when}:{p.task_id}", code=p.reference, tests=tests, entry_point=p.entry_point,
                          prelude=p.prelude, time_limits=limits, batch_timeout=min(sum(limits), 300) + 10,
                          memory_mb=bench.memory_mb, fail_fast=False)
            jobs[job.job_id] = (when, p, job)
    results = run_jobs(executor, [j for _, _, j in jobs.values()])
    for job_id, (when, p, job) in jobs.items():
        verdict = judge(p.task_id, -1, job, results[job_id])
        status = "pass" if verdict.status == "pass" else "fail"
        tally[when][status] += 1
        if status == "fail":
            failures[when].append(f"{p.task_id}: {verdict.message[:160]}")
    return {w: dict(tally[w]) for w in tally} | {f"failures {w}": failures[w] for w in failures}


def load(plugins, name: str, options: dict, rewrite: bool) -> list:
    """The benchmark's problems, prepared as a run prepares them, with their script tests
    rewritten or (``rewrite`` False) as they were before harness.verdicts.script_tests."""
    from codea1.benchmarks import bigcodebench, kodcode

    saved = kodcode.split_test, bigcodebench.split_test
    if not rewrite:
        kodcode.split_test = bigcodebench.split_test = lambda test, context="": [test]
    try:
        bench = plugins.benchmarks.create(name, options)
        return bench.prepare(bench.load())
    finally:
        kodcode.split_test, bigcodebench.split_test = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--references", action="store_true", help="run the references before and after")
    parser.add_argument("--bigcodebench-tasks", type=int, default=100, help="references: the first N tasks")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    data = Path(args.data)

    from codea1.harness.plugin_manager import load_plugins

    plugins = load_plugins(autoload=False)
    k_options = {"data": str(data / "kodcode")}
    b_options = {"data": str(next((data / "bigcodebench").glob("*.jsonl*")))}
    k_before, k_after = (load(plugins, "kodcode", k_options, r) for r in (False, True))
    b_before, b_after = (load(plugins, "bigcodebench", b_options, r) for r in (False, True))
    k_raw = {rec["question_id"]: rec["test_code"] for f in sorted((data / "kodcode").glob("*.json*"))
             for rec in json.loads(f.read_text())}
    with plugins.executors.create("subprocess", workers=args.workers) as executor:
        # expected sides computed by slices (harness.verdicts.slices): settled as a run
        # settles them; a test whose slice fails is judged in-process
        k_after = settle_expected_sources(executor, k_after, memory_mb=4096, progress=True)
        b_after = settle_expected_sources(executor, b_after, memory_mb=8192, progress=True)
        report = {"kodcode": counts(k_after, k_raw, "pytest"),
                  "bigcodebench": counts(b_after, {p.task_id: p.tests[0].script for p in b_before}, "unittest")}
        if args.references:
            n = args.bigcodebench_tasks
            kodcode = plugins.benchmarks.create("kodcode", k_options)
            bcb = plugins.benchmarks.create("bigcodebench", b_options)
            report["kodcode references"] = reference_results(kodcode, k_before, k_after, executor)
            report[f"bigcodebench references (first {n})"] = reference_results(bcb, b_before[:n], b_after[:n], executor)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
