"""Runs inside the forked, confined child: loads the program under test and runs its tests.

Protocol (one JSON object per line on the result pipe, nothing else):

    {"load": "ok"} | {"load": "error", "e": msg}    phase 1: the program was loaded
    {"i": i, "s": "ok", "v": tree, "t": secs}       phase 2: outcome of test i, in order
                                                    (a large value: "h": its digest, with
                                                    or without "v"; see encode_for_channel)
    {"i": i, "s": "exception"|"timeout", "e": msg, "t": secs}
    {"i": i, "s": "passed"|"failed", "e": msg, "d": {...}, "t": secs}   (script tests judged in-process)
    {"i": i, "s": "reports", "f": {function: "returned"|msg}, "r": [report, ...], "e": msg, "t": secs}
                                                    (rewritten script tests, judged in the parent:
                                                    see harness.script_tests)
    {"done": true}

No expected value, nor an expression that computes one, is in the job: the parent holds
them (expected sides written as expressions were computed beforehand, in a job of their
own whose program is the problem's prelude: harness.expected), so the program cannot read
or steer them. Values leave as plain data (harness.plaindata); the parent compares them. The
program may write to this pipe too: nothing on it is a verdict. A forged value is one the
program could have returned, a forged exception or timeout a failure it owns; a duplicate,
a gap or a blank line is tampering (a failed verdict); passed/failed is taken only for tests
documented as judged in-process. The per-test alarms here are for precise timeouts; the
zygote keeps its own per-test clock, which a program that cancels its alarms cannot stop.

Only the standard library, harness.plaindata and harness.script_tests are imported here.
"""

from __future__ import annotations

import _thread
import builtins
import hashlib
import io
import json
import os
import pickle
import random
import signal
import sys
import time
import types

from codea1.harness import plaindata, script_tests

LARGE_OUTPUT_BYTES = 65536
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps(..., separators=...) builds one per call
_JSON_STR = json.encoder.encode_basestring_ascii


_PICKLED = io.BytesIO()
_PICKLER = pickle.Pickler(_PICKLED, protocol=5)
_PICKLER.fast = True  # no memo: the bytes depend on the value only, not on which objects are shared


def canonical_bytes(tree) -> bytes:
    """A plain-data tree (builtins only: no code of the program runs) as pickle bytes, a
    function of its value: equal bytes mean equal trees, types included. Much faster to
    make than JSON text for large containers (CPython writes a float's JSON through its
    repr: HumanEval/130's 100 MB of float lists took 2 s a sample)."""
    _PICKLED.seek(0)
    _PICKLED.truncate()
    _PICKLER.dump(tree)
    return _PICKLED.getvalue()


def encode_for_channel(value, large_output: str) -> tuple[str | None, str | None]:
    """(JSON text, digest) of a test's value as its record carries them. With
    ``large_output`` "digest" or "both", a value larger than LARGE_OUTPUT_BYTES gets a
    digest: the SHA-256 of ``canonical_bytes`` of its tree for a container, of its JSON
    text otherwise (the reference's run digests its outputs the same way); with "digest"
    such a value travels as its digest alone (text None). Raises
    ``plaindata.PlainDataError`` as to_tree does."""
    fast = _fast_text(value)
    if fast is None:
        tree = plaindata.to_tree(value)
        if large_output != "value" and type(tree) in (list, dict):
            blob = canonical_bytes(tree)
            if len(blob) > LARGE_OUTPUT_BYTES:
                return (_ENCODER.encode(tree) if large_output == "both" else None), hashlib.sha256(blob).hexdigest()
            return _ENCODER.encode(tree), None
        fast = _ENCODER.encode(tree)
    if large_output != "value" and len(fast) > LARGE_OUTPUT_BYTES:
        return (fast if large_output == "both" else None), hashlib.sha256(fast.encode()).hexdigest()
    return fast, None


def _fast_text(value) -> str | None:
    """JSON text of the common scalars, written directly (None for anything else)."""
    t = type(value)
    if t is int and value.bit_length() <= 256:
        return int.__repr__(value)
    if t is str:
        return _JSON_STR(value)
    if t is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if t is float and value - value == 0.0:  # finite: NaN and infinities take json's spelling
        return float.__repr__(value)
    return None


