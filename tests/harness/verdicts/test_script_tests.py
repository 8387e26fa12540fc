"""Script tests judged outside the program (harness.verdicts.script_tests): which checks of a pytest
module or a unittest class are rewritten into value reports, which scripts stay in-process
and why; the parent's judgement (values, completeness); the protocol; and, end to end on the
subprocess executor, programs that forge a script test's verdict in every way we know
of: they fail, the correct program passes."""

from __future__ import annotations

import json

import pytest

from codea1.harness.records import FAIL, PASS, ExecJob, TestCase
from codea1.harness.verdicts.execution import parse_records, run_jobs
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.script_reports import IMPORT_LINE, judge_reports
from codea1.harness.verdicts.script_tests import Unknown, known_value, rewrite_script, rewrite_test, split_test

KODCODE = '''import pytest
from solution import add, div

def test_add():
    expected = [1, 2, 424242]
    assert add(1, 2) == 3
    assert add([1], [2, 424242]) == expected
    assert add(0.1, 0.2) == pytest.approx(0.3)
    assert add(0, 0) == 0

def test_div():
    with pytest.raises(ZeroDivisionError):
        div(1, 0)
    assert div(6, 3) == 2
'''
KODCODE_GOOD = "def add(a, b):\n    return a + b\ndef div(a, b):\n    return a / b\n"
KODCODE_WRONG = "def add(a, b):\n    return b + a if isinstance(a, list) else a * b\ndef div(a, b):\n    return a / b\n"

BIGCODEBENCH = '''import unittest
class TestCases(unittest.TestCase):
    def test_double(self):
        self.assertEqual(task_func(3), 6)
        self.assertTrue(task_func(1) == 2)
        self.assertIn(task_func(2), [4, 5])
    def test_negative(self):
        with self.assertRaises(ValueError):
            task_func(-1)
        self.assertEqual(task_func(0), 0)
'''
BIGCODEBENCH_GOOD = "def task_func(x):\n    if x < 0:\n        raise ValueError(x)\n    return 2 * x\n"
BIGCODEBENCH_WRONG = "def task_func(x):\n    if x < 0:\n        raise ValueError(x)\n    return 2 * x + 1\n"


def sites(script: str, framework: str):
    rewritten, why = rewrite_script(script, framework)
    assert rewritten is not None, why
    return rewritten, [(s.op, s.expected, s.tolerance, s.function, s.required) for s in rewritten.sites]


# -- the rewriter ------------------------------------------------------------------------------

def test_pytest_asserts_become_reports_and_expected_values_stay_in_the_parent():
    rewritten, found = sites(KODCODE, "pytest")
    assert found == [("==", 3, None, "test_add", True), ("==", [1, 2, 424242], None, "test_add", True),
                     ("approx", 0.3, {}, "test_add", True), ("==", 0, None, "test_add", True),
                     ("raises", ["ZeroDivisionError"], None, "test_div", True), ("==", 2, None, "test_div", True)]
    assert rewritten.functions == ["test_add", "test_div"]
    text = rewritten.script
    assert text.startswith(IMPORT_LINE) and "assert" not in text.replace(IMPORT_LINE, "")
    # `expected` was used only as an expected side: its assignment is gone from the child's script
    assert "expected" not in text and "0.3" not in text
    assert "__codea1_report__(0, add(1, 2))" in text and "with __codea1_raises__(4):" in text


