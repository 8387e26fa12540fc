"""In-process judging the program cannot steer. Script tests whose verdict is
decided by a runner inside the program's process (BigCodeBench unittest classes, KodCode
pytest modules, judged "in-process") and the rewritten ones whose runner still says how each
test function ended: a program that solves nothing and patches what the framework runs on
(``contextlib.contextmanager``, ``functools.wraps``, ``traceback``, unittest's and pytest's
internals, a function's code, sys.modules, a trace or profile function, a gc callback, a
registry) must not pass; neither at load time nor when its entry function is first called
(mid-judging). No case here may get "pass", marked in-process or not, nor "sandbox_error";
the controls (the references) still pass.

Each hostile program is an honest program that is right on part of the tests (small inputs)
and wrong on the rest, plus the patch: without the patch it fails; against a harness without the
ground check most of them passed (28 of 28 BigCodeBench tasks with the contextmanager patch).
"""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
from adversarial.hostile import FORGE, GRAY_WRONG, PROBLEMS, RESULTS_FD, ProgramCase, report, run_program_cases

from codea1.benchmarks.kodcode import golden_tests
from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.script_tests import split_test

# -- problems whose script tests stay judged in-process (checks the test makes by itself) ------

BCB_SCRIPT = '''\
import unittest


class TestCases(unittest.TestCase):
    def test_1_small(self):
        data = [3, 1, 2]
        if task_func(list(data)) != sorted(data):
            self.fail("not sorted")

    def test_2_big(self):
        data = [9, 7, 8, 1, 5]
        if task_func(list(data)) != sorted(data):
            self.fail("not sorted")

    def test_3_message(self):
        pattern = "^no data$".strip()
        with self.assertRaisesRegex(ValueError, pattern):
            task_func(None)
'''
BCB_REFERENCE = "def task_func(xs):\n    if xs is None:\n        raise ValueError('no data')\n    return sorted(xs)\n"
# right on small lists only, and the wrong message
BCB_PARTLY = "def task_func(xs):\n    if xs is None:\n        raise ValueError('nothing')\n" \
             "    return sorted(xs) if len(xs) <= 3 else list(xs)\n"

KOD_SCRIPT = '''\
import pytest
from solution import scale


def test_1_small():
    xs = [1, 2]
    if scale(xs, 2) != [x * 2 for x in xs]:
        raise AssertionError("not scaled")


def test_2_negative():
    pattern = "^negative factor$".strip()
    with pytest.raises(ValueError, match=pattern):
        scale([1], -1)


class TestBig:
    def test_3_big(self):
        xs = [1, 2, 3, 4, 5]
        if scale(xs, 3) != [x * 3 for x in xs]:
            raise AssertionError("not scaled")
'''
KOD_REFERENCE = "def scale(xs, k):\n    if k < 0:\n        raise ValueError('negative factor')\n" \
                "    return [x * k for x in xs]\n"
KOD_PARTLY = "def scale(xs, k):\n    if k < 0:\n        raise ValueError('wrong')\n" \
             "    return [x * k for x in xs] if len(xs) <= 2 else list(xs)\n"
# right but for the message of its error (test_2_negative, not the module's last test)
KOD_WRONG_MESSAGE = "def scale(xs, k):\n    if k < 0:\n        raise ValueError('wrong')\n" \
                    "    return [x * k for x in xs]\n"

# BigCodeBench/268, right but for 1,000 values or more (test_large_input, judged in-process;
# the other tests, judged in the parent, pass)
BCB268_PARTLY = """\
import collections
import random

LETTERS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']


def task_func(n_keys, n_values):
    keys = [random.choice(LETTERS) for _ in range(n_keys)]
    values = list(range(1, min(n_values, 999) + 1))
    return dict(collections.OrderedDict((k, values) for k in keys))
"""


def bcb_inprocess_problem() -> Problem:
    tests = split_test(TestCase(id="unittest/0", kind="script", script=BCB_SCRIPT, framework="unittest"))
    assert [t.judged for t in tests] == ["in-process"], tests
    return Problem(task_id="bcb-inprocess/sort", prompt="", entry_point="task_func", reference=BCB_REFERENCE,
                   tests=tests)