def decode_tests(tests: list) -> list:
    """A job's tests as a child runs them, from their JSON form (execution.encoded_tests):
    each call test's ``args`` (``kwargs``, ``wrap``) tree decoded once into its value,
    ``args_value`` (``kwargs_value``, ``wrap_value``; the tree is dropped). In place; returns
    ``tests``. The zygote does it once per problem; the parent does it to cache the result
    as marshal bytes, which the zygote then loads instead."""
    for test in tests:
        if test.get("args") is not None:
            test["args_value"] = plaindata.from_tree(test.pop("args"))
        for field in ("kwargs", "wrap"):
            if field in test:
                test[field + "_value"] = plaindata.from_tree(test.pop(field))
    return tests


class _TestTimeout(BaseException):
    """BaseException, so that `except Exception:` in the program cannot swallow it."""


_armed = False  # True while a timed call runs: an alarm outside one is a spent timer, ignored


def _on_alarm(signum, frame):
    if _armed:
        raise _TestTimeout()


_PRISTINE_BUILTINS: dict | None = None
_PRISTINE_IMPORT: tuple | None = None  # sys.meta_path, path_hooks, path_importer_cache, path
# The harness' own references, taken before any program ran: what script tests use is
# resolved from these, not from sys.modules or builtins, which the program can replace.
_CURRENT_FRAMES, _THREAD_COUNT, _REPORTER = sys._current_frames, _thread._count, script_tests.Reporter


def prepare() -> None:
    """Made once in the zygote, before any child: the builtins and the import system as no
    program has touched them, and the alarm handler. A child that made them itself wrote to
    the page of every builtin object (the copy's references), and the kernel copies each
    page a child writes: a one-test child's CPU went from 2.2 to 1.9 ms."""
    global _PRISTINE_BUILTINS, _PRISTINE_IMPORT
    _PRISTINE_BUILTINS = dict(builtins.__dict__)
    _PRISTINE_IMPORT = (list(sys.meta_path), list(sys.path_hooks), dict(sys.path_importer_cache), list(sys.path))
    signal.signal(signal.SIGALRM, _on_alarm)


def _write_all(fd: int, data: bytes) -> None:
    written = _WRITE(fd, data)
    if written < len(data):  # a short write: a pipe nearly full
        view = memoryview(data)[written:]
        while view:
            view = view[_WRITE(fd, view):]


class _Channel:
    """Writes each record at once, so a process killed mid-test has reported every test
    before it (a crash is pinned on the right test)."""

    def __init__(self, fd: int):
        self.fd = fd

    def _write(self, line: str) -> None:
        _write_all(self.fd, line.encode())

    def send(self, record: dict) -> None:
        self._write(_ENCODER.encode(record) + "\n")

    def send_ok(self, i: int, text: str | None, digest: str | None, took: float) -> None:
        """A test's value as ``encode_for_channel`` made it. A large one may travel as its
        digest alone: the digest says nothing about the expected value, so it cannot be
        forged (the child never sees the expected value or its digest)."""
        if digest is None:
            line = f'{{"i":{i},"s":"ok","t":{took!r},"v":{text}}}\n'
        else:
            line = f'{{"i":{i},"s":"ok","t":{took!r},"h":"{digest}"' + ("}\n" if text is None else f',"v":{text}}}\n')
        self._write(line)


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 2000 else text[:2000] + "..."


def _timed(limit: float, fn, *args):
    """Run fn under a wall-clock alarm; returns (value, seconds). The timer is not disarmed
    afterwards (one system call a test less: HumanEval+ runs 1,000 tests a sample): should
    it fire after fn returned, ``_on_alarm`` ignores it, and the next call arms it anew."""
    global _armed
    _SETITIMER(_ITIMER_REAL, limit if limit > 0.001 else 0.001)
    _armed = True
    start = _CLOCK()
    try:
        return fn(*args), _CLOCK() - start
    finally:
        _armed = False


_SETITIMER, _ITIMER_REAL, _CLOCK, _WRITE = signal.setitimer, signal.ITIMER_REAL, time.perf_counter, os.write