def test_unittest_assertions_become_reports():
    script = '''import unittest
class TestCases(unittest.TestCase):
    def setUp(self):
        self.n = 3
    def test_all(self):
        r = task_func(self.n)
        self.assertEqual(r, 6, "message dropped")
        self.assertEqual(-1.5, task_func(-0.75))
        self.assertNotEqual(r, 7)
        self.assertTrue(r)
        self.assertFalse(task_func(0))
        self.assertTrue(r > 5)
        self.assertFalse(r == 5)
        self.assertIn(r, [6, 7])
        self.assertIn(6, task_func([3]))
        self.assertIsNone(task_func(None))
        self.assertIsNotNone(r)
        self.assertIsInstance(r, int)
        self.assertAlmostEqual(task_func(0.1), 0.2, places=3)
        self.assertAlmostEqual(task_func(0.1), 0.2, delta=1e-3)
        self.assertAlmostEqual(task_func(0.1), 0.2, 2)
        self.assertGreater(r, 2 ** 2)
        self.assertCountEqual(task_func([1, 2]), [4, 2])
        self.assertRaises(ValueError, task_func, "x")
        with self.assertRaises((TypeError, KeyError)) as cm:
            task_func({})
        with self.assertRaisesRegex(ValueError, "neg.*"):
            task_func(-100)
        for k in range(3):
            self.assertLess(task_func(k), 10)
'''
    rewritten, found = sites(script, "unittest")
    f = "TestCases.test_all"
    assert found == [
        ("==", 6, None, f, True), ("==", -1.5, None, f, True), ("!=", 7, None, f, True), ("truthy", True, None, f, True),
        ("falsy", False, None, f, True), (">", 5, None, f, True), ("!=", 5, None, f, True), ("in", [6, 7], None, f, True),
        ("contains", 6, None, f, True), ("is", None, None, f, True), ("is not", None, None, f, True),
        ("truthy", True, None, f, True), ("almost", 0.2, {"places": 3}, f, True), ("almost", 0.2, {"delta": 1e-3}, f, True),
        ("almost", 0.2, {"places": 2}, f, True), (">", 4, None, f, True), ("count_equal", [4, 2], None, f, True),
        ("raises", ["ValueError"], None, f, True), ("raises", ["TypeError", "KeyError"], None, f, True),
        ("raises", ["ValueError"], {"match": "neg.*"}, f, True), ("<", 10, None, f, False)]
    assert "isinstance(r, int)" in rewritten.script and "__codea1_raises_call__(17, task_func, 'x')" in rewritten.script


@pytest.mark.parametrize("script, why", [
        ("def test_a():\n    if f(1) != 2:\n        raise AssertionError\n    assert f(1) == 2\n", "raises by itself"),
        ("import pytest\n@pytest.mark.skip\ndef test_a():\n    assert f(1) == 2\n", "a skip"),
        # the expected side is the test's own data, never given to the program: not reported from its process
        ("import pytest\n@pytest.mark.parametrize('x, y', [(1, 2)])\ndef test_a(x, y):\n    assert f(x) == y\n",
         "reads y, a value of the test's own"),
        ("def test_a():\n    for x, y in [(1, 2)]:\n        assert f(x) == y\n", "reads y, a value of the test's own"),
        ("def test_a():\n    f(1)\n", "no check"),
        ("def helper(x):\n    assert x == 1\ndef test_a():\n    assert f(1) == 1\n    helper(f(1))\n", "could not be rewritten"),
        ("import pytest\ndef test_a():\n    with pytest.raises(ValueError) as e:\n        f(1)\n    e.match('bad')\n",
         "match"),
        ("import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n"
         "        with self.assertRaises(AssertionError):\n            self.assertEqual(task_func(), 1)\n",
         "expects it to fail"),
        ("def helper(x):\n    return x\ndef test_a():\n    assert helper(f(1) == 2)\n", "cannot decide"),
    ])
def test_scripts_that_stay_in_process_say_why(script, why):
    rewritten, reason = rewrite_script(script, "pytest" if "class TestCases" not in script else "unittest")
    assert rewritten is None and why in reason, reason
    test = TestCase(id="pytest/script", kind="script", script=script, framework="pytest")
    assert rewrite_test(test) is test and test.judged == "in-process"


def test_a_script_splits_into_its_rewritable_functions_and_the_rest():
    script = KODCODE + "\ndef test_runtime_expected():\n    if add(1, 1) != div(4, 2):\n        raise AssertionError\n"
    parent, rest = split_test(TestCase(id="pytest/script", kind="script", script=script, framework="pytest"))
    assert (parent.id, parent.judged, rest.id, rest.judged) == ("pytest/script", "parent", "pytest/script/in-process",
                                                                "in-process")
    assert parent.expected["functions"] == ["test_add", "test_div"]
    assert "test_runtime_expected" not in parent.script and "def test_add" not in rest.script
    whole = TestCase(id="unittest/0", kind="script", script=BIGCODEBENCH, framework="unittest")
    assert [t.judged for t in split_test(whole)] == ["parent"]


def test_the_restricted_evaluator_knows_literals_and_refuses_code():
    import ast

    def value(text):
        return known_value(ast.parse(text, mode="eval").body)

    assert value("[1, -2, (3, 4.5), {'a': {1, 2}}]") == [1, -2, (3, 4.5), {"a": {1, 2}}]
    assert value("float('inf')") == float("inf") and value("-float('-inf')") == float("inf")
    assert value("2 ** 10 + 3 * 4 - 1 / 4") == 1035.75 and value("[0] * 3") == [0, 0, 0]
    assert value("set()") == set() and value("tuple([1, 2])") == (1, 2) and value("'ab' + 'c'") == "abc"
    for text in ("f(1)", "x", "sorted([2, 1])", "[0] * 10 ** 9", "9 ** 10 ** 8", "[*a]", "{**a}", "(1).real",
                 "[i for i in range(3)]", "1 / 0", "__import__('os')"):
        with pytest.raises(Unknown):
            value(text)


