"""In-process judging of script tests: the observers of unittest and pytest, and the run of a
rewritten script whose reports the parent judges.

A script test that stays in-process (``judged="in-process"``) runs its framework in the
program's own process, the framework ``prepare`` imported in the zygote (``PREPARED``). The
harness runs each part of each test itself (``_ut_part``, ``_pt_part``: setUp, the test,
tearDown, cleanups; pytest's setup, call and teardown), checks that the test function is the
script's, and counts how each part ended on counters the program cannot turn back
(``itertools.count``). Before each script test and right after its framework returns, the
ground is settled (``harness.sandbox.settle``); ``ground.tampering`` says whether the
program changed the frameworks' ground during the test. A test passes when the counters,
the framework and the ground all say so.

A rewritten script (harness.verdicts.script_tests) runs under the same observers, but its
record carries the reports and how each test function ended, never a verdict: the parent
judges (harness.verdicts.script_reports).

Only the standard library and the sandbox's own modules are imported here: it runs in the
sandbox.
"""

from __future__ import annotations

import builtins
import itertools
import json
import marshal
import os
import sys
import time
import types

from codea1.harness.sandbox.ground import NOTHING_FOUND, Guarded, instance_dict, tampering
from codea1.harness.sandbox.protocol import write_all
from codea1.harness.sandbox.timing import TestTimeout, describe, timed, timeout_message
from codea1.harness.verdicts import script_reports, script_tests

PREPARED: dict = {}  # "unittest", "pytest": the module as prepare() imported it
# The harness' own reference, taken before any program ran: what script tests use is
# resolved from it, not from sys.modules, which the program can replace.
_REPORTER = script_reports.Reporter
# The events' string encoder and the channel's check, bound here (in the zygote) before any
# program ran (see _send_event).
_QUOTE, _FSTAT, _EXIT = json.encoder.encode_basestring_ascii, os.fstat, os._exit


def _safe_describe(exc: BaseException) -> str:
    """``describe`` without running the program's code (after ``_settle``: none may run until
    the record is sent): the exception's class name, and its message where it is a builtin
    exception's one string argument."""
    kind = type(exc)
    name = type.__dict__["__name__"].__get__(kind)
    args = BaseException.__dict__["args"].__get__(exc)
    if type.__dict__["__module__"].__get__(kind) == "builtins" and type(args) is tuple and len(args) == 1 \
            and type(args[0]) is str:
        return f"{name}: {args[0][:2000]}"
    return name


def _send_event(events: tuple, name: str, exc: BaseException, _type=type, _str=str) -> None:
    """A part of an in-process test ended in an exception: said to the parent at once, on the
    results channel, before control goes back to the framework or the program (what a program
    rewrites afterwards, the observer's counters or the framework's result, cannot unwrite a
    line the parent has). ``events`` (see ``_events``) is bound before the test ran; () where
    no channel is given (the warm-up). The line is made with C functions bound before any
    program ran (json's module, the program may patch). Where the channel is no longer the
    one the child was given (the program moved another file onto its descriptor, to drop the
    event and put the channel back after), or the event cannot be written, the process ends
    at once: the parent fails the test that was running."""
    if events:
        write, fd, i, quote, identity, fstat, end = events
        try:
            status = fstat(fd)
            if (status.st_dev, status.st_ino) != identity:
                end(75)
            text = _safe_describe(exc)[:500]
            write(fd, ('{"ev":%d,"f":%s,"e":%s}\n' % (i, quote(name if _type(name) is _str else "?"),
                                                        quote(text if _type(text) is _str else "?"))).encode())
        except BaseException:  # noqa: BLE001 - whatever stopped the event, the test does not pass
            end(75)


def _events(test: dict) -> tuple:
    """The event channel of an in-process script test (``test["events"]``: the results fd, the
    test's index and the channel's (device, inode), set by the child before the program
    loaded), with the functions that write it; () for a rewritten script, whose parent judges
    its reports, and where none is set. Read before the script or any code of the program's
    runs in the test."""
    where = test.get("events")
    if test.get("report") or type(where) is not tuple or len(where) != 3:
        return ()
    return (write_all, where[0], where[1], _QUOTE, where[2], _FSTAT, _EXIT)