def _guarded_wrapper(fn):
    """Calls made by test expressions get plain data back, or a ``plaindata.Guarded`` proxy
    for values that are not plain data: the test can iterate, index or measure the value
    (``list(f(x))``, ``f(x)[0]``, ``len(f(x))``, ``f(x).name``), but operator overloading in
    the program's values cannot steer comparisons written around the call."""

    def wrapper(*args, **kwargs):
        args = [plaindata.unguard(a) for a in args]
        kwargs = {k: plaindata.unguard(v) for k, v in kwargs.items()}
        return plaindata.guard(fn(*args, **kwargs))

    wrapper.__name__ = getattr(fn, "__name__", "wrapped")
    return wrapper


def _evaluate_call(call: str, namespace: dict, items: bool):
    """The value of a test's call expression. For a membership test (``x in f(...)``) a
    container that is not plain data is replaced by the list of its items, so the harness
    decides membership on plain data, as Python would by iterating."""
    value = eval(call, namespace)
    if items and type(value) is plaindata.Guarded:
        value = list(value)
    return value


# Builtins a test's wrapper may apply to the call's result (harness.asserts.WRAP_CALLS).
_WRAP_CALLS = frozenset(("list", "tuple", "set", "frozenset", "dict", "sorted", "next", "iter", "len", "str", "repr",
                         "int", "float", "bool", "abs", "round", "sum", "min", "max", "reversed", "enumerate", "any",
                         "all"))


_INTROSPECTION = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, types.CodeType,
                  types.FrameType, types.TracebackType)
_GENERATORS = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def _member(value, name: str):
    """An attribute a test's wrapper reads: not one that inspects code (a generator's frame,
    a function's globals), which would make a test about the program's text."""
    if name.startswith("__") or isinstance(value, _INTROSPECTION) \
            or (isinstance(value, _GENERATORS) and name not in ("send", "throw", "close")):
        raise AttributeError(f"a test may not read {name!r} of a {type(value).__name__}")
    return getattr(value, name)


def _call_entry(entry, args, kwargs, wrap):
    """The entry point's result with the test's wrapper steps applied to the real object
    (data sent by the parent, never source text), so a Counter, a namedtuple or a generator
    behaves as in plain Python; the builtins are the ones no program has touched."""
    value = entry(*args, **kwargs)
    for step in wrap:
        kind = step[0]
        if kind == "call" and step[1] in _WRAP_CALLS:
            value = _PRISTINE_BUILTINS[step[1]](value, *step[2], **step[3])
        elif kind == "attr":
            value = _member(value, step[1])
        elif kind == "item":
            value = value[step[1]]
        elif kind == "slice":
            value = value[step[1]:step[2]:step[3]]
        elif kind == "method":
            value = _member(value, step[1])(*step[2], **step[3])
        elif kind == "apply":
            value = value(*step[1], **step[2])
        else:
            raise ValueError(f"unknown wrapper step {step[:2]!r}")
    return value


def run(job: dict, channel_fd: int) -> None:
    channel = _Channel(channel_fd)
    try:
        _run(job, channel)
    finally:
        for stream in (sys.stdout, sys.stderr):  # the process ends with os._exit: no implicit flush
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the program may have replaced or closed them
                pass