# -- the parent's judgement ------------------------------------------------------------------

def table_of(script, framework="pytest"):
    rewritten, why = rewrite_script(script, framework)
    assert rewritten is not None, why
    return rewritten.table()


def test_the_parent_judges_values_and_completeness():
    script = ("def test_a():\n    assert f(1) == 2\n    for x in f(2):\n        assert x > 0\n    assert f(3) == 4\n"
              "def test_b():\n    if f(0):\n        assert f(0) == 1\n")
    table = table_of(script)
    all_returned = {"test_a": "returned", "test_b": "returned"}

    def verdict(reports, functions=all_returned):
        return judge_reports(table, {"f": functions, "r": reports, "e": ""})

    good = [[0, "v", 2], [1, "v", 5], [1, "v", 6], [2, "v", 4], [3, "v", 1]]
    assert verdict(good) == (True, "")
    assert verdict([[0, "v", 2], [2, "v", 4], [3, "v", 1]]) == (True, "")  # an empty loop checks nothing, as in Python
    ok, message = verdict([[0, "v", 2], [1, "v", 0], [2, "v", 4], [3, "v", 1]])
    assert not ok and "expected > 0" in message
    ok, message = verdict([[0, "v", 2], [3, "v", 1]])  # returned before line 5
    assert not ok and "returned before the check on line 5" in message
    # test_b's only check sits in a branch not taken: it passes, as it would in pytest (a
    # function with a check on its straight-line path must reach it: above)
    assert verdict([[0, "v", 2], [2, "v", 4]]) == (True, "")
    ok, message = verdict(good, {"test_a": "returned", "test_b": "skipped: no reason"})
    assert not ok and "skipped" in message
    ok, message = verdict(good, {"test_a": "returned"})
    assert not ok and "test_b: did not run" in message
    ok, message = verdict([[0, "v", {"o": "solution.Liar"}]] + good[1:])
    assert not ok and "expected == 2" in message


def test_raises_approx_and_almost_sites():
    script = ("import pytest\ndef test_a():\n    with pytest.raises(ValueError, match='bad v'):\n        f(1)\n"
              "    assert f(2) == pytest.approx([1.0, 2.0], abs=0.01)\n")
    table = table_of(script)
    returned = {"test_a": "returned"}
    assert judge_reports(table, {"f": returned, "r": [[0, "e", ["ValueError", "Exception"], "a bad value"],
                                                      [1, "v", [1.001, 2.0]]], "e": ""}) == (True, "")
    for reports in ([[0, "n"], [1, "v", [1.0, 2.0]]],
                    [[0, "e", ["TypeError"], "bad v"], [1, "v", [1.0, 2.0]]],
                    [[0, "e", ["ValueError"], "good"], [1, "v", [1.0, 2.0]]],
                    [[0, "e", ["ValueError"], "bad v"], [1, "v", [1.1, 2.0]]]):
        assert not judge_reports(table, {"f": returned, "r": reports, "e": ""})[0], reports


# -- the protocol ----------------------------------------------------------------------------

def parent_job():
    test = rewrite_test(TestCase(id="unittest/0", kind="script", script=BIGCODEBENCH, framework="unittest"))
    return ExecJob(job_id="j", code="", tests=[test], time_limits=[10.0])


def records(*recs):
    return [json.dumps(r) for r in ({"load": "ok"}, *recs, {"done": True})]


def test_a_verdict_from_the_child_for_a_parent_judged_test_is_a_protocol_violation():
    job = parent_job()
    raw = parse_records(job, records({"i": 0, "s": "passed", "e": "", "t": 0.1}), "finished")
    assert raw.exit.startswith("protocol:")
    assert judge("t", 0, job, raw).status == FAIL
    in_process = ExecJob(job_id="k", code="", tests=[TestCase(id="s", kind="script", script=BIGCODEBENCH,
                                                              framework="unittest")], time_limits=[10.0])
    raw = parse_records(in_process, records({"i": 0, "s": "reports", "f": {}, "r": []}), "finished")
    assert raw.exit.startswith("protocol:")
    for bad in ([[99, "v", 1]], [["0", "v", 1]], [[0, "q"]], "x"):
        raw = parse_records(job, records({"i": 0, "s": "reports", "f": {}, "r": bad}), "finished")
        assert raw.exit.startswith("protocol:"), bad