def kod_inprocess_problem() -> Problem:
    tests = golden_tests(KOD_SCRIPT, "scale")
    assert [t.judged for t in tests] == ["in-process"], tests
    return Problem(task_id="kod-inprocess/scale", prompt="", entry_point="scale", reference=KOD_REFERENCE,
                   tests=tests)


# -- the patches, as module-level code ----------------------------------------------------------

CONTEXTMANAGER = '''
import contextlib
_original = contextlib.contextmanager

def _contextmanager(fn):
    if fn.__name__ != "testPartExecutor":
        return _original(fn)

    @_original
    def _swallowing(*args, **kwargs):
        try:
            yield
        except Exception:
            pass
    return _swallowing

contextlib.contextmanager = _contextmanager
'''

WRAPS = '''
import functools
functools.wraps = lambda wrapped, *args, **kwargs: (lambda fn: (lambda *a, **k: None))
'''

TRACEBACK = '''
import traceback
traceback.format_exception = lambda *args, **kwargs: ["passed\\n"]
traceback.TracebackException.format = lambda self, **kwargs: iter(["passed\\n"])
traceback.print_exception = lambda *args, **kwargs: None
'''

ASSERTIONS = '''
import contextlib, unittest
unittest.case.TestCase.assertEqual = lambda self, first, second, msg=None: None
unittest.case.TestCase.assertRaisesRegex = lambda self, *args, **kwargs: contextlib.suppress(BaseException)
'''

OUTCOME = '''
import contextlib, unittest

@contextlib.contextmanager
def _swallowing(self, test_case, subTest=False, **kwargs):
    try:
        yield
    except Exception:
        pass

unittest.case._Outcome.testPartExecutor = _swallowing
'''

ADD_FAILURE = '''
import unittest.case, unittest.result
unittest.result.TestResult.addFailure = unittest.result.TestResult.addError = lambda *args, **kwargs: None
unittest.case._addError = lambda *args, **kwargs: None
'''

PYTEST_CALL_AND_REPORT = '''
import _pytest.runner
_original = _pytest.runner.call_and_report

def _call_and_report(item, when, log=True, **kwargs):
    report = _original(item, when, log=False, **kwargs)
    report.outcome, report.longrepr = "passed", None
    if log:
        item.ihook.pytest_runtest_logreport(report=report)
    return report

_pytest.runner.call_and_report = _call_and_report
'''

PYTEST_PYFUNC_CALL = '''
import _pytest.python
_pytest.python.pytest_pyfunc_call = lambda pyfuncitem: True
'''

PYTEST_MAKE_REPORT = '''
import _pytest.reports
_made = _pytest.reports.TestReport.from_item_and_call.__func__

def _forced(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report

_pytest.reports.TestReport.from_item_and_call = classmethod(_forced)
'''

# A stdlib function every generator context manager runs (unittest's test part executor
# among them): its code swapped for one that swallows every exception.
CODE_SWAP = '''
import contextlib
contextlib._GeneratorContextManager.__exit__.__code__ = (lambda self, typ, value, traceback: True).__code__
'''

FAKE_UNITTEST = '''
import sys, types, contextlib, unittest as _real

class _Quiet(_real.TestCase):
    pass

for _name in dir(_real.TestCase):
    if _name.startswith("assert"):
        setattr(_Quiet, _name, lambda self, *a, **k: contextlib.suppress(BaseException))
_fake = types.ModuleType("unittest")
_fake.__dict__.update(_real.__dict__)
_fake.TestCase = _Quiet
sys.modules["unittest"] = _fake
'''

FAKE_PYTEST = '''
import sys, types, contextlib, pytest as _real
_fake = types.ModuleType("pytest")
_fake.__dict__.update(_real.__dict__)
_fake.raises = lambda *a, **k: contextlib.suppress(BaseException)
sys.modules["pytest"] = _fake
'''

# Trace and profile functions that turn failures into passes as the framework records them.
HOOK_FUNCTION = '''
import sys

def _hook(frame, event, arg):
    if event == "return":
        name = frame.f_code.co_name
        if name in ("addFailure", "addError", "addSubTest", "_addError"):
            for holder in (frame.f_locals.get("self"), frame.f_locals.get("result")):
                for field in ("failures", "errors"):
                    if isinstance(getattr(holder, field, None), list):
                        getattr(holder, field).clear()
        elif name == "from_item_and_call" and hasattr(arg, "outcome"):
            arg.outcome, arg.longrepr = "passed", None
    return _hook
'''
SETTRACE = HOOK_FUNCTION + "sys.settrace(_hook)\n"
SETPROFILE = HOOK_FUNCTION + "sys.setprofile(_hook)\n"

