"""How many KodCode and BigCodeBench script tests are judged outside the program's process
(harness.script_tests), and whether the references still pass them.

    .venv/bin/python scripts/script_tests_share.py [--data DIR] [--references] [--bigcodebench-tasks 100]

Counts, over the whole data sets: test functions (KodCode) / test methods (BigCodeBench) and
their checks (asserts, ``self.assert*`` calls, raises-blocks), by where they are judged
("call": KodCode's plain-assert functions, call tests; "parent": in a rewritten script;
"in-process"), tasks whose every test is judged outside, the functions that would be
rewritable on their own (a finer granularity than one script per task), and the reasons that
keep scripts in-process. With ``--references``: each KodCode reference and the first N
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

from codea1.harness import script_tests
from codea1.harness.records import ExecJob

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


def alone_rewritable(module: ast.Module, fn: ast.AST, framework: str) -> bool:
    """Would this function be parent-judged in a script of its own (with the module's other
    top-level statements that are not tests)?"""
    keep = [n for n in module.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            or not (n.name.startswith("test") or n.name.startswith("Test"))]
    if framework == "unittest":
        cls = ast.ClassDef(name="TestCases", bases=[ast.Name("object", ast.Load())], keywords=[], body=[fn],
                           decorator_list=[], type_params=[])
        body = keep + [cls]
    else:
        body = keep + [fn]
    text = ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])))
    return script_tests.rewrite_script(text, framework)[0] is not None


def reason_kind(why: str) -> str:
    return re.sub(r"^line \d+: |^[\w.]+: ", "", why)[:90]


def kodcode_counts(folder: Path) -> dict:
    from codea1.benchmarks.kodcode import golden_tests

    out = collections.Counter()
    reasons = collections.Counter()
    for file in sorted(folder.glob("*.json*")):
        for rec in json.loads(file.read_text()):
            entry = ((rec.get("test_info") or [{}])[0] or {}).get("function_name") or ""
            tests = golden_tests(rec["test_code"], entry)
            call_functions = {t.id.split("/")[1] for t in tests if t.kind == "call"}
            scripts = [t for t in tests if t.kind == "script"]
            parent = bool(scripts) and scripts[0].judged == "parent"
            if scripts and not parent:
                original = rec["test_code"] if "from solution import" in rec["test_code"] \
                    else "from solution import *\n" + rec["test_code"]
                module = ast.parse(original)
                module.body = [n for n in module.body if not (isinstance(n, ast.FunctionDef)
                                                              and n.name in call_functions)]
                reasons[reason_kind(script_tests.rewrite_script(ast.unparse(module), "pytest")[1])] += 1
            module = ast.parse(rec["test_code"])
            out["tasks"] += 1
            out["tasks all outside"] += (not scripts or parent)
            for fn, qualname in script_tests._test_functions(module, "pytest"):
                where = "call" if qualname in call_functions else "parent" if parent else "in-process"
                out[f"functions {where}"] += 1
                out[f"checks {where}"] += checks_in(fn)
                if where == "in-process":
                    out["in-process functions rewritable alone"] += alone_rewritable(module, fn, "pytest")
    return {"counts": dict(out), "reasons in-process": dict(reasons.most_common(12))}


def bigcodebench_counts(problems) -> dict:
    out = collections.Counter()
    reasons = collections.Counter()
    for p in problems:
        test = p.tests[0]
        original = p.metadata["original_test"]
        parent = test.judged == "parent"
        if not parent:
            reasons[reason_kind(script_tests.rewrite_script(original, "unittest")[1])] += 1
        module = ast.parse(original)
        out["tasks"] += 1
        out["tasks all outside"] += parent
        for fn, _ in script_tests._test_functions(module, "unittest"):
            where = "parent" if parent else "in-process"
            out[f"methods {where}"] += 1
            out[f"checks {where}"] += checks_in(fn)
            if not parent:
                out["in-process methods rewritable alone"] += alone_rewritable(module, fn, "unittest")
    return {"counts": dict(out), "reasons in-process": dict(reasons.most_common(12))}


def reference_results(bench, before: list, after: list, executor) -> dict:
    """``before``/``after``: the same problems, loaded without and with the rewrite."""
    from codea1.harness.execution import run_jobs
    from codea1.harness.judge import judge

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
    """The benchmark's problems, with its script tests rewritten or (``rewrite`` False) as
    they were before harness.script_tests."""
    from codea1.benchmarks import bigcodebench, kodcode

    saved = kodcode.rewrite_test, bigcodebench.rewrite_test
    if not rewrite:
        kodcode.rewrite_test = bigcodebench.rewrite_test = lambda test: test
    try:
        return plugins.benchmarks.create(name, options).load()
    finally:
        kodcode.rewrite_test, bigcodebench.rewrite_test = saved


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
    for p_before, p_after in zip(b_before, b_after):
        p_after.metadata["original_test"] = p_before.tests[0].script
    report = {"kodcode": kodcode_counts(data / "kodcode"), "bigcodebench": bigcodebench_counts(b_after)}
    if args.references:
        n = args.bigcodebench_tasks
        with plugins.executors.create("subprocess", workers=args.workers) as executor:
            kodcode = plugins.benchmarks.create("kodcode", k_options)
            bcb = plugins.benchmarks.create("bigcodebench", b_options)
            report["kodcode references"] = reference_results(kodcode, k_before, k_after, executor)
            report[f"bigcodebench references (first {n})"] = reference_results(bcb, b_before[:n], b_after[:n], executor)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