# -- end to end, through the subprocess executor --------------------------------------------

def run_script(executor, code: str, script: str, framework: str, rewrite: bool):
    test = TestCase(id="script/0", kind="script", script=script, framework=framework)
    if rewrite:
        test = rewrite_test(test)
        assert test.judged == "parent"
    job = ExecJob(job_id=f"s-{abs(hash((code, script, rewrite)))}", code=code, tests=[test], time_limits=[30.0],
                  batch_timeout=60.0, memory_mb=1024)
    raw = run_jobs(executor, [job])[job.job_id]
    return judge("task", 0, job, raw)


FAKE_PASSED = ("import os\nos.write(3, b'{\"load\":\"ok\"}\\n{\"i\":0,\"s\":\"passed\",\"e\":\"\",\"t\":0.1}\\n"
               "{\"done\":true}\\n')\nos._exit(0)\n")
FAKE_REPORTS = ("import os, json\nr = [[k, 'v', True] for k in range(5)]\n"
                "os.write(3, (json.dumps({'load': 'ok'}) + '\\n' + json.dumps({'i': 0, 's': 'reports', 'f': "
                "{n: 'returned' for n in ('test_add', 'test_div', 'TestCases.test_double', 'TestCases.test_negative')}, "
                "'r': r, 'e': '', 't': 0.1}) + '\\n{\"done\":true}\\n').encode())\nos._exit(0)\n")
PATCH_UNITTEST = ("import unittest, unittest.case\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
                  "unittest.case.TestCase.assertTrue = lambda *a, **k: None\n"
                  "unittest.case.TestCase.assertIn = lambda *a, **k: None\n"
                  "unittest.TestResult.wasSuccessful = lambda self: True\n"
                  "unittest.TestResult.addFailure = lambda *a, **k: None\n")
CONFTEST = ("open('conftest.py', 'w').write('def pytest_pyfunc_call(pyfuncitem):\\n    return True\\n')\n"
            "open('pytest.ini', 'w').write('[pytest]\\npython_functions = nothing_\\n')\n")
THREAD = ("import threading, time, glob\ndef _rewrite():\n    while True:\n"
          "        for name in glob.glob('test_solution*.py'):\n"
          "            try:\n                open(name, 'w').write('def test_ok():\\n    pass\\n')\n"
          "            except OSError:\n                pass\n        time.sleep(0.001)\n"
          "threading.Thread(target=_rewrite, daemon=True).start()\n")
META_PATH = ("import sys, importlib.util\nFAKE = '''\nclass TestCase:\n"
             "    def __init__(self, name='runTest'):\n        self._testMethodName = name\n"
             "class TestResult:\n    def __init__(self):\n        self.failures, self.errors, self.skipped = [], [], []\n"
             "        self.expectedFailures, self.unexpectedSuccesses, self.testsRun = [], [], 1\n"
             "class _Suite(list):\n    def run(self, result):\n        return result\n"
             "class TestLoader:\n    def loadTestsFromTestCase(self, cls):\n        return _Suite()\n'''\n"
             "class Loader:\n    def create_module(self, spec):\n        return None\n"
             "    def exec_module(self, module):\n        exec(FAKE, module.__dict__)\n"
             "class Finder:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'unittest':\n            return importlib.util.spec_from_loader(name, Loader())\n"
             "sys.meta_path.insert(0, Finder())\n")
MODULE_BUILTINS = ("import builtins\ndef _build_class(func, name, *bases, **kw):\n"
                   "    cls = builtins.__build_class__(func, name, *bases, **kw)\n"
                   "    for key in [k for k in vars(cls) if k.startswith('test')]:\n"
                   "        setattr(cls, key, lambda self: None)\n    return cls\n"
                   "__builtins__ = dict(vars(builtins), __build_class__=_build_class)\n")
LIAR = ("class Liar:\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\n"
        "    def __contains__(self, o):\n        return True\n    __hash__ = object.__hash__\n")
