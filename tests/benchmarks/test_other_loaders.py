"""BigCodeBench, UnLeakedTestBench and KodCode: loading, bad data, and evaluation of
reference and wrong samples through the real executor."""

from __future__ import annotations

import ast
import gzip
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import ROOT, codea1_command, shared_file

from codea1.harness.benchmark import BenchmarkError
from codea1.harness.flows.evaluate import EvaluateConfig, evaluate

pytestmark = pytest.mark.data


def write_samples(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.long
def test_bigcodebench_splits_subsets_and_missing_libraries(plugins, tmp_path):
    data = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    bench = plugins.benchmarks.create("bigcodebench", {"data": str(data)})
    complete = {p.task_id: p for p in bench.load()}
    instruct = {p.task_id: p for p in plugins.benchmarks.create("bigcodebench", {"data": str(data), "split": "instruct"}).load()}
    assert len(complete) == 1140
    assert complete["BigCodeBench/0"].prompt.startswith("import itertools")
    assert instruct["BigCodeBench/0"].prompt != complete["BigCodeBench/0"].prompt
    raw = {json.loads(l)["task_id"]: json.loads(l) for l in gzip.open(data, "rt")}
    needs_missing = next(t for t, p in complete.items() if bench.missing_libraries(p))
    rows = [
        {"task_id": "BigCodeBench/0", "solution": raw["BigCodeBench/0"]["complete_prompt"] + "\n" +
         raw["BigCodeBench/0"]["canonical_solution"]},
        {"task_id": "BigCodeBench/0", "completion": "    return 'not a number'\n"},
        {"task_id": needs_missing, "completion": raw[needs_missing]["canonical_solution"]},
    ]
    config = dict(benchmark="bigcodebench", data=str(data), out=str(tmp_path / "run"), progress=False,
                  samples=write_samples(tmp_path / "s.jsonl", rows), tasks=["BigCodeBench/0", needs_missing])
    res = evaluate(plugins, EvaluateConfig(**config))
    assert res["tasks"]["BigCodeBench/0"]["statuses"] == ["pass", "fail"]
    assert res["tasks"][needs_missing]["statuses"] == ["skipped"]
    assert res["skipped_tasks"][needs_missing].startswith("skipped: missing library ")
    assert res["metrics"]["pass@1"] == 0.25  # the skipped task is a failure, as bigcodebench counts it
    assert res["coverage"] | {"selected_by": None} == {"tasks": 2, "of": 1140, "scored": 2, "skipped": 1,
                                                      "skipped_count_as": "failures", "partial": True,
                                                      "selected_by": None, "dropped": 0,
                                                      "dropped_what": "sample(s)"}
    scored_only = evaluate(plugins, EvaluateConfig(**config, exclude_skipped=True))  # resumed: verdicts kept
    assert scored_only["metrics"]["pass@1"] == 0.5
    assert scored_only["coverage"]["scored"] == 1 and scored_only["coverage"]["skipped_count_as"] == "left out"


@pytest.mark.long  # two commands that load BigCodeBench (and a run its libraries): about a minute
def test_bigcodebench_lists_and_selects_tasks_without_rewriting_their_tests(tmp_path):
    """Loading leaves each task's test script as it is (``Benchmark.prepare`` rewrites it):
    `codea1 tasks` lists the 1,140 tasks and rewrites none (the cache's rewrites/ folder stays
    empty, where it took a minute before); a run rewrites the scripts of its selected tasks
    only, and judges them as before."""
    data = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    cache = tmp_path / "cache"
    env = {**os.environ, "CODEA1_CACHE_DIR": str(cache)}

    def written():
        return sorted(p.name for p in (cache / "rewrites").glob("*.json")) if (cache / "rewrites").is_dir() else []

    listed = subprocess.run([*codea1_command(), "tasks", "--benchmark", "bigcodebench", "--data", str(data), "--json"],
                            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(rows) == 1140 and rows[0] == {"task_id": "BigCodeBench/0", "entry_point": "task_func", "tests": 1}
    assert written() == []
    raw = {r["task_id"]: r for r in map(json.loads, gzip.open(data, "rt")) if r["task_id"] in ("BigCodeBench/0",
                                                                                             "BigCodeBench/1")}
    samples = write_samples(tmp_path / "s.jsonl", [{"task_id": t, "solution": r["complete_prompt"] + "\n" +
                                                    r["canonical_solution"]} for t, r in raw.items()])
    run = subprocess.run([*codea1_command(), "evaluate", "--benchmark", "bigcodebench", "--data", str(data),
                          "--samples", samples, "--tasks", "BigCodeBench/0,BigCodeBench/1", "--allow-partial",
                          "--out", str(tmp_path / "run"), "--no-progress"],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(written()) == 2  # the two selected tasks' scripts, rewritten once each
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["metrics"]["pass@1"] == 1.0
    assert {v["task_id"]: v["judged"] for v in map(json.loads, (tmp_path / "run" / "verdicts.jsonl").open())} == {
        "BigCodeBench/0": "parent", "BigCodeBench/1": "parent"}


WITHOUT_BIGCODEBENCH = ("import sys; sys.modules['bigcodebench'] = None  # any import of it now fails\n"
                        "from codea1.harness.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("command", ["tasks", "evaluate"])
def test_bigcodebench_missing_says_what_to_install(command, tmp_path):
    """Without the bigcodebench package both commands end in one line naming the README's
    install line, exit 2, and write nothing."""
    data = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    args = ["--benchmark", "bigcodebench", "--data", str(data)]
    if command == "evaluate":
        args += ["--samples", write_samples(tmp_path / "s.jsonl", [{"task_id": "BigCodeBench/0", "solution": "x = 1"}]),
                 "--out", str(tmp_path / "run")]
    run = subprocess.run([sys.executable, "-c", WITHOUT_BIGCODEBENCH, command, *args], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [
        "codea1: error: benchmark 'bigcodebench' needs the bigcodebench package (module 'bigcodebench' is not "
        "importable): pip install --no-deps bigcodebench==0.2.5 && pip install pqdm gradio-client e2b matplotlib "
        "-c constraints.txt"]
    assert not (tmp_path / "run").exists()
    assert run.stderr.split("): ")[1].strip() in (ROOT / "README.md").read_text()  # the README's own line


def test_bigcodebench_with_a_broken_dependency_says_what_failed(tmp_path):
    """bigcodebench installed, but a library its loader imports fails to import (as pyarrow
    does under numpy 1): one line with that library's own message and the install line."""
    data = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("raise ImportError('built for NumPy 2.0 or newer')\n")
    run = subprocess.run([*codea1_command(), "tasks", "--benchmark", "bigcodebench", "--data", str(data)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [
        "codea1: error: benchmark 'bigcodebench': bigcodebench's loader does not import here (ImportError: built "
        "for NumPy 2.0 or newer); it installs with: pip install --no-deps bigcodebench==0.2.5 && pip install pqdm "
        "gradio-client e2b matplotlib -c constraints.txt"]


# The in-process half runs in `tox -e parity` (each half is a minute of the default run).
@pytest.mark.parametrize("mode", [[], pytest.param(["--in-process"], marks=pytest.mark.slow)], ids=["parent", "in-process"])
def test_canonical_script_counts_passes_missing_libraries_and_failures_by_reason(plugins, tmp_path, mode):
    """scripts/bigcodebench_canonical.py on a handful of tasks: a canonical solution that
    passes, one that starts a process (the sandbox refuses it) and, where this environment
    lacks one, a task skipped for its missing library, each counted under its reason; the
    same with the test classes judged in-process (--in-process)."""
    data = shared_file("bigcodebench", "BigCodeBench-v0.1.0.jsonl.gz")
    bench = plugins.benchmarks.create("bigcodebench", {"data": str(data)})
    rows = [json.loads(line) for line in gzip.open(data, "rt")]
    lacking = next((r["task_id"] for r in rows
                    if bench.missing_libraries(SimpleNamespace(libs=ast.literal_eval(r["libs"])))), None)
    tasks = ["BigCodeBench/0", "BigCodeBench/14"] + ([lacking] if lacking else [])
    out_file = tmp_path / f"out{len(mode)}.json"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bigcodebench_canonical.py"), "--data", str(data),
                          "--tasks", ",".join(tasks), "--json", str(out_file), "--no-progress", *mode],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(out_file.read_text())
    assert out["tasks"] == len(tasks) and out["pass"] == ["BigCodeBench/0"]
    assert out["fail"] == {"starts a process (the sandbox refuses fork/exec)": ["BigCodeBench/14"]}
    assert "BlockingIOError" in out["messages"]["BigCodeBench/14"]
    if lacking:
        libs = ast.literal_eval(next(r["libs"] for r in rows if r["task_id"] == lacking))
        assert out["skipped"] and all(ids == [lacking] and lib in libs for lib, ids in out["skipped"].items())
    assert run.stdout.splitlines()[0] == (f"{len(tasks)} tasks: 1 pass, 1 fail, {int(bool(lacking))} skipped "
                                          "(a library missing)")


def test_ult_loads_and_reports_that_its_asserts_fail_on_the_reference(plugins, tmp_path):
    data = shared_file("unleakedtestbench", "ULT_Lite.json")
    problems = plugins.benchmarks.create("ult", {"data": str(data)}).load()
    assert len(problems) == 200 and all(len(p.tests) == 5 for p in problems)
    raw = json.loads(data.read_text())[:10]
    res = evaluate(plugins, EvaluateConfig(benchmark="ult", data=str(data), out=str(tmp_path / "run"),
                                           samples=write_samples(tmp_path / "s.jsonl", [
                                               {"task_id": r["task_id"], "solution": r["code"]} for r in raw]),
                                           progress=False, limit=10))
    # ULT_Lite's test_list are not golden: the references fail many of them, and say so.
    assert res["reference_failures"]
    failing_refs = set(res["reference_failures"])
    assert {t for t, d in res["tasks"].items() if d["statuses"] != ["pass"]} == failing_refs


def test_ult_golden_figures_come_with_their_caveat(tmp_path):
    """`evaluate-tests --tests golden` on ULT says, beside the figures, that ULT's own asserts are
    no ceiling (they mostly fail on the reference)."""
    data = shared_file("unleakedtestbench", "ULT_Lite.json")
    run = subprocess.run([*codea1_command(), "evaluate-tests", "--benchmark", "ult", "--data", str(data), "--tests",
                          "golden", "--limit", "3", "--k", "1", "--no-coverage", "--out", str(tmp_path / "o"),
                          "--no-progress"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "note: ULT's own asserts are not a ceiling" in run.stdout
    assert "%" in run.stdout
    assert "not a ceiling" in json.loads((tmp_path / "o" / "results.json").read_text())["golden_note"]


def test_ult_bad_data_names_file_line_and_field(plugins, tmp_path):
    bad = tmp_path / "ult.jsonl"
    bad.write_text(json.dumps({"task_id": "1", "func_name": "f", "code": "def f():\n    return 1\n",
                               "test_list": ["assert f() == 1"]}) + "\n" +
                   json.dumps({"task_id": "2", "code": "def g():\n    return 1\n"}) + "\n")
    with pytest.raises(BenchmarkError, match=r"ult.jsonl:2: task 2: missing field 'func_name'"):
        plugins.benchmarks.create("ult", {"data": str(bad)}).load()
    bad.write_text(json.dumps({"task_id": "3", "func_name": "f", "code": "", "test_list": ["assert g() == 1"]}) + "\n")
    with pytest.raises(BenchmarkError, match=r"field 'test_list'\[0\]: does not call f"):
        plugins.benchmarks.create("ult", {"data": str(bad)}).load()


def test_kodcode_references_pass_their_pytest_tests_and_wrong_code_fails(plugins, tmp_path):
    folder = shared_file("kodcode")
    problems = {p.task_id: p for p in plugins.benchmarks.create("kodcode", {"data": str(folder)}).load()}
    assert len(problems) == 232
    picked = list(problems.values())[:6]
    rows = [{"task_id": p.task_id, "solution": p.reference} for p in picked]
    rows.append({"task_id": picked[0].task_id, "solution": "x = 1\n"})
    res = evaluate(plugins, EvaluateConfig(benchmark="kodcode", data=str(folder), out=str(tmp_path / "run"),
                                           samples=write_samples(tmp_path / "s.jsonl", rows), progress=False,
                                           tasks=[p.task_id for p in picked]))
    first = res["tasks"][picked[0].task_id]["statuses"]
    assert first[1] == "fail"
    assert sum(d["statuses"][0] == "pass" for d in res["tasks"].values()) + len(res["skipped_tasks"]) == 6
    assert sum(d["statuses"][0] == "pass" for d in res["tasks"].values()) >= 4


@pytest.mark.slow  # a minute: every reference of the three files (tox -e parity)
def test_every_kodcode_reference_passes_its_converted_tests(plugins, tmp_path):
    """All 232 references against their golden tests, plain asserts judged as call tests: all
    pass but the 4 whose pytest files are broken upstream (scipy missing here; `math` used
    without its import), which are skipped with the reason, as under pytest alone."""
    folder = shared_file("kodcode")
    problems = plugins.benchmarks.create("kodcode", {"data": str(folder)}).load()
    assert sum(t.kind == "call" for p in problems for t in p.tests) > 1000
    rows = [{"task_id": p.task_id, "solution": p.reference} for p in problems]
    res = evaluate(plugins, EvaluateConfig(benchmark="kodcode", data=str(folder), out=str(tmp_path / "run"),
                                           samples=write_samples(tmp_path / "s.jsonl", rows), progress=False))
    assert res["counts"]["pass"] == 228 and res["counts"]["skipped"] == 4
    assert sorted(res["skipped_tasks"]) == ["Algorithm_00000068_C", "Algorithm_00000068_I", "Prefill_00000083_C",
                                            "Prefill_00000083_I"]


KODCODE_TESTS = """from solution import area, perimeter
import pytest
import math

def test_area():
    \"\"\"plain asserts: call tests\"\"\"
    assert area(2, 3) == 6
    assert area(0, 3) == 0
    assert perimeter(2, 3) == 10
    assert [area(i, i) for i in range(3)] == [0, 1, 4]

def test_raises():
    with pytest.raises(ValueError):
        area(-1, 2)

def test_uses_an_import():
    assert area(1, 1) < math.pi

WIDTH = 4

def test_uses_a_module_constant():
    assert area(WIDTH, 1) == 4
"""
SOLUTION = ("def area(w, h):\n    if w < 0:\n        raise ValueError(w)\n    return w * h\n"
            "def perimeter(w, h):\n    return 2 * (w + h)\n")


def test_kodcode_plain_assert_functions_become_call_tests(plugins, tmp_path):
    from codea1.benchmarks.kodcode import golden_tests

    tests = golden_tests(KODCODE_TESTS, "area")
    calls = [t for t in tests if t.kind == "call"]
    assert [t.id for t in calls] == [f"pytest/test_area/{i}" for i in range(4)]
    assert [(t.call, t.op, t.expected) for t in calls[:3]] == [("area(2, 3)", "==", 6), ("area(0, 3)", "==", 0),
                                                                ("perimeter(2, 3)", "==", 10)]
    # The other test functions are rewritten to report values, judged in the parent: math.pi is
    # computed by the slice, in a job without the program (harness.verdicts.slices).
    rewritten = tests[-1]
    assert (rewritten.kind, rewritten.id, rewritten.judged) == ("script", "pytest/script", "parent")
    assert rewritten.expected["functions"] == ["test_raises", "test_uses_an_import", "test_uses_a_module_constant"]
    assert "def test_area" not in rewritten.script and "math.pi" in rewritten.expected_source
    assert "math.pi" not in rewritten.script
    data = tmp_path / "kodcode.jsonl"
    data.write_text(json.dumps({"question_id": "k/0", "question": "Areas.", "solution": SOLUTION,
                                "test_code": KODCODE_TESTS, "test_info": [{"function_name": "area"}]}) + "\n")
    liar = ("class Liar:\n    def __eq__(self, o):\n        return True\n    def __lt__(self, o):\n        return True\n"
            "    __hash__ = object.__hash__\n"
            "def area(w, h):\n    if w < 0:\n        raise ValueError(w)\n    return Liar() if w == 2 else w * h\n"
            "def perimeter(w, h):\n    return 2 * (w + h)\n")
    rows = [{"task_id": "k/0", "solution": SOLUTION}, {"task_id": "k/0", "solution": liar}]
    res = evaluate(plugins, EvaluateConfig(benchmark="kodcode", data=str(data), out=str(tmp_path / "run"),
                                           samples=write_samples(tmp_path / "s.jsonl", rows), progress=False))
    # The always-equal answer would pass `assert area(2, 3) == 6` inside pytest; judged outside it fails.
    assert res["tasks"]["k/0"]["statuses"] == ["pass", "fail"]
    verdict = next(v for v in map(json.loads, (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines())
                   if v["sample_index"] == 1)
    assert verdict["first_failure"]["test"] == "pytest/test_area/0" and "opaque" in verdict["first_failure"]["message"]


def test_kodcode_without_data_says_so(plugins):
    with pytest.raises(BenchmarkError, match="needs --data"):
        plugins.benchmarks.create("kodcode").load()


def test_verdicts_judged_in_process_are_counted_and_named_in_reports(plugins, tmp_path):
    """A KodCode task whose test module keeps functions that cannot be rewritten to report
    values: its verdicts are judged in-process, counted in results.json, marked in
    verdicts.jsonl and named in a report's warnings; a task judged wholly outside is not.
    Every figure is given again over the tasks judged wholly outside (outside:pass@1), in
    results.json, the summary's lines, show and the report's columns: here the in-process
    task passes and the outside one fails, and the gap shows."""
    pytest.importorskip("pandas")
    from codea1.harness.flows.evaluate import verdict_lines
    from codea1.harness.flows.report import ReportConfig, build_report
    from codea1.harness.flows.show import show

    folder = shared_file("kodcode")
    problems = {p.task_id: p for p in plugins.benchmarks.create("kodcode", {"data": str(folder)}).load()}
    inside, outside = problems["Leetcode_00000051_I"], problems["Algorithm_00000056_I"]
    assert any(t.judged == "in-process" for t in inside.tests)
    assert all(t.judged == "parent" for t in outside.tests)
    rows = [{"task_id": inside.task_id, "solution": inside.reference},
            {"task_id": outside.task_id, "solution": f"def {outside.entry_point}(*args, **kwargs):\n    return None\n"}]
    res = evaluate(plugins, EvaluateConfig(benchmark="kodcode", data=str(folder), out=str(tmp_path / "run"),
                                           tasks=[inside.task_id, outside.task_id],
                                           samples=write_samples(tmp_path / "s.jsonl", rows), progress=False))
    assert res["counts"]["pass"] == 1 and res["counts"]["judged_in_process"] == 1
    judged = {v["task_id"]: v["judged"] for v in map(json.loads, (tmp_path / "run" / "verdicts.jsonl").open())}
    assert judged == {inside.task_id: "in-process", outside.task_id: "parent"}
    assert res["metrics"]["pass@1"] == 0.5 and res["metrics"]["outside:pass@1"] == 0.0
    assert "outside:pass@1" in res["intervals"]  # (none over one task: too few to draw from)
    assert res["metric_tasks"]["outside:pass@1"] == 1 and "too few to rank" in res["metric_notes"]["outside:pass@1"]
    assert {k: v for k, v in res["judged"].items() if k != "rule"} == \
        {"tasks": 2, "tasks_wholly_outside": 1, "tasks_with_in_process_tests": 1}
    lines = verdict_lines(res["counts"], res["judged"])
    assert any("1 of 2 tasks have tests judged in-process; outside:<metric>: the same figure over the 1 tasks" in line
               for line in lines)
    shown = show(str(tmp_path / "run"), plugins)
    assert shown["metrics"]["outside:pass@1"] == 0.0 and lines[-1] in shown["lines"]
    report = build_report(plugins, ReportConfig(runs=[str(tmp_path / "run")], out=str(tmp_path / "report")))
    assert any("1 of 2 verdicts judged in the program's own process" in w and "'outside:' columns" in w
               for w in report.warnings)
    code = next(t for t in report.tables if t.name == "code")
    assert list(code.frame.columns) == ["kodcode pass@1", "kodcode outside:pass@1"]
