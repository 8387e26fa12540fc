"""Expected sides a script computes at run time without the program (harness.verdicts.slices,
slice_jobs): which sides count as the program's, the slice that computes the others in a job
of its own, the rewritten script that no longer holds them, settling (values, fallback,
cache), and end to end on the subprocess executor: right programs pass, wrong ones fail, and a
program that looks for the expected value in its own process finds nothing."""

from __future__ import annotations

import ast

import pytest

from codea1.harness.records import FAIL, PASS, ExecJob, TestCase
from codea1.harness.verdicts import slice_jobs, slices
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.expected import settle_tests
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.script_tests import Computed, rewrite_script, rewrite_test

UNITTEST = '''import unittest
import collections
class TestCases(unittest.TestCase):
    def setUp(self):
        self.words = ["b", "a", "b", "c"]
        self.expected_total = len(self.words) * 1000 + 7
    def test_counts(self):
        result = task_func(["x", "y", "x"])
        expected = collections.Counter({"x": 2, "y": 1})
        self.assertEqual(result, dict(expected))
    def test_total(self):
        self.assertEqual(total(), self.expected_total)
    def test_given(self):
        data = [3, 1, 2]
        result = sorted_copy(data)
        self.assertEqual(result, sorted(data))
'''
GOOD = ("import collections\ndef task_func(xs):\n    return dict(collections.Counter(xs))\n"
        "def total():\n    return 4007\ndef sorted_copy(d):\n    return sorted(d)\n")
WRONG = ("import collections\ndef task_func(xs):\n    return {'x': 2, 'y': 2}\n"
         "def total():\n    return 4008\ndef sorted_copy(d):\n    return sorted(d)\n")
# Looks for the expected value where the test keeps it, in its own process: every frame's
# locals, the test instance's attributes, the module's globals.
SNOOP = '''import sys, gc
def _find(name):
    frame = sys._getframe(1)
    while frame is not None:
        if name in frame.f_locals:
            return frame.f_locals[name]
        inst = frame.f_locals.get("self")
        if inst is not None and hasattr(inst, name):
            return getattr(inst, name)
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict) and name in obj:
            return obj[name]
    return None
def task_func(xs):
    found = _find("expected")
    return dict(found) if found is not None else {}
def total():
    found = _find("expected_total")
    return found if found is not None else -1
def sorted_copy(d):
    return sorted(d)
'''


def rewritten(script: str = UNITTEST, framework: str = "unittest", context: str = ""):
    result, why = rewrite_script(script, framework, context)
    assert result is not None, why
    return result


def test_expected_sides_computed_without_the_program_go_to_the_slice_and_leave_the_script():
    r = rewritten()
    computed = {s.function: s for s in r.sites if isinstance(s.expected, Computed)}
    assert sorted(computed) == ["TestCases.test_counts", "TestCases.test_total"]
    assert [op.source for op in r.operands] == ["dict(expected)", "self.expected_total"]
    # the program's process holds neither value nor the statements that computed them
    assert "Counter({" not in r.script and "expected_total" not in r.script and "1000" not in r.script
    # the slice holds no program name, and reports each side where the test computed it
    sliced = ast.parse(r.slice)
    assert not {n.id for n in ast.walk(sliced) if isinstance(n, ast.Name)} & {"task_func", "total", "sorted_copy"}
    assert "__codea1_report__(0, dict(expected))" in r.slice and "__codea1_report__(1, self.expected_total)" in r.slice
    # a list handed to the program may have changed: the test's own expression, in the program's process
    [given] = [s for s in r.sites if s.function == "TestCases.test_given"]
    assert given.op == "expr" and given.expected["source"] == "_v0 == _v1"


@pytest.mark.parametrize("script, reason", [
    # read after the program ran: the program may have written the file
    ("import os\ndef test_a():\n    f('out.txt')\n    assert g() == open('out.txt').read()\n", "expr"),
    # a mutable given to the program, then read for the expected side
    ("def test_a():\n    data = [2, 1]\n    f(data)\n    assert g() == sorted(data)\n", "expr"),
    # bound inside the loop that also runs the program
    ("def test_a():\n    for x in [1, 2]:\n        y = x * 2\n        assert f(x) == y\n", "expr"),
])
def test_sides_the_program_may_have_changed_are_not_computed_by_the_slice(script, reason):
    r, why = rewrite_script(script, "pytest")
    if r is None:  # a side of the test's own that cannot be computed without the program: in-process
        assert "a value of the test's own" in why
        return
    assert not r.operands and all(s.op == reason for s in r.sites[-1:]), r.script