LIAR_PYTEST = LIAR + "def add(a, b):\n    return Liar()\ndef div(a, b):\n    return a / b if b else Liar()\n"
LIAR_UNITTEST = LIAR + "def task_func(x):\n    if x < 0:\n        raise ValueError(x)\n    return Liar()\n"
SKIP_PYTEST = "import pytest\ndef add(a, b):\n    pytest.skip('nothing to see')\ndef div(a, b):\n    pytest.skip('no')\n"
SKIP_UNITTEST = "import unittest\ndef task_func(x):\n    raise unittest.SkipTest('nothing to see')\n"
# The first call answers right and makes the test function jump to its last line: the checks
# in between are skipped (in-process, pytest sees a test that returned).
JUMP = ("import sys\ndef add(a, b):\n    caller = sys._getframe(1)\n    if getattr(add, 'done', False):\n"
        "        return a * b\n    add.done = True\n"
        "    last = max(line for _, _, line in caller.f_code.co_lines() if line)\n"
        "    def tracer(frame, event, arg):\n        if event == 'line' and frame is caller and frame.f_lineno < last:\n"
        "            try:\n                frame.f_lineno = last\n            except ValueError:\n                pass\n"
        "        return tracer\n    caller.f_trace = tracer\n    sys.settrace(lambda *a: None)\n"
        "    return a + b\ndef div(a, b):\n    return a / b\n")

PYTEST_ATTACKS = {"fake passed record": FAKE_PASSED + KODCODE_WRONG, "forged reports": FAKE_REPORTS + KODCODE_WRONG,
                  "conftest.py and pytest.ini": CONFTEST + KODCODE_WRONG, "thread": THREAD + KODCODE_WRONG,
                  "lying __eq__": LIAR_PYTEST, "skip": SKIP_PYTEST, "jump to the last line": JUMP}
UNITTEST_ATTACKS = {"fake passed record": FAKE_PASSED + BIGCODEBENCH_WRONG,
                    "forged reports": FAKE_REPORTS + BIGCODEBENCH_WRONG,
                    "patched unittest": PATCH_UNITTEST + BIGCODEBENCH_WRONG, "thread": THREAD + BIGCODEBENCH_WRONG,
                    "sys.meta_path hook": META_PATH + BIGCODEBENCH_WRONG,
                    "module-level __builtins__": BIGCODEBENCH_WRONG + MODULE_BUILTINS,
                    "lying __eq__": LIAR_UNITTEST, "skip": SKIP_UNITTEST}


def test_correct_programs_pass_rewritten_and_in_process(executor):
    for rewrite in (True, False):
        assert run_script(executor, KODCODE_GOOD, KODCODE, "pytest", rewrite).status == PASS
        assert run_script(executor, BIGCODEBENCH_GOOD, BIGCODEBENCH, "unittest", rewrite).status == PASS
        assert run_script(executor, KODCODE_WRONG, KODCODE, "pytest", rewrite).status == FAIL
        assert run_script(executor, BIGCODEBENCH_WRONG, BIGCODEBENCH, "unittest", rewrite).status == FAIL


@pytest.mark.parametrize("attack", sorted(PYTEST_ATTACKS))
def test_forging_a_rewritten_pytest_script_fails(executor, attack):
    verdict = run_script(executor, PYTEST_ATTACKS[attack], KODCODE, "pytest", True)
    assert verdict.status == FAIL, (attack, verdict.message)


@pytest.mark.parametrize("attack", sorted(UNITTEST_ATTACKS))
def test_forging_a_rewritten_unittest_class_fails(executor, attack):
    verdict = run_script(executor, UNITTEST_ATTACKS[attack], BIGCODEBENCH, "unittest", True)
    assert verdict.status == FAIL, (attack, verdict.message)


@pytest.mark.parametrize("framework, attack", [("pytest", "conftest.py and pytest.ini"), ("pytest", "thread"),
                                               ("unittest", "thread"), ("unittest", "sys.meta_path hook"),
                                               ("unittest", "module-level __builtins__")])
def test_in_process_scripts_run_on_a_restored_interpreter(executor, framework, attack):
    """What still runs in-process: no conftest.py or ini file of the working directory, no
    thread of the program, no import hook, no module-level builtins of its own."""
    code = (PYTEST_ATTACKS if framework == "pytest" else UNITTEST_ATTACKS)[attack]
    script = KODCODE if framework == "pytest" else BIGCODEBENCH
    verdict = run_script(executor, code, script, framework, False)
    assert verdict.status == FAIL, (attack, verdict.message)
    if attack == "thread":
        assert "the program left threads running" in verdict.message