def _run(job: dict, channel: _Channel) -> None:
    if _PRISTINE_BUILTINS is None:
        prepare()
    # Every program starts from the job's random state (0 unless validation asks for another
    # to find tests that depend on it): verdicts repeat from run to run and zygote to zygote.
    random.seed(job.get("random_seed", 0))
    tests = job["tests"]
    limits = job["time_limits"]
    large_output = job.get("large_output", "value")
    entry_point = job.get("entry_point")
    prelude = job.get("prelude") or ""
    pristine_builtins = _PRISTINE_BUILTINS

    # Phase 1: load the program as module `solution` (KodCode's tests import from it).
    # Written with os calls, not open(): every object the child touches costs a page copy
    # (its pages are the zygote's until written), and a text file object touches dozens.
    module = types.ModuleType("solution")
    module.__file__ = os.getcwd() + "/solution.py"  # the zygote made the directory: absolute, normalized
    fd = os.open("solution.py", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, job["code"].encode())
    finally:
        os.close(fd)
    sys.modules["solution"] = module
    try:
        code_obj = compile(job["code"], module.__file__, "exec")
        _timed(min(job.get("batch_timeout", 60.0), 60.0), exec, code_obj, module.__dict__)
    except _TestTimeout:
        channel.send({"load": "error", "e": "timed out while loading the program"})
        return
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the program ends here
        channel.send({"load": "error", "e": _describe(exc)})
        return
    channel._write('{"load":"ok"}\n')

    namespace = dict(module.__dict__)
    namespace["__builtins__"] = pristine_builtins
    for name, value in module.__dict__.items():
        if isinstance(value, types.FunctionType):
            namespace[name] = _guarded_wrapper(value)
    if prelude:
        try:
            exec(prelude, namespace)
        except BaseException:  # noqa: BLE001 - the tests that need it will fail and say why
            pass
    entry = module.__dict__.get(entry_point) if entry_point else None

    # Phase 2: the tests, in order.
    for i, test in enumerate(tests):
        start = time.perf_counter()
        try:
            if test["kind"] == "script":
                _restore_builtins(pristine_builtins)
                left = _restore_interpreter(module)
                if left:
                    record = {"s": "exception" if test.get("report") else "failed", "e": left, "t": 0.0}
                elif test.get("report"):
                    record = _run_reported(test, module, limits[i])
                else:
                    record = _run_script(test, module, limits[i])
                record["i"] = i
                channel.send(record)
                continue
            if "args_value" in test or test.get("args") is not None:
                if not callable(entry):
                    raise NameError(f"entry point {entry_point!r} is not defined")
                # The zygote decodes args once per problem (decode_tests); this process is a
                # fork, so what the program does to them stays here.
                args = test["args_value"] if "args_value" in test else plaindata.from_tree(test["args"])
                if "kwargs_value" in test or "wrap_value" in test or "kwargs" in test or "wrap" in test:
                    kwargs = test.get("kwargs_value") or plaindata.from_tree(test.get("kwargs", {"d": []}))
                    wrap = test.get("wrap_value") or plaindata.from_tree(test.get("wrap", []))
                    value, took = _timed(limits[i], _call_entry, entry, args, kwargs, wrap)
                else:
                    value, took = _timed(limits[i], entry, *args)
            else:
                value, took = _timed(limits[i], _evaluate_call, test["call"], namespace, test.get("items", False))
            try:
                text, digest = encode_for_channel(value, large_output)
            except plaindata.PlainDataError as exc:
                channel.send({"i": i, "s": "exception", "e": f"output is not plain data: {exc}", "t": took})
                continue
            channel.send_ok(i, text, digest, took)
        except _TestTimeout:
            channel.send({"i": i, "s": "timeout", "e": f"exceeded {limits[i]:.3g}s", "t": time.perf_counter() - start})
            if job.get("fail_fast", True) or job.get("stop_on_timeout", False):
                break
        except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt are failures too
            channel.send({"i": i, "s": "exception", "e": _describe(exc), "t": time.perf_counter() - start})
            if job.get("fail_fast", True):
                break
    channel.send({"done": True})


_FRAMEWORK_PACKAGES = {"unittest": ("unittest",), "pytest": ("pytest", "_pytest", "pluggy", "iniconfig")}


def _restore_builtins(pristine: dict) -> None:
    """Undo what the program did to the builtins module (e.g. ``builtins.len = ...``)."""
    current = builtins.__dict__
    for name in [k for k in current if k not in pristine]:
        del current[name]
    current.update(pristine)


def _restore_interpreter(module: types.ModuleType) -> str:
    """Undo what the program can have done to the interpreter beyond the builtins module,
    before a script test runs (the builtins module itself: ``_restore_builtins``): every
    module's own ``__builtins__`` (a dict with its own ``__import__`` or ``__build_class__``),
    the import system (``sys.meta_path`` hooks, path hooks and their cache, ``sys.path``),
    and pytest's environment variables. Returns why the test cannot run, or "": threads the
    program left running could change the test or the runner while it runs. (Native threads
    that run no Python, such as OpenBLAS' pool, are not counted: they cannot.)"""
    pristine = builtins.__dict__
    for mod in list(sys.modules.values()):
        try:
            namespace = object.__getattribute__(mod, "__dict__")
            if type(namespace) is dict and "__builtins__" in namespace and namespace["__builtins__"] is not pristine \
                    and namespace["__builtins__"] is not builtins:
                namespace["__builtins__"] = pristine
        except Exception:  # noqa: BLE001 - an object the program put in sys.modules: nothing to restore
            pass
    module.__dict__["__builtins__"] = pristine
    if _PRISTINE_IMPORT is not None:
        meta_path, path_hooks, importer_cache, path = _PRISTINE_IMPORT
        sys.meta_path, sys.path_hooks = list(meta_path), list(path_hooks)
        sys.path_importer_cache, sys.path = dict(importer_cache), list(path)
    for name in [k for k in os.environ if k.startswith("PYTEST_")]:
        del os.environ[name]
    if _THREAD_COUNT() > 0 or len(_CURRENT_FRAMES()) > 1:
        return "the program left threads running"
    return ""