GC_CALLBACK = '''
import gc

def _callback(phase, info):
    import sys
    result = sys.modules.get("unittest.result")
    if result is not None:
        result.TestResult.addFailure = result.TestResult.addError = lambda *a, **k: None
    reports = sys.modules.get("_pytest.reports")
    if reports is not None and not getattr(reports, "_forced", False):
        reports._forced = True
        made = reports.TestReport.from_item_and_call.__func__

        def forced(cls, item, call):
            report = made(cls, item, call)
            report.outcome, report.longrepr = "passed", None
            return report
        reports.TestReport.from_item_and_call = classmethod(forced)

gc.callbacks.append(_callback)
'''

# A registry: re's cache of compiled patterns, where the patterns the tests match messages
# against are made to match anything.
RE_CACHE = '''
import re
_anything = re.compile(".*")
for _cache in (getattr(re, "_cache", None), getattr(re, "_cache2", None)):
    if isinstance(_cache, dict):
        for _pattern in ("^no data$", "^negative factor$"):
            _cache[(str, _pattern, 0)] = _anything
'''
# A pattern whose text and flags are its key's but whose compiled code matches anything
# (``_sre.compile`` takes text and code apart).
RE_CACHE_CODE = '''
import re, _sre
from re import _compiler, _parser
_parsed = _parser.parse(".*", 0)
for _cache in (getattr(re, "_cache", None), getattr(re, "_cache2", None)):
    if isinstance(_cache, dict):
        for _pattern in ("^no data$", "^negative factor$"):
            _cache[(str, _pattern, 0)] = _sre.compile(_pattern, _parsed.state.flags, _compiler._code(_parsed, 0),
                                                      _parsed.state.groups - 1, _parsed.state.groupdict,
                                                      (None,) * _parsed.state.groups)
'''

# Rollback through raw memory, after the test's last part: each call reaches the test case
# (a frame up), attaches to what the framework drops when the test is over (unittest's
# _Outcome, pytest's item.funcargs) an object whose finalizer then rewrites the observer's
# counters in place (ctypes, at the address of each itertools.count) and takes the failure out
# of the framework's result. Nothing the check after the test compares has changed.
RAW_COUNT = '''
import ctypes as _ctypes
import sys as _sys

def _set_count(counter, value):
    _ctypes.c_ssize_t.from_address(id(counter) + 16).value = value  # itertools.count: after PyObject_HEAD

def _read_count(counter):
    return int(repr(counter)[6:-1])
'''
UNITTEST_ROLLBACK = RAW_COUNT + '''
class _Rollback:
    def __init__(self, state, result, case):
        self.state, self.result, self.case = state, result, case

    def __del__(self):
        s, name = self.state, self.case._testMethodName
        i = s[1].index(name)
        _set_count(s[3][i], 0)
        _set_count(s[4][i], max(1, _read_count(s[4][i])))
        s[5].pop(name, None)
        for field in ("failures", "errors"):
            entries = getattr(self.result, field)
            entries[:] = [e for e in entries if e[0] is not self.case]

_armed = set()

def _arm():
    case = _sys._getframe(2).f_locals.get("self")
    if case is None or id(case) in _armed or getattr(case, "_outcome", None) is None:
        return
    _armed.add(id(case))
    state = type(case).__dict__["_callTestMethod"].__defaults__[0]
    case._outcome.__dict__["_codea1_rollback"] = _Rollback(state, case._outcome.result, case)
'''
PYTEST_ROLLBACK = RAW_COUNT + '''
class _Rollback:
    def __init__(self, state, collector, nodeid, i):
        self.state, self.collector, self.nodeid, self.i = state, collector, nodeid, i

    def __del__(self):
        s, i = self.state, self.i
        _set_count(s[6][i], 0)
        _set_count(s[7][i], _read_count(s[8][i]))
        s[10].pop(s[2][i], None)
        self.collector.outcomes[self.nodeid] = "passed"

def _arm():
    frame, item = _sys._getframe(2), None
    while frame is not None and item is None:
        item = frame.f_locals.get("pyfuncitem") or frame.f_locals.get("item")
        frame = frame.f_back
    if item is None or not isinstance(getattr(item, "funcargs", None), dict) or "_codea1_rollback" in item.funcargs:
        return
    plugins = item.config.pluginmanager.get_plugins()
    observer = next(p for p in plugins if getattr(p, "__name__", "") == "_codea1_observer")
    collector = next(p for p in plugins if isinstance(getattr(p, "outcomes", None), dict))
    state = observer.pytest_runtest_call.__defaults__[0]
    i = state[2].index(state[13](item.nodeid))
    item.funcargs["_codea1_rollback"] = _Rollback(state, collector, item.nodeid, i)
'''