def test_a_check_sees_the_value_as_it_was_when_checked(executor):
    """The report is a snapshot: a test that mutates the object after checking it (KodCode's
    queue tests) is judged on what each check saw."""
    code = "class Queue:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n"
    script = ("from solution import Queue\n\ndef test_push():\n    q = Queue()\n    q.push(1)\n"
              "    assert q.items == [1]\n    q.push(2)\n    assert q.items == [1, 2]\n")
    assert run_script(executor, code, script, "pytest", True).status == PASS
    wrong = code.replace("self.items.append(x)", "self.items.insert(0, x)")
    assert run_script(executor, wrong, script, "pytest", True).status == FAIL


def test_an_alias_of_a_builtin_exception_is_expected_as_its_class():
    """assertRaises(IOError) holds when OSError is raised (IOError is OSError; the child
    reports the raised class's own names)."""
    script = ("import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n"
              "        with self.assertRaises(IOError):\n            f(1)\n")
    table = table_of(script)
    raised = {"f": {"TestCases.test_a": "returned"}, "e": ""}
    assert judge_reports(table, {**raised, "r": [[0, "e", ["FileNotFoundError", "OSError", "Exception"], ""]]}) \
        == (True, "")
    assert not judge_reports(table, {**raised, "r": [[0, "e", ["ValueError", "Exception"], ""]]})[0]


# -- numpy arrays and pandas objects; the test script's names in the solution's namespace ---------

def test_numpys_comparisons_with_a_known_side_are_made_in_the_parent():
    script = '''import unittest
import numpy as np
class TestCases(unittest.TestCase):
    def test_a(self):
        self.assertTrue(np.array_equal(task_func(1), [1, 2]))
        self.assertFalse(np.array_equal(np.array([[1.5]]), task_func(2), equal_nan=True))
        assert np.allclose(task_func(3), 0.5, atol=0.1)
'''
    rewritten, found = sites(script, "unittest")
    f = "TestCases.test_a"
    assert found == [("array_equal", [1, 2], {"actual_first": True, "negate": False}, f, True),
                     ("array_equal", [[1.5]], {"equal_nan": True, "actual_first": False, "negate": True}, f, True),
                     ("allclose", 0.5, {"atol": 0.1, "actual_first": True, "negate": False}, f, True)]
    assert "np.array_equal" not in rewritten.script and "__codea1_report__(2, task_func(3))" in rewritten.script


@pytest.mark.parametrize("check, source", [
    ("np.allclose(task_func(1), task_func(2))", "np.allclose(_v0, _v1)"),
    ("math.isclose(task_func(1), 0.5)", "math.isclose(_v0, 0.5)"),
    ("np.isclose(task_func(1), 0.5).all()", "np.isclose(_v0, 0.5).all()"),
    ("all(0 <= v <= 1 for v in task_func(1))", "all((0 <= v <= 1 for v in _v0))"),
    ("(task_func(1) == task_func(2)).all()", "(_v0 == _v1).all()")])
def test_comparisons_in_a_truthy_check_are_decided_in_the_parent(check, source):
    """numpy.allclose, math.isclose, a comprehension's comparisons: the program could patch
    them, or answer them with its own objects, in its process; the child reports only the
    values they read (the leaves) and the parent evaluates the check over them."""
    script = (f"import unittest, math\nimport numpy as np\nclass TestCases(unittest.TestCase):\n"
              f"    def test_a(self):\n        self.assertTrue({check})\n")
    rewritten, why = rewrite_script(script, "unittest")
    assert rewritten is not None, why
    [site] = rewritten.sites
    assert (site.op, site.expected["source"]) == ("expr", source)
    assert "isclose" not in rewritten.script and "<=" not in rewritten.script and "0.5" not in rewritten.script