def _error_record(error: BaseException, limit: float, took: float, status: str) -> dict:
    if type(error) is TestTimeout:
        return {"s": "timeout", "e": timeout_message(limit, error), "t": took}
    return {"s": status, "e": _safe_describe(error), "t": took}


def _count(counter) -> int:
    """An ``itertools.count`` started at 0: how many times it was advanced."""
    return int(repr(counter)[6:-1]) if type(counter) is itertools.count else -1


def _text(value) -> str:
    return value if type(value) is str else "?"


def _observed(settle, module, run, *args) -> tuple:
    """``run(*args)`` (a script's framework run); then, before anything else, the ground
    settled. Returns (run's value, the exception it raised, what settle found, seconds)."""
    catch, clock = BaseException, time.perf_counter  # bound before any of the program's code runs here
    start = clock()
    value = error = None
    try:
        value = run(*args)
    except catch as exc:
        error = exc
    after = settle(module, True) if settle is not None else NOTHING_FOUND
    return value, error, after, clock() - start


def script_test(test: dict, module: types.ModuleType, limit: float, settle, problem: str,
                builtin_values: dict) -> tuple[dict, object]:
    """A script test's record, and what to keep alive until it is sent; ``problem``: why it
    cannot run (the ground could not be put back); ``builtin_values``: the builtins as no
    program touched them (a rewritten script's report hooks use them)."""
    if problem:
        return {"s": "exception" if test.get("report") else "failed", "e": problem, "t": 0.0}, None
    if test.get("report"):
        return _run_reported(test, module, limit, settle, builtin_values)
    return _run_script(test, module, limit, settle)


def _run_script(test: dict, module: types.ModuleType, limit: float, settle) -> tuple[dict, object]:
    """A script judged in-process: (its record, what to keep alive until the record is sent)."""
    if test.get("framework") == "pytest":
        return run_pytest(test, limit, settle, module)
    return run_unittest(test, module, limit, settle)


# -- unittest (BigCodeBench) -----------------------------------------------------------------
# The observer's state, a tuple (read by index: a class's attributes are the program's to
# patch): 0 _ut_part, 1 test method names, 2 their functions, 3 counters of parts that raised,
# 4 counters of test methods that returned, 5 messages, 6 TestCase's own _callSetUp and
# _callTearDown (at 0 and 2), 7 BaseException, 8 next, 9 getattr, 10 describe, 11 AssertionError,
# 12 what each test case gets in its own dict (see _observe_unittest), 13 types.MethodType,
# 14 the event channel (see _send_event), 15 _send_event.

def _ut_set_up(self, _s=None):
    _s[0](_s, self, 0, None, (), None)


def _ut_test_method(self, method, _s=None):
    _s[0](_s, self, 1, method, (), None)


def _ut_tear_down(self, _s=None):
    _s[0](_s, self, 2, None, (), None)


def _ut_cleanup(self, function, *args, _s=None, **kwargs):
    _s[0](_s, self, 3, function, args, kwargs)


def _ut_part(s, case, part, fn, args, kwargs) -> None:
    """One part of one test (0 setUp, 1 the test method, 2 tearDown, 3 a cleanup), run and
    counted; the exception goes on to unittest, which records it as ever."""
    names = s[1]
    name = case._testMethodName
    i = names.index(name) if name in names else -1
    try:
        if part == 1:
            if i >= 0 and s[9](fn, "__func__", fn) is not s[2][i]:
                raise s[11]("the test method was replaced while the tests ran")
            fn()
        elif part == 3:
            fn(*args, **kwargs)
        else:
            if part == 0:  # unittest's own assertions, in the case's dict too (see _observe_unittest)
                own = case.__dict__
                for attribute, value, method in s[12]:
                    own[attribute] = s[13](value, case) if method else value
            s[6][part](case)
    except s[7] as exc:
        s[15](s[14], name if i >= 0 else "?", exc)
        if i >= 0:
            s[8](s[3][i])
            if name not in s[5]:
                s[5][name] = s[10](exc)
        raise
    if part == 1 and i >= 0:
        s[8](s[4][i])