def armed_each_call(program: str, entry: str, attack: str) -> str:
    """``attack``'s ``_arm()`` called at the start of every call of the entry function."""
    return (program.replace(f"def {entry}(", "def _codea1_impl(", 1) + textwrap.dedent(attack)
            + f"\ndef {entry}(*args, **kwargs):\n    _arm()\n    return _codea1_impl(*args, **kwargs)\n")


# The runner's own control exceptions, raised by the program (no patch at all).
SKIP_TEST = '''
import unittest

def _skip_the_rest(*args):
    raise unittest.SkipTest("not today")
'''
SHOULD_STOP = '''
import unittest.case

def _skip_the_rest(*args):
    raise unittest.case._ShouldStop()
'''

# The script's own test class, reached without frames, its other tests made empty.
SUBCLASSES = '''
def _empty_the_tests():
    import unittest
    for cls in list(unittest.TestCase.__subclasses__()) + list(object.__subclasses__()):
        if cls.__name__ in ("TestCases", "TestBig"):
            for name in list(vars(cls)):
                if name.startswith("test"):
                    setattr(cls, name, lambda self: None)
_empty_the_tests()
'''

COMMON = {"contextmanager": CONTEXTMANAGER, "wraps": WRAPS, "traceback": TRACEBACK, "code-swap": CODE_SWAP,
          "settrace": SETTRACE, "setprofile": SETPROFILE, "gc-callback": GC_CALLBACK, "re-cache": RE_CACHE,
          "re-cache-code": RE_CACHE_CODE}
UNITTEST_ONLY = {"assertions": ASSERTIONS, "outcome": OUTCOME, "add-failure": ADD_FAILURE,
                 "fake-unittest": FAKE_UNITTEST}
PYTEST_ONLY = {"call-and-report": PYTEST_CALL_AND_REPORT, "pyfunc-call": PYTEST_PYFUNC_CALL,
               "make-report": PYTEST_MAKE_REPORT, "fake-pytest": FAKE_PYTEST}


def at_load(program: str, patch: str) -> str:
    return program + "\n" + textwrap.dedent(patch)


def at_first_call(program: str, entry: str, patch: str) -> str:
    """The patch made when the entry function is first called, while the tests run."""
    body = textwrap.indent(textwrap.dedent(patch), "    ")
    once = f"\n_patched = []\n\ndef _patch_once():\n    if _patched:\n        return\n    _patched.append(1)\n{body}\n"
    return (program.replace(f"def {entry}(", "def _codea1_impl(", 1) + once
            + f"\ndef {entry}(*args, **kwargs):\n    _patch_once()\n    return _codea1_impl(*args, **kwargs)\n")


def control_exception(program: str, entry: str, snippet: str) -> str:
    """Right where it is right (small inputs); elsewhere the runner's own control exception."""
    impl = program.replace(f"def {entry}(", "def _codea1_impl(", 1)
    return (impl + textwrap.dedent(snippet)
            + f"\ndef {entry}(xs, *rest):\n    if xs is None or len(xs) > 3:\n        _skip_the_rest()\n"
            + "    return _codea1_impl(xs, *rest)\n")