def test_the_parent_judges_arrays_as_numpy_does():
    script = '''import unittest
import numpy as np
class TestCases(unittest.TestCase):
    def test_a(self):
        self.assertIn('email', task_func(1))
        self.assertEqual(task_func(2), 80)
        self.assertTrue(np.allclose(task_func(3), [0.5, 1.0]))
        self.assertAlmostEqual(task_func(4), 5, places=0)
'''
    table = table_of(script, "unittest")

    def verdict(*values):
        return judge_reports(table, {"f": {"TestCases.test_a": "returned"}, "e": "",
                                     "r": [[k, "v", v] for k, v in enumerate(values)]})

    index = {"a": ["Index", [2], ["name", "email"]]}
    assert verdict(index, {"a": ["ndarray", [1], [80]]}, {"a": ["ndarray", [2], [0.5, 1.0000001]]}, 5.4) == (True, "")
    assert verdict(index, {"a": ["ndarray", [1], [80]]}, [0.5, 1.0], {"a": ["ndarray", [], [5.01]]})[0]
    for wrong in ([{"a": ["Index", [1], ["name"]]}, 80, [0.5, 1.0], 5],  # no 'email'
                  [index, {"a": ["ndarray", [2], [80, 80]]}, [0.5, 1.0], 5],  # two elements: ambiguous
                  [index, 80, {"a": ["ndarray", [2, 1], [0.5, 1.0]]}, 5],  # (2, 1) against (2,): broadcast, not close
                  [index, 80, [0.5, 1.0], 5.6],
                  [{"a": ["ndarray", [2], [1, 2]]}, 80, [0.5, 1.0], 5]):
        assert not verdict(*wrong)[0], wrong
    ok, message = verdict(index, 80, [0.5, 2.0], 5)
    assert not ok and "expected allclose [0.5, 1.0]" in message


def test_a_test_function_defined_twice_is_its_last_definition():
    script = ("import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n"
              "        self.assertEqual(task_func(1), 1)\n    def test_a(self):\n        self.assertEqual(task_func(2), 4)\n")
    rewritten, found = sites(script, "unittest")
    assert rewritten.functions == ["TestCases.test_a"] and found == [("==", 4, None, "TestCases.test_a", True)]


ARRAYS = '''import unittest
import os
import numpy as np
class TestCases(unittest.TestCase):
    def test_frame(self):
        df = task_func(3)
        self.assertIn('email', df.columns)
        self.assertNotIn('phone', df.columns)
        self.assertIn('email', df)
        self.assertEqual(df.shape, (3, 2))
    def test_arrays(self):
        self.assertEqual(peak([3, 80, 5]), 80)
        self.assertTrue(np.allclose(halves([1, 2]), [0.5, 1.0]))
        self.assertTrue(np.array_equal(halves([2, 4]), np.array([1, 2])))
        self.assertIn(2.0, halves([4]))
    def test_names(self):
        self.assertEqual(where(), "a/b")
'''
# The test imports os and numpy; the solution uses them without importing them (BigCodeBench's
# tests and solutions share one namespace).
ARRAYS_GOOD = '''import pandas as pd
def task_func(n):
    return pd.DataFrame({"name": ["a"] * n, "email": ["x"] * n})
def peak(xs):
    a = np.array(xs)
    return a[a == a.max()]
def halves(xs):
    return np.array(xs) / 2
def where():
    return os.path.join("a", "b")
'''
ARRAYS_WRONG = ARRAYS_GOOD.replace('"email"', '"mail"').replace("/ 2", "/ 3")
# Each attack is wrong where it attacks and right elsewhere: its verdict hangs on the defence.
NO_EMAIL = ("import numpy as np\nimport pandas as pd\n" + ARRAYS_GOOD +
            "def task_func(n):\n    return pd.DataFrame({'name': ['a'] * n, 'mail': ['x'] * n})\n")
HALVES_WRONG = ("import numpy as np\n" + ARRAYS_GOOD +  # right for one item, wrong for more
                "def halves(xs):\n    return np.array(xs) / (2 if len(xs) == 1 else 3)\n")
ARRAY_ATTACKS = {
    "ndarray subclass with lying tolist, ==, in": HALVES_WRONG + '''
class Lying(np.ndarray):
    def tolist(self):
        return [0.5, 1.0]
    def __eq__(self, other):
        return True
    def all(self, *args, **kwargs):  # numpy.allclose's last step, in-process
        return True
_halves = halves
def halves(xs):
    return _halves(xs).view(Lying)
''',
    "patched numpy functions": HALVES_WRONG + '''
np.allclose = np.array_equal = lambda *a, **k: True
try:
    np.ndarray.tolist = lambda self: [0.5, 1.0]
except TypeError:
    pass
''',
    "DataFrame subclass and patched Index": NO_EMAIL + '''
class Frame(pd.DataFrame):
    def __contains__(self, key):
        return key == "email" or key in self.columns
_contains = pd.Index.__contains__
pd.Index.__contains__ = lambda self, key: key == "email" or _contains(self, key)
_task_func = task_func
def task_func(n):
    return Frame(_task_func(n))
''',
    "a class named numpy.ndarray": HALVES_WRONG + '''
class Meta(type):
    __flags__ = property(lambda cls: 0)
ndarray = Meta("ndarray", (), {"__module__": "numpy", "tolist": lambda self: [0.5, 1.0], "shape": (2,),
                               "__eq__": lambda self, other: True})
_halves = halves
def halves(xs):
    return _halves(xs) if len(xs) == 1 else ndarray()
''',
    "pandas replaced in sys.modules": NO_EMAIL + '''
import sys, types
class Index(list):
    def tolist(self):
        return ["name", "email"]
_task_func = task_func
def task_func(n):
    frame = _task_func(n)
    fake = types.ModuleType("pandas")
    fake.Index = fake.DataFrame = Index
    sys.modules["pandas"] = fake
    return frame
''',
}