def _class_attribute(cls: type, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            value = klass.__dict__[name]
            return getattr(value, "__func__", value)
    return None


# What TestCase.__init__ registers (unittest's own table): read afresh on each access.
_TYPE_EQUALITY = ((dict, "assertDictEqual"), (list, "assertListEqual"), (tuple, "assertTupleEqual"),
                  (set, "assertSetEqual"), (frozenset, "assertSetEqual"), (str, "assertMultiLineEqual"))
_ASSERTION_HELPERS = frozenset(("_formatMessage", "_getAssertEqualityFunc", "_baseAssertEqual", "_truncateMessage",
                                "failureException", "longMessage", "maxDiff"))


def _observe_unittest(cases: type, base: type, names: tuple, events: tuple = ()) -> tuple:
    """Puts the observer's part runners on the script's class (see _ut_part), and unittest's
    assertions (with the helpers and settings they look up on ``self``, and the table of type
    equality functions), as the ground has them, where the script's classes do not define
    their own, twice: on the class as ``ground.Guarded`` data descriptors, which a write to
    the case's own dict does not shadow (``self.fail`` rebound from inside the call passed
    before), and in each case's own dict, which a class attribute put over a descriptor does
    not shadow (``TestCases.fail = ...``; a class's attributes are not audited, so that cannot
    be refused). A program has to do both, or put a data descriptor of its own on the class.
    Settings (``maxDiff``, ``longMessage``) stay the case's to set; ``addTypeEqualityFunc``
    has no effect in-process (the table is unittest's own; no BigCodeBench test calls it)."""
    own = tuple((attribute, value, isinstance(value, types.FunctionType))
                for attribute, value in base.__dict__.items()
                if (attribute.startswith(("assert", "fail")) or attribute in _ASSERTION_HELPERS)
                and not isinstance(value, (staticmethod, classmethod))
                and _class_attribute(cases, attribute) is getattr(value, "__func__", value))
    for attribute, value, method in own:
        if method:
            type.__setattr__(cases, attribute, Guarded((value, 0)))
    type.__setattr__(cases, "_type_equality_funcs", Guarded((_TYPE_EQUALITY, 1)))
    state = (_ut_part, names, tuple(_class_attribute(cases, n) for n in names),
             tuple(itertools.count() for _ in names), tuple(itertools.count() for _ in names), {},
             (base._callSetUp, None, base._callTearDown), BaseException, next, getattr, describe, AssertionError,
             own, types.MethodType, events, _send_event)
    for attribute, template in (("_callSetUp", _ut_set_up), ("_callTestMethod", _ut_test_method),
                                ("_callTearDown", _ut_tear_down)):
        setattr(cases, attribute, types.FunctionType(template.__code__, template.__globals__, attribute, (state,)))
    cleanup = types.FunctionType(_ut_cleanup.__code__, _ut_cleanup.__globals__, "_callCleanup")
    cleanup.__kwdefaults__ = {"_s": state}
    cases._callCleanup = cleanup
    return state


def _unittest_run(test: dict, module: types.ModuleType, limit: float) -> tuple:
    """BigCodeBench style: the TestCases class, made in a copy of the solution's namespace
    (the names the script's imports bind are shared back: solutions use them, as bigcodebench
    runs both in one namespace; the script's own functions and data stay out of the program's
    reach), run by the unittest prepare() imported, each part observed. Returns (result,
    observer state, {id(case): test method name})."""
    events = _events(test)  # first: before the script's code (and through it the program's) runs
    unittest = PREPARED["unittest"]
    imports, functions = script_tests.script_names(test["script"], "unittest")
    namespace = dict(module.__dict__)
    namespace["__builtins__"] = builtins.__dict__
    exec(compile(test["script"], "test_solution.py", "exec"), namespace)
    sys.modules.pop(script_reports.HOOK_MODULE, None)  # a rewritten script's report hooks: bound, out of sight
    for name in imports:
        if name in namespace:
            module.__dict__[name] = namespace[name]
    cases = namespace.get("TestCases")
    if not isinstance(cases, type) or not issubclass(cases, unittest.TestCase):
        raise NameError("the test script defines no TestCases class")
    names = tuple(q.split(".", 1)[1] for q in functions if q.startswith("TestCases."))
    state = _observe_unittest(cases, unittest.TestCase, names, events)
    suite = unittest.TestLoader().loadTestsFromTestCase(cases)
    loaded = {id(case): case._testMethodName for case in suite}
    result = unittest.TestResult()
    timed(limit, suite.run, result)
    return result, state, loaded


def _unittest_outcomes(run: tuple) -> tuple[dict, dict, str]:
    """({test method: "returned" | why not}, {test method: traceback}, problem) from the
    observer's counters and unittest's result together, read as data."""
    result, state, loaded = run
    names, failed, returned, messages = state[1], state[3], state[4], state[5]
    fields = instance_dict(result) or {}
    lists = {f: fields.get(f) for f in ("failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")}
    if any(type(v) is not list for v in lists.values()) or type(fields.get("testsRun")) is not int:
        return {}, {}, "the test result was replaced"
    outcomes = {name: "returned" for name in loaded.values()}
    traces = {}
    for field in ("failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses"):
        for entry in lists[field]:
            case, text = (entry[0], _text(entry[1])) if type(entry) is tuple and len(entry) == 2 else (entry, "")
            name = loaded.get(id(case), "?")
            why = {"skipped": "skipped: " + text[:500], "expectedFailures": "expected failure",
                   "unexpectedSuccesses": "unexpected success"}.get(field)
            if why is None:
                why = text.strip().splitlines()[-1][:1500] if text.strip() else "error"
                traces.setdefault(name, text[-2000:])
            if outcomes.get(name) in (None, "returned"):
                outcomes[name] = why
    for name, raised, ended in zip(names, failed, returned):
        if (_count(raised) or _count(ended) < 1) and outcomes.get(name, "returned") == "returned":
            outcomes[name] = _text(messages.get(name)) if name in messages else "did not run"
    problem = "" if fields["testsRun"] == len(loaded) else f"{fields['testsRun']} of {len(loaded)} tests ran"
    return outcomes, traces, problem


def run_unittest(test: dict, module: types.ModuleType, limit: float, settle) -> tuple[dict, object]:
    run, error, after, took = _observed(settle, module, _unittest_run, test, module, limit)
    tampered = tampering(after)
    if tampered:
        return {"s": "failed", "e": tampered, "t": took}, (run, error)
    if error is not None:
        return _error_record(error, limit, took, "failed"), (run, error)
    outcomes, traces, problem = _unittest_outcomes(run)
    bad = {name: why for name, why in outcomes.items() if why != "returned"}
    ok = bool(outcomes) and not bad and not problem
    if ok:
        return {"s": "passed", "e": "", "d": {}, "t": took}, (run, error)
    details = {name: traces.get(name, why) for name, why in bad.items()}
    message = problem or (f"{len(bad)} of {len(outcomes)} failed" if outcomes else "no test ran")
    if bad:
        first = next(iter(bad.items()))
        message += f"; {first[0]}: {first[1]}"
    return {"s": "failed", "e": message, "d": details, "t": took}, (run, error)


# -- pytest (KodCode) -------------------------------------------------------------------------
# The observer's state, a tuple: 0 _pt_collected, 1 _pt_index, 2 test function names, 3
# _pt_part, 4 _pt_check, 5 BaseException, 6 counters of parts that raised, 7 counters of calls
# that returned, 8 counters of items collected, 9 the functions (a list, filled at the end of
# collection), 10 messages, 11 next, 12 describe, 13 script_tests.pytest_function_name,
# 14 sys.modules, 15 getattr, 16 AssertionError, 17 the report hooks' module name, 18 the event
# channel (see _send_event), 19 _send_event.

def _pt_collection_finish(session, _s=None):
    _s[0](_s, session)


def _pt_setup(item, _s=None):
    return (yield from _s[3](_s, item, False))


def _pt_call(item, _s=None):
    return (yield from _s[3](_s, item, True))


def _pt_teardown(item, nextitem, _s=None):
    return (yield from _s[3](_s, item, False))


def _pt_pyfunc_call(pyfuncitem, _s=None):
    _s[4](_s, pyfuncitem)
    return (yield)


def _pt_index(s, item) -> int:
    name = s[13](item.nodeid)
    return s[2].index(name) if name in s[2] else -1


def _pt_collected(s, session) -> None:
    """At the end of collection: how many items each test function has and which function it
    is; the test module and the report hooks then leave sys.modules (out of the program's
    sight: it reaches them only through the run)."""
    items = list(session.items)
    for item in items:
        i = s[1](s, item)
        if i < 0:
            continue
        s[11](s[8][i])
        owner = s[15](item, "cls", None) or s[15](item, "module", None)
        namespace = s[15](owner, "__dict__", {})
        name = s[15](item, "originalname", None)
        if s[9][i] is None and name in namespace:
            s[9][i] = s[15](namespace[name], "__func__", namespace[name])
    module = s[15](items[0], "module", None) if items else None
    if module is not None and s[14].get(module.__name__) is module:
        del s[14][module.__name__]
    s[14].pop(s[17], None)


def _pt_check(s, pyfuncitem) -> None:
    i = s[1](s, pyfuncitem)
    if i >= 0 and s[9][i] is not None:
        obj = pyfuncitem.obj
        if s[15](obj, "__func__", obj) is not s[9][i]:
            raise s[16]("the test function was replaced while the tests ran")


def _pt_part(s, item, call: bool):
    """One of pytest's phases of one item, counted (a generator: the body of a wrapper hook)."""
    i = s[1](s, item)
    try:
        result = yield
    except s[5] as exc:
        s[19](s[18], s[2][i] if i >= 0 else "?", exc)
        if i >= 0:
            s[11](s[6][i])
            if s[2][i] not in s[10]:
                s[10][s[2][i]] = s[12](exc)
        raise
    if call and i >= 0:
        s[11](s[7][i])
    return result


class _PytestCollector:
    """pytest's own word: {node id: "passed" | "outcome: its report"}."""

    def __init__(self, outcomes: dict):
        self.outcomes = outcomes

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            if report.outcome == "passed":
                self.outcomes.setdefault(report.nodeid, "passed")
            else:
                self.outcomes[report.nodeid] = f"{report.outcome}: {str(report.longrepr)[-1500:]}"


def _observe_pytest(pytest, names: tuple, events: tuple = ()) -> tuple:
    """A plugin (a module of wrapper hooks) observing each item's phases (see _pt_part)."""
    state = (_pt_collected, _pt_index, names, _pt_part, _pt_check, BaseException,
             tuple(itertools.count() for _ in names), tuple(itertools.count() for _ in names),
             tuple(itertools.count() for _ in names), [None] * len(names), {}, next, describe,
             script_tests.pytest_function_name, sys.modules, getattr, AssertionError, script_reports.HOOK_MODULE,
             events, _send_event)
    observer = types.ModuleType("_codea1_observer")
    wrapper = pytest.hookimpl(wrapper=True)
    for hook, template in (("pytest_runtest_setup", _pt_setup), ("pytest_runtest_call", _pt_call),
                           ("pytest_runtest_teardown", _pt_teardown), ("pytest_pyfunc_call", _pt_pyfunc_call)):
        setattr(observer, hook, wrapper(types.FunctionType(template.__code__, template.__globals__, hook, (state,))))
    observer.pytest_collection_finish = types.FunctionType(
        _pt_collection_finish.__code__, _pt_collection_finish.__globals__, "pytest_collection_finish", (state,))
    return observer, state


def _pytest_run(test: dict, limit: float) -> tuple:
    """KodCode style: a pytest module that does `from solution import ...`, run by the pytest
    prepare() imported, each item's phases observed. Returns (pytest's outcomes, observer state)."""
    events = _events(test)  # first: before the script's code (and through it the program's) runs
    pytest = PREPARED.get("pytest") or __import__("pytest")  # not prepared: imported here, after the ground
    _imports, functions = script_tests.script_names(test["script"], "pytest")
    observer, state = _observe_pytest(pytest, tuple(functions), events)
    outcomes: dict[str, str] = {}
    timed(limit, pytest.main, _pytest_arguments(test["script"]), [observer, _PytestCollector(outcomes)])
    return outcomes, state


def _pytest_functions(run: tuple) -> dict:
    """{test function: "returned" | why not}, from pytest's outcomes and the observer's
    counters together."""
    outcomes, state = run
    names, raised, ended, collected, messages = state[2], state[6], state[7], state[8], state[10]
    functions: dict[str, str] = {}
    for nodeid, outcome in outcomes.items():
        name = script_tests.pytest_function_name(nodeid)
        if outcome == "passed":
            functions.setdefault(name, "returned")
        else:
            functions[name] = outcome
    for i, name in enumerate(names):
        items = _count(collected[i])
        if (_count(raised[i]) or items < 1 or _count(ended[i]) != items) \
                and functions.get(name, "returned") == "returned":
            functions[name] = _text(messages[name]) if name in messages else (
                "did not run" if items < 1 else "did not return")
    return functions


def run_pytest(test: dict, limit: float, settle, module: types.ModuleType) -> tuple[dict, object]:
    run, error, after, took = _observed(settle, module, _pytest_run, test, limit)
    tampered = tampering(after)
    if tampered:
        return {"s": "failed", "e": tampered, "d": {}, "t": took}, (run, error)
    if error is not None:
        return _error_record(error, limit, took, "failed"), (run, error)
    outcomes = {nodeid.split("::", 1)[-1]: text for nodeid, text in run[0].items()}
    bad = {name: text for name, text in outcomes.items() if text != "passed"}
    reported = {script_tests.pytest_function_name(nodeid) for nodeid, text in run[0].items() if text != "passed"}
    for name, why in _pytest_functions(run).items():  # what the observer saw that pytest's reports do not say
        if why != "returned" and name not in reported:
            bad[name] = why
    ok = bool(outcomes) and not bad
    if ok:
        return {"s": "passed", "e": "", "d": outcomes, "t": took}, (run, error)
    message = f"{len(bad)} of {max(len(outcomes), len(bad))} failed" if outcomes else "no test ran"
    if bad:
        name, text = next(iter(bad.items()))
        message += f"; {name}: {text.strip().splitlines()[-1] if text.strip() else ''}"
    return {"s": "failed", "e": message, "d": {**outcomes, **bad}, "t": took}, (run, error)


def _pytest_arguments(script: str) -> list[str]:
    """Writes the test module under a name the program cannot have guessed (no stale or
    forged ``__pycache__`` entry can match it), after the program's threads were checked
    for, and returns pytest's arguments: no conftest.py, no ini file (``-c /dev/null``: not
    the working directory's pytest.ini, tox.ini, setup.cfg or pyproject.toml), no addopts,
    and nothing above the job's directory looked at (``--confcutdir``: the sandbox may not
    read there). ``--import-mode=importlib``: the job's directory is not put on sys.path, so
    that a module the program wrote there (``numpy.py``) is not what the test imports."""
    name = f"test_solution_{os.urandom(8).hex()}.py"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        write_all(fd, script.encode())
    finally:
        os.close(fd)
    return ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--noconftest",
            "-c", os.devnull, "--rootdir", os.getcwd(), "--confcutdir", os.getcwd(), "-o", "addopts=",
            "--import-mode=importlib", name]