def hostile_cases(family: str) -> list[ProgramCase]:
    if family == "bigcodebench":
        hand, partly, entry, only = "bcb-inprocess", BCB_PARTLY, "task_func", UNITTEST_ONLY
        real, real_wrong, real_entry = "bigcodebench", BCB268_PARTLY, "task_func"
    else:
        hand, partly, entry, only = "kod-inprocess", KOD_PARTLY, "scale", PYTEST_ONLY
        real, real_wrong, real_entry = "kodcode", GRAY_WRONG, "generate_gray_code"
    cases = [ProgramCase(f"{hand}-reference", "-", hand, "", ("pass",), control=True),
             ProgramCase(f"{hand}-partly-right", "-", hand, partly, control=True),
             ProgramCase(f"{real}-reference", "-", real, "", ("pass",), control=True),
             ProgramCase(f"{real}-partly-right", "-", real, real_wrong, control=True)]
    for name, patch in {**COMMON, **only}.items():
        cases.append(ProgramCase(f"{hand}-{name}-at-load", "3", hand, at_load(partly, patch)))
        cases.append(ProgramCase(f"{hand}-{name}-at-first-call", "3", hand, at_first_call(partly, entry, patch)))
        cases.append(ProgramCase(f"{real}-{name}-at-load", "3", real, at_load(real_wrong, patch)))
        cases.append(ProgramCase(f"{real}-{name}-at-first-call", "3", real,
                                 at_first_call(real_wrong, real_entry, patch)))
    cases.append(ProgramCase(f"{hand}-subclasses-at-first-call", "3", hand, at_first_call(partly, entry, SUBCLASSES)))
    if family == "bigcodebench":
        cases.append(ProgramCase(f"{hand}-raises-skip-test", "3", hand, control_exception(partly, entry, SKIP_TEST)))
        cases.append(ProgramCase(f"{hand}-raises-should-stop", "3", hand,
                                 control_exception(partly, entry, SHOULD_STOP)))
    return cases


def expect_no_forged_pass(executor, family: str, cases: list[ProgramCase], problems: dict) -> dict[str, str]:
    """Runs the cases: every case but the controls keeps its promise when it does not pass (nor
    end as a sandbox error). Returns each case's message."""
    rows = run_program_cases(executor, cases, problems)
    for row in rows:
        if not row["control"]:
            row["ok"] = not row["outcome"].startswith(("pass", "sandbox_error"))
    broken = report(family, executor.name, rows)
    assert not broken, f"{len(broken)} of {len(rows)} cases broke their promise:\n" + "\n".join(broken)
    return {row["case"]: row["message"] for row in rows}


def reference_controls(name: str, unittest_attack: str, pytest_attack: str) -> list[ProgramCase]:
    """The attack on the right programs of the hand problems: it changes nothing, they pass."""
    return [ProgramCase(f"bcb-reference-{name}", "-", "bcb-inprocess",
                        armed_each_call(BCB_REFERENCE, "task_func", unittest_attack), ("pass",), control=True),
            ProgramCase(f"kod-reference-{name}", "-", "kod-inprocess",
                        armed_each_call(KOD_REFERENCE, "scale", pytest_attack), ("pass",), control=True)]


FAMILY_PROBLEMS = {"bigcodebench": {"bcb-inprocess": bcb_inprocess_problem, "bigcodebench": PROBLEMS["bigcodebench"]},
                   "kodcode": {"kod-inprocess": kod_inprocess_problem, "kodcode": PROBLEMS["kodcode"]}}


@pytest.mark.parametrize("family", list(FAMILY_PROBLEMS))
def test_no_program_steers_an_in_process_runner(adv_executor, family):
    """Strict: a pass judged in-process counts as a pass here (the controls excepted)."""
    problems = {key: make() for key, make in FAMILY_PROBLEMS[family].items()}
    cases = hostile_cases(family)
    expect_no_forged_pass(adv_executor, f"framework-tampering/{family}", cases, problems)