def _fresh_framework(framework: str):
    """A new copy of the test framework, imported after the program loaded, replaces the one
    in sys.modules: patches the program made to the copy it could reach (``TestCase.
    assertEqual = ...``, ``_pytest`` internals) do not apply to the copy that runs the tests.
    (Code that walks the caller's frames during a test can still reach the runner: no
    in-process runner is tamper-proof. Call tests, judged outside, do not have that gap.)"""
    family = _FRAMEWORK_PACKAGES[framework]
    for name in [k for k in sys.modules if k.split(".")[0] in family]:
        del sys.modules[name]
    __import__(framework)
    return sys.modules[framework]


def _run_script(test: dict, module: types.ModuleType, limit: float) -> dict:
    if test.get("framework") == "pytest":
        return _run_pytest(test, limit)
    return _run_unittest(test, module, limit)


def _run_unittest(test: dict, module: types.ModuleType, limit: float) -> dict:
    """BigCodeBench style: the TestCases class is executed in the solution's own namespace."""
    start = time.perf_counter()
    unittest = _fresh_framework("unittest")
    try:
        exec(compile(test["script"], "test_solution.py", "exec"), module.__dict__)
        cases = module.__dict__.get("TestCases")
        if cases is None:
            raise NameError("the test script defines no TestCases class")
        suite = unittest.TestLoader().loadTestsFromTestCase(cases)
        result = unittest.TestResult()
        _timed(limit, suite.run, result)
    except _TestTimeout:
        return {"s": "timeout", "e": f"exceeded {limit:.3g}s", "t": time.perf_counter() - start}
    except BaseException as exc:  # noqa: BLE001
        return {"s": "failed", "e": _describe(exc), "t": time.perf_counter() - start}
    details = {}
    for case, trace in result.failures + result.errors:
        details[case.id().rsplit(".", 1)[-1]] = trace[-2000:]
    for case, reason in result.skipped:
        details[case.id().rsplit(".", 1)[-1]] = "skipped: " + str(reason)
    failed = len(result.failures) + len(result.errors)
    ok = failed == 0 and result.testsRun > 0
    message = "" if ok else (f"{failed} of {result.testsRun} failed" if result.testsRun else "no test ran")
    if details and not ok:
        first = next(iter(details.items()))
        message += f"; {first[0]}: {first[1].strip().splitlines()[-1] if first[1].strip() else ''}"
    return {"s": "passed" if ok else "failed", "e": message, "d": details, "t": time.perf_counter() - start}


def _run_pytest(test: dict, limit: float) -> dict:
    """KodCode style: a pytest module that does `from solution import ...`."""
    start = time.perf_counter()
    outcomes: dict[str, str] = {}

    class Collector:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                name = report.nodeid.split("::", 1)[-1]
                if report.outcome == "passed":
                    outcomes.setdefault(name, "passed")
                else:
                    outcomes[name] = f"{report.outcome}: {str(report.longrepr)[-1500:]}"

    try:
        pytest = _fresh_framework("pytest")
        _timed(limit, pytest.main, _pytest_arguments(test["script"]), [Collector()])
    except _TestTimeout:
        return {"s": "timeout", "e": f"exceeded {limit:.3g}s", "d": outcomes, "t": time.perf_counter() - start}
    except BaseException as exc:  # noqa: BLE001
        return {"s": "failed", "e": _describe(exc), "d": outcomes, "t": time.perf_counter() - start}
    failed = {k: v for k, v in outcomes.items() if v != "passed"}
    ok = bool(outcomes) and not failed
    message = "" if ok else (f"{len(failed)} of {len(outcomes)} failed" if outcomes else "no test ran")
    if failed:
        name, text = next(iter(failed.items()))
        message += f"; {name}: {text.strip().splitlines()[-1] if text.strip() else ''}"
    return {"s": "passed" if ok else "failed", "e": message, "d": outcomes, "t": time.perf_counter() - start}