# -- rewritten scripts, judged in the parent ---------------------------------------------------

def _run_reported(test: dict, module: types.ModuleType, limit: float, settle,
                  builtin_values: dict) -> tuple[dict, object]:
    """A rewritten script (harness.verdicts.script_tests): its report calls go to a Reporter made
    here, from the harness' own reference; the record carries the reports and how each test
    function ended (the observer's counters and the framework's result together), never a
    verdict (the parent judges)."""
    reporter = _REPORTER(TestTimeout, builtin_values)
    reports = reporter.reports
    sys.modules[script_reports.HOOK_MODULE] = reporter.module
    pytest_style = test.get("framework") == "pytest"
    if pytest_style:
        run, error, after, took = _observed(settle, module, _pytest_run, test, limit)
    else:
        run, error, after, took = _observed(settle, module, _unittest_run, test, module, limit)
    sys.modules.pop(script_reports.HOOK_MODULE, None)
    keep = (run, error, reporter)
    tampered = tampering(after)
    if tampered:
        return {"s": "exception", "e": tampered, "t": took}, keep
    if error is not None:
        return _error_record(error, limit, took, "exception"), keep
    try:
        marshal.dumps(reports)  # plain data only, as the Reporter made it (marshal runs no code of anyone's)
    except ValueError:
        return {"s": "exception", "e": "the reports were tampered with", "t": took}, keep
    if pytest_style:
        functions = _pytest_functions(run)
    else:
        outcomes, _traces, problem = _unittest_outcomes(run)
        if problem:
            return {"s": "exception", "e": problem, "t": took}, keep
        functions = {f"TestCases.{name}": why for name, why in outcomes.items()}
    return {"s": "reports", "f": functions, "r": reports, "e": "too many reports" if reporter.overflow else "",
            "t": took}, keep