def test_the_hand_problems_stay_in_process_and_judge_honestly(executor):
    """The problems above are what the cases need: judged in-process, the reference passing,
    the partly right program failing (without any patch)."""
    problems = {"bcb-inprocess": bcb_inprocess_problem(), "kod-inprocess": kod_inprocess_problem()}
    cases = [ProgramCase("bcb-reference", "-", "bcb-inprocess", "", ("pass",), control=True),
             ProgramCase("bcb-partly", "-", "bcb-inprocess", BCB_PARTLY, control=True),
             ProgramCase("kod-reference", "-", "kod-inprocess", "", ("pass",), control=True),
             ProgramCase("kod-partly", "-", "kod-inprocess", KOD_PARTLY, control=True)]
    rows = {row["case"]: row for row in run_program_cases(executor, cases, problems)}
    assert rows["bcb-reference"]["outcome"] == rows["kod-reference"]["outcome"] == "pass"
    assert rows["bcb-partly"]["outcome"] == rows["kod-partly"]["outcome"] == "fail"


def test_patches_made_while_loading_are_put_back_not_held_against_the_program(executor):
    """A program that patches the standard library while it loads and then solves the
    problem passes: the ground is put back before the tests, not a verdict on the program."""
    problems = {"bcb-inprocess": bcb_inprocess_problem(), "kod-inprocess": kod_inprocess_problem()}
    cases = [ProgramCase("bcb", "-", "bcb-inprocess", at_load(BCB_REFERENCE, CONTEXTMANAGER + WRAPS + OUTCOME),
                         ("pass",), control=True),
             ProgramCase("kod", "-", "kod-inprocess", at_load(KOD_REFERENCE, CONTEXTMANAGER + PYTEST_CALL_AND_REPORT),
                         ("pass",), control=True)]
    rows = run_program_cases(executor, cases, problems)
    assert [r["outcome"] for r in rows] == ["pass", "pass"], rows


def test_a_change_made_during_the_test_fails_it_and_says_what(executor):
    problems = {"bcb-inprocess": bcb_inprocess_problem()}
    code = at_first_call(BCB_REFERENCE, "task_func", "import functools\nfunctools.wraps = None\n")
    rows = run_program_cases(executor, [ProgramCase("bcb", "-", "bcb-inprocess", code)], problems)
    assert rows[0]["outcome"] == "fail"
    assert "the program changed functools.wraps during the test" in rows[0]["message"], rows[0]


def test_a_test_that_changes_the_framework_and_puts_it_back_passes(executor):
    """Tests patch the standard library themselves (mock.patch) and put it back: not tampering."""
    script = BCB_SCRIPT.replace("    def test_1_small(self):\n",
                                "    @unittest.mock.patch('os.getcwd', return_value='/x')\n"
                                "    def test_1_small(self, getcwd):\n"
                                "        import os, warnings\n"
                                "        warnings.simplefilter('ignore')\n"
                                "        self.assertEqual(os.getcwd(), '/x')\n")
    script = script.replace("import unittest\n", "import unittest\nimport unittest.mock\n", 1)
    tests = split_test(TestCase(id="unittest/0", kind="script", script=script, framework="unittest"))
    problem = dataclasses.replace(bcb_inprocess_problem(), tests=tests)
    rows = run_program_cases(executor, [ProgramCase("ref", "-", "p", "", ("pass",), control=True)], {"p": problem})
    assert rows[0]["outcome"] == "pass", rows[0]["message"]


SELF_HEALING_SCRIPT = '''\
import unittest


class TestCases(unittest.TestCase):
    # a helper that returns is not written out into the tests: its check stays in-process
    def sorted_as(self, result, data):
        self.assertEqual(result, sorted(data))
        return result

    def test_1_small(self):
        data = [3, 1, 2]
        result = task_func(list(data))
        self.sorted_as(result, data)

    def test_2_big(self):
        data = [9, 7, 8, 1, 5]
        result = task_func(list(data))
        self.sorted_as(result, data)
'''

# Patches TestCase.assertEqual from inside the call, and the patch puts the original back when
# it is used: by the time the test ends, nothing differs (the old harness passed it).
SELF_HEALING = '''
import unittest

def task_func(xs):
    case = unittest.case.TestCase
    original = case.__dict__["assertEqual"]

    def once(self, first, second, msg=None):
        case.assertEqual = original

    case.assertEqual = once
    return list(xs)
'''