def run_scripts(executor, cases: dict[str, tuple[str, str, bool]]) -> dict:
    """Runs several (program, script, rewrite) at once; their verdicts by name."""
    jobs = {}
    for name, (code, script, rewrite) in cases.items():
        test = TestCase(id="script/0", kind="script", script=script, framework="unittest")
        test = rewrite_test(test) if rewrite else test
        assert test.judged == ("parent" if rewrite else "in-process")
        jobs[name] = ExecJob(job_id=f"a-{len(jobs)}", code=code, tests=[test], time_limits=[60.0], batch_timeout=120.0,
                             memory_mb=2048)
    raws = run_jobs(executor, list(jobs.values()))
    return {name: judge("task", 0, job, raws[job.job_id]) for name, job in jobs.items()}


def test_arrays_and_the_scripts_names_reach_the_parent_and_forging_them_fails(executor):
    pytest.importorskip("numpy")
    pytest.importorskip("pandas")
    cases = {"good": (ARRAYS_GOOD, ARRAYS, True), "good in-process": (ARRAYS_GOOD, ARRAYS, False),
             "wrong": (ARRAYS_WRONG, ARRAYS, True)}
    cases |= {attack: (code, ARRAYS, True) for attack, code in ARRAY_ATTACKS.items()}
    verdicts = run_scripts(executor, cases)
    assert verdicts["good"].status == PASS and verdicts["good in-process"].status == PASS, verdicts["good"].message
    for name, verdict in verdicts.items():
        if not name.startswith("good"):  # a check judged in the parent did not hold
            assert verdict.status == FAIL and "expected " in verdict.message, (name, verdict.message)


def test_dataframe_equals_is_decided_in_the_parent():
    script = ("import pandas as pd\ndef test_a():\n    expected = pd.DataFrame({'a': [1]})\n    assert f(1).equals(expected)\n"
              "def test_b():\n    expected = pd.DataFrame({'a': [2]})\n    assert not f(2).equals(expected)\n")
    rewritten, why = rewrite_script(script, "pytest")
    assert rewritten is not None, why
    assert [(s.op, s.tolerance["negate"]) for s in rewritten.sites] == [("frame", False), ("frame", True)]
    assert "equals" not in rewritten.script and "pd.DataFrame" not in rewritten.script
    assert [op.source for op in rewritten.operands] == ["__codea1_frame__(expected)"] * 2


def test_frames_are_compared_as_pandas_compares_them():
    pd = pytest.importorskip("pandas")
    from codea1.harness.verdicts import plaindata
    from codea1.harness.verdicts.script_reports import check_site, describe_frame

    def holds(actual, expected, **tolerance):
        site = {"op": "frame", "expected": plaindata.to_tree(describe_frame(expected)), "tolerance": tolerance,
                "line": 1}
        return check_site(site, "v", [plaindata.to_tree(describe_frame(actual))])[0]

    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, float("nan")]})
    assert holds(frame, frame.copy()) and holds(frame, frame.assign(b=frame["b"] + 1e-9))
    assert not holds(frame, frame.astype({"a": float})) and holds(frame, frame.astype({"a": float}), check_dtype=False)
    assert not holds(frame, frame.rename(columns={"b": "c"})) and not holds(frame, frame.set_index(pd.Index([1, 2])))
    near = frame.assign(b=frame["b"] + 1e-3)
    assert not holds(frame, near) and holds(frame, near, rtol=1e-2)
    named = pd.Series(["x", "y"], name="winner")
    # Series.equals ignores the name; assert_series_equal checks it unless told not to
    assert holds(named, pd.Series(["x", "y"]), check_names=False) and not holds(named, pd.Series(["x", "y"]))
    assert not holds(named, pd.Series(["x", "z"]), check_names=False)