def _pytest_arguments(script: str) -> list[str]:
    """Writes the test module under a name the program cannot have guessed (no stale or
    forged ``__pycache__`` entry can match it), after the program's threads were checked
    for, and returns pytest's arguments: no conftest.py, no ini file (``-c /dev/null``: not
    the working directory's pytest.ini, tox.ini, setup.cfg or pyproject.toml), no addopts,
    and nothing above the job's directory looked at (``--confcutdir``: the sandbox may not
    read there)."""
    name = f"test_solution_{os.urandom(8).hex()}.py"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        _write_all(fd, script.encode())
    finally:
        os.close(fd)
    return ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--noconftest",
            "-c", os.devnull, "--rootdir", os.getcwd(), "--confcutdir", os.getcwd(), "-o", "addopts=", name]


def _run_reported(test: dict, module: types.ModuleType, limit: float) -> dict:
    """A rewritten script (harness.script_tests): its report calls go to a Reporter made
    here, from the harness' own reference; the record carries the reports and how each test
    function ended, never a verdict (the parent judges)."""
    start = time.perf_counter()
    reporter = _REPORTER(_TestTimeout, _PRISTINE_BUILTINS)
    functions: dict[str, str] = {}
    sys.modules[script_tests.HOOK_MODULE] = reporter.module
    try:
        if test.get("framework") == "pytest":
            _report_pytest(test, limit, functions)
        else:
            _report_unittest(test, module, limit, functions)
    except _TestTimeout:
        return {"s": "timeout", "e": f"exceeded {limit:.3g}s", "t": time.perf_counter() - start}
    except BaseException as exc:  # noqa: BLE001
        return {"s": "exception", "e": _describe(exc), "t": time.perf_counter() - start}
    finally:
        sys.modules.pop(script_tests.HOOK_MODULE, None)
    return {"s": "reports", "f": functions, "r": reporter.reports,
            "e": "too many reports" if reporter.overflow else "", "t": time.perf_counter() - start}


def _report_pytest(test: dict, limit: float, functions: dict[str, str]) -> None:
    class Collector:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or report.outcome != "passed":
                name = script_tests.pytest_function_name(report.nodeid)
                if report.outcome == "passed":
                    functions.setdefault(name, "returned")
                else:
                    functions[name] = f"{report.outcome}: {str(report.longrepr)[-1500:]}"

    pytest = _fresh_framework("pytest")
    _timed(limit, pytest.main, _pytest_arguments(test["script"]), [Collector()])


def _report_unittest(test: dict, module: types.ModuleType, limit: float, functions: dict[str, str]) -> None:
    """The TestCases class is made in a copy of the solution's namespace: the program's
    functions (whose globals are the module's) cannot rebind the report hooks by name. What
    else the script binds (its imports: ``np``, ``os``, ``datetime``) reaches the solution's
    namespace too, as in bigcodebench, where both share one: solutions use those names."""
    unittest = _fresh_framework("unittest")
    namespace = dict(module.__dict__)
    namespace["__builtins__"] = builtins.__dict__
    exec(compile(test["script"], "test_solution.py", "exec"), namespace)
    shared = module.__dict__
    for name, value in namespace.items():
        if not name.startswith("__") and name != "TestCases" and (name not in shared or shared[name] is not value):
            shared[name] = value
    cases = namespace.get("TestCases")
    if cases is None:
        raise NameError("the test script defines no TestCases class")
    suite = unittest.TestLoader().loadTestsFromTestCase(cases)
    names = {id(case): f"TestCases.{case._testMethodName}" for case in suite}
    result = unittest.TestResult()
    _timed(limit, suite.run, result)
    bad = {}
    for case, trace in result.failures + result.errors:
        bad[id(case)] = trace.strip().splitlines()[-1][:1500] if trace.strip() else "error"
    for case, reason in result.skipped:
        bad[id(case)] = "skipped: " + str(reason)[:500]
    for case, _trace in result.expectedFailures:
        bad[id(case)] = "expected failure"
    for case in result.unexpectedSuccesses:
        bad[id(case)] = "unexpected success"
    for key, name in names.items():
        functions[name] = bad.get(key, "returned")