def test_an_assertion_patched_from_the_call_and_put_back_when_used_does_not_pass(executor):
    tests = split_test(TestCase(id="unittest/0", kind="script", script=SELF_HEALING_SCRIPT, framework="unittest"))
    assert [t.judged for t in tests] == ["in-process"]
    problem = Problem(task_id="self-healing", prompt="", entry_point="task_func", reference=BCB_REFERENCE, tests=tests)
    cases = [ProgramCase("reference", "-", "p", "", ("pass",), control=True),
             ProgramCase("self-healing", "3", "p", SELF_HEALING)]
    rows = {row["case"]: row for row in run_program_cases(executor, cases, {"p": problem})}
    assert rows["reference"]["outcome"] == "pass"
    assert rows["self-healing"]["outcome"] == "fail", rows["self-healing"]


def test_a_finalizer_rolling_back_the_observer_through_raw_memory_does_not_pass(adv_executor):
    """Each part's failure leaves the process as it happens (an event on the results channel):
    a finalizer that runs after the test's last part and rewrites the observer's counters and
    the framework's result cannot unwrite it. Before, the three hand and BigCodeBench cases
    passed (a wrong program passed 28 of 28 BigCodeBench tasks judged in-process this way;
    under pytest, where the failing test is not the module's last)."""
    problems = {key: make() for family in FAMILY_PROBLEMS.values() for key, make in family.items()}
    cases = [ProgramCase("bcb-hand-rollback", "3", "bcb-inprocess", armed_each_call(BCB_PARTLY, "task_func",
                                                                                  UNITTEST_ROLLBACK)),
             ProgramCase("bcb-268-rollback", "3", "bigcodebench", armed_each_call(BCB268_PARTLY, "task_func",
                                                                                UNITTEST_ROLLBACK)),
             ProgramCase("kod-hand-rollback", "3", "kod-inprocess", armed_each_call(KOD_WRONG_MESSAGE, "scale",
                                                                                  PYTEST_ROLLBACK)),
             ProgramCase("kod-gray-rollback", "3", "kodcode", armed_each_call(GRAY_WRONG, "generate_gray_code",
                                                                            PYTEST_ROLLBACK)),
             *reference_controls("rollback", UNITTEST_ROLLBACK, PYTEST_ROLLBACK)]
    messages = expect_no_forged_pass(adv_executor, "framework-tampering/rollback", cases, problems)
    assert "failed as it ran" in messages["bcb-hand-rollback"], messages
    assert "failed as it ran" in messages["kod-hand-rollback"], messages


# -- the results channel: what a program writes there, or does to it --------------------------

# From inside the call: the write end of the results pipe found by scanning descriptors, then
# the record of a pass for the test now running, and the end of the job.
FORGED_PASS = FORGE + RESULTS_FD + "\ndef _arm():\n    _forge(_results_fd(), 1, load=False)\n"

# Every name of every frame up the stack (and one level into tuples, lists and dicts) searched
# for what could seal a pass: a partial, or a function called seal; each is tried on test 0.
SEAL_HUNT = r'''
import functools as _functools, os as _os, sys as _sys

def _arm():
    frame, found = _sys._getframe(1), []
    while frame is not None:
        for value in list(frame.f_locals.values()):
            inner = list(value) if type(value) in (tuple, list) else list(value.values()) if type(value) is dict else []
            found += [v for v in [value] + inner
                      if isinstance(v, _functools.partial) or getattr(v, "__name__", "") in ("seal", "verdict_seal")]
        frame = frame.f_back
    for candidate in found:
        try:
            mark = candidate(0)
        except Exception:
            continue
        if type(mark) is str:
            _os.write(3, ('{"i":0,"s":"passed","e":"","t":0.0,"m":"%s"}\n{"done":true}\n' % mark).encode())
            _os._exit(0)
'''

# The results descriptor pointed at /dev/null from the first call on (a failure's event is then
# lost), put back by the finalizer of the last test's outcome, which also rolls the observer's
# counters and unittest's result back (RAW_COUNT).
DROPPED_EVENTS = UNITTEST_ROLLBACK.replace(
    "    def __del__(self):\n",
    "    def __del__(self):\n        if self.case._testMethodName == 'test_3_message':\n"
    "            _os.dup2(_saved[0], 3)\n").replace(
    "def _arm():\n",
    "import os as _os\n_saved = []\n\ndef _arm():\n    if not _saved:\n        _saved.append(_os.dup(3))\n"
    "        _os.dup2(_os.open('/dev/null', _os.O_WRONLY), 3)\n")