def test_a_slice_keeps_the_tests_patches():
    script = ("import unittest\nfrom unittest.mock import patch\nimport numpy as np\n"
              "class TestCases(unittest.TestCase):\n    @patch('numpy.linspace')\n    def test_a(self, mock_linspace):\n"
              "        mock_linspace.return_value = [1, 2]\n        expected = np.linspace(0, 1, 2)\n"
              "        self.assertEqual(task_func(), expected)\n")
    r = rewritten(script)
    assert "@patch('numpy.linspace')" in r.slice and "mock_linspace.return_value" not in r.slice


def test_settling_fills_the_values_and_right_programs_pass(executor):
    test = rewrite_test(TestCase(id="unittest/0", kind="script", script=UNITTEST, framework="unittest"))
    assert test.judged == "parent" and test.expected_source
    unsettled = verdict(executor, GOOD, test)  # never run before its expected sides are computed
    assert unsettled.status != PASS and "was not computed" in unsettled.message, unsettled.message
    [settled] = settle_tests(executor, [test])
    assert settled.judged == "parent" and settled.expected_source is None
    values = [s["expected"] for s in settled.expected["sites"] if "computed" in s]
    assert values[1] == 4007 and len(values) == 2
    assert verdict(executor, GOOD, settled).status == PASS
    assert verdict(executor, WRONG, settled).status == FAIL
    snooped = verdict(executor, SNOOP, settled)
    assert snooped.status == FAIL and snooped.judged != "in-process", snooped.message


def test_an_unstable_or_failing_slice_falls_back_to_the_test_in_process(executor, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    unstable = ("import random\ndef test_a():\n    expected = random.random()\n    assert f() == expected\n")
    failing = ("def test_a():\n    expected = 1 / len([])\n    assert f() == expected\n")
    for script in (unstable, failing):
        test = rewrite_test(TestCase(id="pytest/script", kind="script", script=script, framework="pytest"))
        assert test.judged == "parent" and test.expected_source
        [settled] = settle_tests(executor, [test])
        assert (settled.judged, settled.script, settled.expected_source) == ("in-process", script, None)
        assert "why" in slice_jobs.cached(test)  # a function of the slice alone: kept


def test_slice_values_are_cached_by_content(executor, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    test = rewrite_test(TestCase(id="unittest/0", kind="script", script=UNITTEST, framework="unittest"))
    assert slice_jobs.cached(test) is None
    first = settle_tests(executor, [test])
    assert slice_jobs.cached(test)["values"]

    class NoJobs:  # a second settle runs no job at all
        def __getattr__(self, name):
            raise AssertionError(f"the executor was used: {name}")

    assert settle_tests(NoJobs(), [test]) == first


def test_context_names_are_the_tests_own_in_the_slice():
    context = slices.context_of("import numpy as np\nLIMIT = 3\nrows = load()\ndef task_func():\n    pass\n")
    assert context == "import numpy as np\nLIMIT = 3\n"
    script = ("import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n"
              "        self.assertEqual(task_func(), np.arange(LIMIT).tolist())\n")
    r = rewritten(script, context=context)
    assert [op.source for op in r.operands] == ["np.arange(LIMIT).tolist()"]
    assert rewrite_script(script, "unittest")[0].operands == []  # without the context: the program's names


def job(code: str, test: TestCase) -> ExecJob:
    return ExecJob(job_id=f"j-{abs(hash((code, test.script)))}", code=code, tests=[test], time_limits=[30.0],
                   batch_timeout=60.0, memory_mb=1024)


def verdict(executor, code: str, test: TestCase):
    j = job(code, test)
    return judge("task", 0, j, run_jobs(executor, [j])[j.job_id])