def test_what_a_program_does_to_the_results_channel_forges_no_pass(adv_executor):
    """An in-process pass is taken only with the seal of a key the child made before the program
    loaded and holds where no frame names it (protocol.verdict_seal): a pass the program writes
    itself is a protocol violation, and the key is not found by walking the frames. An event
    whose channel was moved away ends the process instead of being lost. Before, the forged
    passes passed (one line written to the pipe, no raw memory), and so did the dropped
    events with the rollback."""
    problems = {key: make() for family in FAMILY_PROBLEMS.values() for key, make in family.items()}
    cases = [ProgramCase("bcb-hand-forged-pass", "3", "bcb-inprocess", armed_each_call(BCB_PARTLY, "task_func",
                                                                                     FORGED_PASS)),
             ProgramCase("kod-hand-forged-pass", "3", "kod-inprocess", armed_each_call(KOD_PARTLY, "scale", FORGED_PASS)),
             ProgramCase("bcb-268-forged-pass", "3", "bigcodebench", armed_each_call(BCB268_PARTLY, "task_func",
                                                                                    FORGED_PASS)),
             ProgramCase("bcb-hand-seal-hunt", "3", "bcb-inprocess", armed_each_call(BCB_PARTLY, "task_func", SEAL_HUNT)),
             ProgramCase("kod-hand-seal-hunt", "3", "kod-inprocess", armed_each_call(KOD_PARTLY, "scale", SEAL_HUNT)),
             ProgramCase("bcb-hand-dropped-events", "3", "bcb-inprocess",
                         armed_each_call(BCB_PARTLY, "task_func", DROPPED_EVENTS)),
             *reference_controls("seal-hunt", SEAL_HUNT, SEAL_HUNT)]
    messages = expect_no_forged_pass(adv_executor, "framework-tampering/results-channel", cases, problems)
    assert "did not seal" in messages["bcb-hand-forged-pass"], messages
    assert "did not seal" in messages["kod-hand-forged-pass"], messages
    assert "ended during this test" in messages["bcb-hand-dropped-events"], messages


# From inside the call: the test case found a frame up, and its assertion ``fail`` made to
# do nothing, one way each (the test methods that follow then pass what they should fail).
REBIND_FAIL = r'''
import sys as _sys

def _noop(*args, **kwargs):
    return None

def _arm():
    frame = _sys._getframe(1)
    while frame is not None:
        case = frame.f_locals.get("self")
        if case is not None and hasattr(case, "_testMethodName"):
            try:
                {how}
            except Exception:
                pass
            return
        frame = frame.f_back
'''
REBIND_WAYS = {"own-dict": 'case.__dict__["fail"] = _noop',
               "attribute": "case.fail = _noop",
               "class-attribute": "type.__setattr__(type(case), 'fail', _noop)",
               "moved-class": "case.__class__ = type('Moved', (type(case),), {'fail': _noop})",
               "equality-table": "case._type_equality_funcs[list] = _noop"}


def test_a_test_cases_assertions_rebound_from_the_call_do_not_pass(adv_executor):
    """unittest's assertions are on the test class as data descriptors (a write to the case's
    own dict does not shadow them) and in each case's own dict (a class attribute put over a
    descriptor does not shadow that); moving the case to another class is refused; the table
    of type equality functions is read afresh. Before, the first way passed two of three
    tests. (Both ways at once still work: a class's attributes are not audited, which is why
    these verdicts stay marked in-process.)"""
    problems = {"bcb-inprocess": bcb_inprocess_problem()}
    cases = [ProgramCase(f"bcb-hand-{way}", "3", "bcb-inprocess",
                         armed_each_call(BCB_PARTLY, "task_func", REBIND_FAIL.replace("{how}", how)))
             for way, how in REBIND_WAYS.items()]
    cases.append(ProgramCase("bcb-reference-own-dict", "-", "bcb-inprocess",
                             armed_each_call(BCB_REFERENCE, "task_func",
                                             REBIND_FAIL.replace("{how}", REBIND_WAYS["own-dict"])),
                             ("pass",), control=True))
    messages = expect_no_forged_pass(adv_executor, "framework-tampering/rebound-assertions", cases, problems)
    assert all("test_2_big" in messages[case.name] for case in cases if not case.control), messages
