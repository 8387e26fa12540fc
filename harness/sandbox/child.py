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

Only the standard library, harness.plaindata, harness.script_tests and harness.sandbox.protocol are
imported here.
"""

from __future__ import annotations

import _thread
import builtins
import gc
import hashlib
import io
import itertools
import json
import marshal
import operator
import os
import pickle
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import types

from codea1.harness import plaindata, script_tests
from codea1.harness.sandbox import protocol

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
    repr: HumanEval/130's 100 MB of float lists took 2 s a sample). A tree nested deeper
    than the pickler recurses is its JSON text instead (also a function of the tree)."""
    _PICKLED.seek(0)
    _PICKLED.truncate()
    try:
        _PICKLER.dump(tree)
    except RecursionError:
        return b"json:" + protocol.dumps_tree(tree).encode()
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
                return (_encode(tree) if large_output == "both" else None), hashlib.sha256(blob).hexdigest()
            return _encode(tree), None
        fast = _encode(tree)
    if large_output != "value" and len(fast) > LARGE_OUTPUT_BYTES:
        return (fast if large_output == "both" else None), hashlib.sha256(fast.encode()).hexdigest()
    return fast, None


def _encode(tree) -> str:
    """JSON text of a tree: json's C encoder, or an explicit stack where the tree is nested
    deeper than it recurses (protocol.dumps_tree)."""
    try:
        return _ENCODER.encode(tree)
    except RecursionError:
        return protocol.dumps_tree(tree)


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
# The harness' own reference, taken before any program ran: what script tests use is
# resolved from it, not from sys.modules, which the program can replace.
_REPORTER = script_tests.Reporter


FRAMEWORKS = ("unittest", "unittest.mock", "pytest")


def prepare(frameworks: tuple = FRAMEWORKS) -> None:
    """Made once in the zygote, before any child: the test frameworks, warmed up, and the
    ground they stand on (see ``_build_ground``), the builtins as no program has touched
    them, the alarm handler and the audit hook (``_audit``). A child that made them itself
    wrote to the page of every builtin object (the copy's references), and the kernel copies
    each page a child writes: a one-test child's CPU went from 2.2 to 1.9 ms.

    ``frameworks``: of FRAMEWORKS, those to prepare (unittest always). Each costs every child
    its fork: unittest.mock (it imports asyncio) about 0.6 ms, pytest and its first run about
    0.8 ms (measured on a 2-core VM). A zygote that runs no KodCode-style script may leave
    pytest out: a pytest script then imports it afresh in the child, after the ground was put
    back (its own modules then are not part of the ground)."""
    global _PRISTINE_BUILTINS
    if _PRISTINE_BUILTINS is not None:
        return
    _warm_up(frameworks)
    global _FRAMEWORK_GROUND
    _FRAMEWORK_GROUND = _framework_ground()
    _PRISTINE_BUILTINS = dict(builtins.__dict__)
    signal.signal(signal.SIGALRM, _on_alarm)
    codes = _build_ground()
    _audit.__defaults__ = (*_audit.__defaults__[:2], codes, *_audit.__defaults__[3:])
    sys.addaudithook(_audit)
    # What the zygote holds now lives as long as it does: out of the gc's sight, a child's
    # collections do not walk (and so copy) the pages of the frameworks and the ground.
    gc.freeze()


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
    # The harness' own, into locals before the program can rebind the module's names.
    settle, arming, scripts, gc_on = _settle, _ARMING, _SCRIPTS, gc.enable

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
    next(arming)  # from here on: no audit hook of the program's (see _audit)
    if any(test.get("kind") == "script" for test in tests):
        next(scripts)  # nor trace or profile function, nor gc walk
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
    for name, value in list(module.__dict__.items()):
        if type(value) is types.FunctionType:  # (isinstance would read a lazy object's __class__: its code)
            namespace[name] = _guarded_wrapper(value)
    if prelude:
        try:
            exec(prelude, namespace)
        except BaseException:  # noqa: BLE001 - the tests that need it will fail and say why
            pass
    entry = module.__dict__.get(entry_point) if entry_point else None

    # Phase 2: the tests, in order.
    settled = False  # the test before was a script test whose ground was checked after it
    for i, test in enumerate(tests):
        start = time.perf_counter()
        try:
            if test["kind"] == "script":
                # What the program changed while it loaded (or in the tests before) is put back
                # first: nothing below runs on it. Right after a script test's own check,
                # whatever the program changes from here on is the next check's to find.
                stuck, threads = ([], "") if settled else settle(module)[1:]
                settled = False
                try:
                    record, keep = _script_test(test, module, limits[i], settle, threads or _stuck(stuck))
                    record["i"] = i
                    channel.send(record)
                    settled = keep is not None
                    del keep  # the program's objects outlive the record's sending: no finalizer of theirs runs before
                finally:
                    gc_on()
                continue
            settled = False
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


# ---------------------------------------------------------------------------------------------
# The ground in-process script tests stand on (issue 33, 3).
#
# A script test judged in-process runs its framework (unittest, pytest) in the program's own
# process. That framework is the one ``prepare`` imported in the zygote, before any program,
# and ran once there (``_warm_up``: what it imports on first use is imported then); never a
# copy imported after the program, whose module code would run on what the program patched
# (``contextlib.contextmanager``, ``functools.wraps``). ``prepare`` then records the
# interpreter state the framework stands on, "the ground" (``_build_ground``): every module's
# dict, the dict behind every class (heap types, and the builtin types reachable from
# modules), the contents of the registries modules and classes hold (lists, dicts and sets
# that are not plain data), the callables of the objects modules and classes hold, closure
# cells, the framework functions' attributes, classes' bases, the type of every such object,
# sys.modules and signal handlers. ``_settle`` compares the interpreter with it and puts back
# what differs: before each script test (what the program patched while it loaded is undone,
# not held against it), and right after the framework returns, before anything is read from
# its result: whatever differs then, the program changed during the test, which fails.
#
# ``_settle`` and its helpers take what they call from their own defaults (bound when this
# module was imported, in the zygote), never through module globals or builtins, and compare
# by identity (``operator.is_``: no method of the program's objects runs). The audit hook
# (``_audit``) refuses what no snapshot sees: giving new code to a function whose code the
# zygote had, or new defaults to one that has some; once the child is armed (``_ARMING``,
# just before its program loads), further audit hooks; and in a child whose job has script
# tests (``_SCRIPTS``), trace and profile functions (a tracer can move the runner's frames
# past a line) and the gc's walks over objects. (Elsewhere they stay allowed: the coverage
# stage runs coverage.py in its job.)
#
# The harness runs each part of each test itself (``_ut_part``, ``_pt_part``: setUp, the test,
# tearDown, cleanups; pytest's setup, call and teardown), checks that the test function is the
# script's, and counts how each part ended on counters the program cannot turn back
# (``itertools.count``): a part that raised stays counted however the framework's own result
# is steered afterwards. A test passes when the counters and the framework both say so.
#
# What still works, and is why these verdicts stay marked in-process: code the test calls that
# changes something and changes it back before the test ends, code that walks up the stack
# into the runner's frames (or reaches pytest's live run through its objects), ctypes, and the
# result channel itself.

_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_FRAMEWORK_NAMES = frozenset(("unittest", "pytest", "_pytest", "pluggy", "iniconfig"))
_FRAMEWORK_SUBMODULES = ("unittest.", "pytest.", "_pytest.", "pluggy.", "iniconfig.")
# What the frameworks, the harness or the fork change in a child: entries left alone (a
# child's own temporary directory, pytest's last exception, the warnings registry a module
# makes at its first warning; registries re-keyed after the fork, caches), and registries put
# back before each test but not held against the program (the import path, caches a program
# could poison: re's compiled patterns). A Flag enum's ``_value2member_map_`` caches each
# combination of its members when first made (``re.I | re.M``): left alone too.
_IGNORED_KEYS = {"sys": frozenset(("last_type", "last_value", "last_traceback", "last_exc")),
                 "tempfile": frozenset(("tempdir", "_name_sequence")),
                 "unittest.mock": frozenset(("file_spec", "open_spec")),  # made by the first mock_open
                 __name__: frozenset(("_armed",))}
_QUIET_KEYS = {"sys": frozenset(("path", "path_importer_cache", "stdin", "stdout", "stderr"))}
_EVERY_MODULE_IGNORED = frozenset(("__warningregistry__",))
_IGNORED_CONTAINERS = frozenset(("threading._active", "threading._limbo", "threading._shutdown_locks",
                                 "logging._handlerList", "warnings._onceregistry", "inspect._filesbymodname",
                                 "inspect.modulesbyfile"))
_QUIET_CONTAINERS = frozenset(("sys.path", "sys.path_importer_cache", "linecache.cache", "re._cache", "re._cache2",
                               "warnings.filters"))
_STRICT_CONTAINERS = frozenset(("sys.meta_path", "sys.path_hooks", "gc.callbacks"))
_RULES = tuple((mode, frozenset(), frozenset()) for mode in range(5))  # see _settle_dict
_STRICT_RULE = _RULES[0]
_FRAMEWORKS: dict = {}  # "unittest", "pytest": the module as prepare() imported it
_ARMING = itertools.count()  # advanced in each child just before its program loads (see _audit)
_SCRIPTS = itertools.count()  # advanced there too when the job has script tests
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE
_MISSING = object()
_CELL_CONTENTS = types.CellType.__dict__["cell_contents"]
_FUNCTION_DICT = types.FunctionType.__dict__["__dict__"]
_NOTHING_FOUND = ((), (), "")  # what _settle finds where there is no ground (the warm-up runs)


def _raw_dict(cls) -> dict:
    """The dict behind a class's mappingproxy."""
    return gc.get_referents(cls.__dict__)[0]


def _instance_dict(obj):
    try:
        found = object.__getattribute__(obj, "__dict__")
    except Exception:  # noqa: BLE001 - no instance dict
        return None
    return found if type(found) is dict else None


def _plain_container(value) -> bool:
    """A non-empty container of plain data only (an empty one may be a registry to come)."""
    if isinstance(value, dict):
        return bool(value) and all(type(k) in _PLAIN and type(v) in _PLAIN for k, v in dict.items(value))
    return bool(value) and all(type(v) in _PLAIN for v in value)


def _ground_classes(modules: list, objects: list) -> list:
    """Every heap type alive in the zygote and every class reachable from a module's dict or
    a class's (builtin types included), with their bases and metaclasses."""
    found: dict[int, type] = {}
    stack = [o for o in objects if isinstance(o, type)]
    stack += [v for _name, m in modules for v in list(m.__dict__.values()) if isinstance(v, type)]
    while stack:
        cls = stack.pop()
        if id(cls) in found:
            continue
        try:
            raw = _raw_dict(cls)
        except Exception:  # noqa: BLE001 - no dict behind it to put back
            continue
        if type(raw) is not dict:
            continue
        found[id(cls)] = cls
        stack += [*cls.__mro__, type(cls)]
        stack += [v for v in list(raw.values()) if isinstance(v, type)]
    return list(found.values())


def _named(name: str):
    """``sys.modules[module].attribute`` for "module.attribute", or None."""
    module, _, attribute = name.rpartition(".")
    return getattr(sys.modules.get(module), attribute, None)


def _class_label(cls) -> str:
    module = cls.__module__ if type(cls.__module__) is str else "?"
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _framework(module_name) -> bool:
    """A module of the test frameworks' (or the harness'): everything in it is held strictly."""
    return type(module_name) is str and (module_name.split(".")[0] in _FRAMEWORK_NAMES
                                         or module_name.split(".")[0] == "codea1")


class _Ground:
    """The ground as lists, while ``_build_ground`` collects it. Each dict has its rule (see
    ``_settle_dict``): the frameworks' modules, classes, functions and registries are held
    strictly (mode 0); elsewhere in the standard library (and what the zygote preloaded) only
    code counts (1, 2): data, caches made on first use and registries that grow (3) are the
    program's and the tests' as in any Python process; the import path and caches a program
    could poison are put back quietly (4)."""

    def __init__(self):
        self.dicts, self.dict_labels, self.dict_owners, self.dict_rules = [], [], [], []
        self.lists, self.list_labels, self.list_modes = [], [], []
        self.sets, self.set_labels, self.set_modes = [], [], []
        self.typed, self.typed_labels = [], []
        self.held, self.held_labels = [], []
        self.cells, self.cell_values, self.cell_labels = [], [], []
        self.functions, self.function_dicts, self.function_labels = [], [], []
        self.seen: set[int] = {id(sys.modules)}
        # by identity: a registry has several names (warnings.filters is _warnings.filters)
        self.quiet = {id(o) for o in map(_named, _QUIET_CONTAINERS) if o is not None}
        self.ignored = {id(o) for o in map(_named, _IGNORED_CONTAINERS) if o is not None}
        self.strict = {id(o) for o in map(_named, _STRICT_CONTAINERS) if o is not None}

    def add_dict(self, d: dict, label: str, owner=None, rule=None) -> None:
        rule = _STRICT_RULE if rule is None else rule
        self.seen.add(id(d))
        self.dicts.append(d), self.dict_labels.append(label), self.dict_owners.append(owner)
        self.dict_rules.append(rule)

    def add_held(self, where: str, value, framework: bool) -> None:
        """A value a module or a class holds: a registry, or an object whose callables count."""
        if type(value) in _PLAIN or id(value) in self.seen or isinstance(value, (type, types.ModuleType)):
            return
        self.seen.add(id(value))
        if isinstance(value, (list, dict, set)):
            mode = 4 if id(value) in self.quiet else 0 if framework or id(value) in self.strict else 3
            if id(value) in self.ignored or where.endswith((".__warningregistry__", "._value2member_map_")) \
                    or (_plain_container(value) and mode == 3):
                return
            self.typed.append(value), self.typed_labels.append(where)
            if isinstance(value, dict):
                self.add_dict(value, where, None, _RULES[mode])
            elif isinstance(value, list):
                self.lists.append(value), self.list_labels.append(where), self.list_modes.append(mode)
            else:
                self.sets.append(value), self.set_labels.append(where), self.set_modes.append(mode)
        elif not isinstance(value, (types.FunctionType, types.BuiltinFunctionType, _thread._local)) \
                and _instance_dict(value) is not None:  # (a thread-local's dict is its thread's)
            self.typed.append(value), self.typed_labels.append(where)
            self.held.append(value), self.held_labels.append(where)

    def add_function(self, fn) -> None:
        module = fn.__module__ if type(fn.__module__) is str else ""
        where = f"{module}.{fn.__qualname__}"
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # not filled yet
                continue
            if _framework(module) or type(value) not in _PLAIN:  # a plain value a closure keeps is its state
                self.cells.append(cell), self.cell_values.append(value)
                self.cell_labels.append(f"{where} (closure)")
        # A framework function's attributes (pluggy reads hook options from them); made now
        # where there were none, so that reading them in a child allocates nothing.
        if _framework(module):
            self.functions.append(fn), self.function_dicts.append(fn.__dict__)
            self.function_labels.append(f"{where} (attributes)")
            self.add_dict(fn.__dict__, f"{where} (attributes)", None, _STRICT_RULE)


def _flat(containers: list, items=tuple) -> tuple:
    """(each container's items, all of them in one tuple, each container's length)."""
    per = tuple(tuple(items(c)) for c in containers)
    return per, tuple(itertools.chain.from_iterable(per)), tuple(map(len, per))


def _build_ground() -> frozenset:
    """Records the ground into the defaults of ``_settle``; returns the code objects of every
    function alive now (the audit hook keeps them)."""
    objects = gc.get_objects()
    # (__main__ aside: the zygote's, or the script's that called prepare)
    modules = [(n, m) for n, m in list(sys.modules.items()) if isinstance(m, types.ModuleType) and n != "__main__"]
    classes = _ground_classes(modules, objects)
    functions = [o for o in objects if type(o) is types.FunctionType]
    del objects
    g = _Ground()
    for name, m in modules:
        g.typed.append(m), g.typed_labels.append(name)
        g.add_dict(m.__dict__, name, None, (0 if _framework(name) else 1,
                                            _IGNORED_KEYS.get(name, frozenset()) | _EVERY_MODULE_IGNORED,
                                            _QUIET_KEYS.get(name, frozenset())))
    for cls in classes:
        g.add_dict(_raw_dict(cls), _class_label(cls), cls, _RULES[0 if _framework(cls.__module__) else 2])
    holders = [(label, d, rule[0] == 0) for label, d, rule in zip(g.dict_labels, g.dicts, g.dict_rules)]
    for holder, namespace, framework in holders:
        for key, value in list(namespace.items()):
            if type(key) is str:
                g.add_held(f"{holder}.{key}", value, framework)
    for fn in functions:
        g.add_function(fn)
    held_dicts = [_instance_dict(o) for o in g.held]
    triples = [(d, k, v, f"{label}.{k}") for d, label in zip(held_dicts, g.held_labels) for k, v in d.items()
               if type(k) is str and (callable(v) or isinstance(v, types.ModuleType))]
    heap = [c for c in classes if c.__flags__ & _HEAP_TYPE]
    handlers = [(s, signal.getsignal(s)) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    handlers = [(s, h) for s, h in handlers if h is not None]
    keys_per, _keys, lens = _flat(g.dicts, dict.keys)
    values_per, _values, _lens = _flat(g.dicts, dict.values)
    busy = tuple(d for d in g.dicts if d)  # the empty ones (most functions' attributes): their lengths tell
    _keys_per, keys_flat, _lens = _flat(busy, dict.keys)
    _values_per, values_flat, _lens = _flat(busy, dict.values)
    chunks = tuple((start, min(start + 64, len(g.dicts))) for start in range(0, len(g.dicts), 64))
    lists_per, lists_flat, list_lens = _flat(g.lists)
    sets_per, sets_flat, set_lens = _flat(g.sets)
    ground = (
        (tuple(g.typed), tuple(map(type, g.typed)), tuple(g.typed_labels)),
        (tuple(g.dicts), lens, busy, keys_flat, values_flat, keys_per, values_per, tuple(g.dict_labels),
         tuple(g.dict_owners), tuple(o is not None and bool(o.__flags__ & _HEAP_TYPE) for o in g.dict_owners),
         tuple(g.dict_rules), chunks),
        (tuple(g.lists), list_lens, lists_flat, lists_per, tuple(g.list_labels), tuple(g.list_modes)),
        (tuple(g.sets), set_lens, sets_flat, sets_per, tuple(g.set_labels), tuple(g.set_modes)),
        (tuple(heap), tuple(c.__bases__ for c in heap), tuple(_class_label(c) + ".__bases__" for c in heap)),
        (tuple(g.cells), tuple(g.cell_values), tuple(g.cell_labels)),
        (tuple(g.functions), tuple(g.function_dicts), tuple(g.function_labels)),
        (tuple(g.held), tuple(held_dicts), tuple(map(len, held_dicts)), tuple(frozenset(d) for d in held_dicts),
         tuple(g.held_labels), tuple(t[0] for t in triples), tuple(t[1] for t in triples),
         tuple(t[2] for t in triples), tuple(t[3] for t in triples)),
        (sys.modules, tuple(n for n, _m in modules), tuple(m for _n, m in modules),
         frozenset(n for n, _m in modules)),
        (tuple(s for s, _h in handlers), tuple(h for _s, h in handlers),
         frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ())), tuple(sys.get_asyncgen_hooks())),
        tuple(d for d in (getattr(re, "_cache", None), getattr(re, "_cache2", None)) if type(d) is dict),
    )
    _settle.__defaults__ = (False, ground, *_settle.__defaults__[2:])
    return frozenset(f.__code__ for f in functions)


# _settle's helpers: everything they call is a default, bound when this module was imported.

def _put_back(obj, name: str, value, label: str, changed, stuck, set_attribute=object.__setattr__,
              append=list.append, add=str.__add__, catch=Exception) -> None:
    """One attribute of an object of the ground's (its class, its dict) put back and named."""
    try:
        set_attribute(obj, name, value)
        append(changed, add(add(label, "."), name))
    except catch:
        append(stuck, add(add(label, "."), name))


def _settle_typed(group, changed, stuck, is_=operator.is_, map_=map, all_=all, zip_=zip, type_=type,
                  put_back=_put_back):
    """The class of each module and held object."""
    objects, kinds, labels = group
    if all_(map_(is_, map_(type_, objects), kinds)):
        return
    for obj, kind, label in zip_(objects, kinds, labels):
        if type_(obj) is not kind:
            put_back(obj, "__class__", kind, label, changed, stuck)


def _exact_str(value, type_=type, str_=str) -> bool:
    return type_(value) is str_


def _settle_dict(d, keys, values, label, owner, heap, rule, modules, changed, stuck, zip_=zip, map_=map,
                 all_=all, tuple_=tuple, type_=type, id_=id, frozenset_=frozenset, str_=str, get=dict.get,
                 put=dict.__setitem__, drop=dict.__delitem__, keys_of=dict.keys, set_attribute=type.__setattr__,
                 delete_attribute=type.__delattr__, append=list.append, add=str.__add__, starts=str.startswith,
                 ends=str.endswith, module_type=types.ModuleType, plain=_PLAIN, names=frozenset(builtins.__dict__),
                 filter_=filter, filterfalse=itertools.filterfalse, is_str=_exact_str, missing=_MISSING,
                 repeat=itertools.repeat, compress=itertools.compress, is_=operator.is_, is_not=operator.is_not,
                 len_=len, catch=Exception) -> bool:
    """One dict of the ground put back, as its rule says: (mode, keys left alone, keys put back
    without holding them against the program). Modes (see _Ground): 0 strict, everything put
    back and held against the program; 1 a module's dict and 2 a class's or a function's
    attributes outside the frameworks, where only code counts (a function, class or object
    replaced; a dunder, or in a module a builtin's name, added); 3 a registry outside the
    frameworks, which may grow; 4 put back, never held against the program. True when a
    class's dict was written directly (the type cache must then be cleared)."""
    mode, ignored, quiet = rule
    flush = False
    # replaced or removed: the entries whose value is not the ground's, found at C speed
    now = tuple_(map_(get, repeat(d), keys, repeat(missing)))
    for k, v in compress(zip_(keys, values), map_(is_not, now, values)):
        if type_(k) is str_ and k in ignored:
            continue
        if (mode == 1 or mode == 2) and (type_(v) in plain or (
                type_(v) is tuple_ and all_(map_(plain.__contains__, map_(type_, v))))):
            continue  # data (a setting, a cache made on first use): the program's and the tests' to change
        try:
            if owner is None or not heap:
                raise TypeError
            set_attribute(owner, k, v)
        except catch:
            put(d, k, v)
            flush = flush or owner is not None
        if mode <= 2 and not (type_(k) is str_ and k in quiet):
            append(changed, add(add(label, "."), k) if type_(k) is str_ else add(label, "[...]"))
    if mode == 3:
        return flush  # what was added to a registry (a library's codec, reducer, overload) stays
    # The keys it had: strings by value (hashing an exact str runs no code of anyone's: a
    # different string object of the same text is the same name), others by identity.
    names_then = frozenset_(filter_(is_str, keys))
    others_then = None
    added = tuple_(keys_of(d))
    if len_(added) >= len_(keys) and all_(map_(is_, added, keys)):
        added = added[len_(keys):]  # the ground's keys first, in order: what came after is new
    for k in added:
        if type_(k) is str_:
            if k in names_then or k in ignored:
                continue
        else:
            if others_then is None:
                others_then = frozenset_(map_(id_, filterfalse(is_str, keys)))
            if id_(k) in others_then:
                continue
        # (modes 1, 2) A new name is the module's or the class's own (a global made on first
        # use), unless it is a dunder (__getattr__, __eq__) or, in a module, shadows a builtin.
        if (mode == 1 or mode == 2) and type_(k) is str_ and not (starts(k, "__") and ends(k, "__")) \
                and not (mode == 1 and k in names):
            continue
        v = get(d, k, None)
        if owner is None and type_(k) is str_ and type_(v) is module_type \
                and get(modules, add(add(label, "."), k)) is v:
            continue  # a submodule imported since: its package holds it
        try:
            if owner is None or not heap:
                raise TypeError
            delete_attribute(owner, k)
        except catch:
            try:
                drop(d, k)
                flush = flush or owner is not None
            except catch:
                append(stuck, add(label, "[...]"))
        if mode <= 2 and not (type_(k) is str_ and k in quiet):
            append(changed, add(add(label, "."), k) if type_(k) is str_ else add(label, "[...]"))
    return flush


def _settle_dicts(group, modules, changed, stuck, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple,
                  range_=range, chain=itertools.chain.from_iterable, keys_of=dict.keys, values_of=dict.values,
                  settle_dict=_settle_dict, clear_type_cache=sys._clear_type_cache):
    """Module dicts, class dicts, function attributes, registries that are dicts: compared all
    at once; where they differ, chunk by chunk, then dict by dict."""
    dicts, lens, busy, keys_flat, values_flat, keys_per, values_per, labels, owners, heap, rules, chunks = group
    current = tuple_(map_(len_, dicts))
    if current == lens and all_(map_(is_, chain(map_(keys_of, busy)), keys_flat)) \
            and all_(map_(is_, chain(map_(values_of, busy)), values_flat)):
        return
    flush = False
    for start, end in chunks:
        if current[start:end] == lens[start:end] \
                and all_(map_(is_, chain(map_(keys_of, dicts[start:end])), chain(keys_per[start:end]))) \
                and all_(map_(is_, chain(map_(values_of, dicts[start:end])), chain(values_per[start:end]))):
            continue
        for j in range_(start, end):
            d = dicts[j]
            if current[j] == lens[j] and all_(map_(is_, keys_of(d), keys_per[j])) \
                    and all_(map_(is_, values_of(d), values_per[j])):
                continue
            flush = settle_dict(d, keys_per[j], values_per[j], labels[j], owners[j], heap[j], rules[j], modules,
                                changed, stuck) or flush
    if flush:
        clear_type_cache()


def _settle_containers(lists, sets, changed, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple,
                       zip_=zip, id_=id, frozenset_=frozenset, chain=itertools.chain.from_iterable,
                       assign=list.__setitem__, everything=slice(None), clear=set.clear, update=set.update,
                       append=list.append):
    """Registries that are lists or sets (modes as in _settle_dict: a registry outside the
    frameworks may grow, its first items kept)."""
    objects, lens, flat, per, labels, modes = lists
    if not (tuple_(map_(len_, objects)) == lens and all_(map_(is_, chain(objects), flat))):
        for lst, items, label, mode in zip_(objects, per, labels, modes):
            if len_(lst) == len_(items) and all_(map_(is_, lst, items)):
                continue
            if mode == 3 and len_(lst) > len_(items) and all_(map_(is_, lst, items)):
                continue  # appended to
            assign(lst, everything, items)
            if mode == 0:
                append(changed, label)
    objects, lens, flat, per, labels, modes = sets
    if not (tuple_(map_(len_, objects)) == lens and all_(map_(is_, chain(objects), flat))):
        for s, items, label, mode in zip_(objects, per, labels, modes):
            now, then = frozenset_(map_(id_, s)), frozenset_(map_(id_, items))
            if now == then or (mode == 3 and then <= now):
                continue
            clear(s)
            update(s, items)
            if mode == 0:
                append(changed, label)


def _settle_attributes(bases, cells, functions, changed, stuck, is_=operator.is_, map_=map, all_=all, zip_=zip,
                       get_bases=type.__dict__["__bases__"].__get__, set_attribute=type.__setattr__,
                       get_cell=_CELL_CONTENTS.__get__, set_cell=_CELL_CONTENTS.__set__,
                       get_dict=_FUNCTION_DICT.__get__, set_dict=_FUNCTION_DICT.__set__, append=list.append,
                       missing=_MISSING, catch=Exception):
    """Classes' bases, closure cells, which dict a function's attributes are in."""
    objects, values, labels = bases
    if not all_(map_(is_, map_(get_bases, objects), values)):
        for cls, value, label in zip_(objects, values, labels):
            if get_bases(cls) is not value:
                try:
                    set_attribute(cls, "__bases__", value)
                    append(changed, label)
                except catch:
                    append(stuck, label)
    objects, values, labels = cells
    try:
        same = all_(map_(is_, map_(get_cell, objects), values))
    except catch:  # a cell emptied
        same = False
    if not same:
        for cell, value, label in zip_(objects, values, labels):
            try:
                current = get_cell(cell)
            except catch:
                current = missing
            if current is not value:
                set_cell(cell, value)
                append(changed, label)
    objects, values, labels = functions
    if not all_(map_(is_, map_(get_dict, objects), values)):
        for fn, value, label in zip_(objects, values, labels):
            if get_dict(fn) is not value:
                set_dict(fn, value)
                append(changed, label)


def _settle_held(group, changed, stuck, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple, zip_=zip,
                 type_=type, str_=str, callable_=callable, isinstance_=isinstance, module_type=types.ModuleType,
                 get=dict.get, put=dict.__setitem__, drop=dict.__delitem__, keys_of=dict.keys,
                 dict_of=operator.attrgetter("__dict__"), put_back=_put_back, append=list.append, add=str.__add__):
    """The callables of the objects modules and classes hold (``sys.stdout.write``,
    ``os.environ.encodekey``): which dict their attributes are in, the callables in it, and no
    callable added. Their data (a logger's level) is the program's and the tests' to set."""
    objects, dicts, lens, keysets, labels, triple_dicts, triple_keys, triple_values, triple_labels = group
    if not all_(map_(is_, map_(dict_of, objects), dicts)):
        for obj, d, label in zip_(objects, dicts, labels):
            if dict_of(obj) is not d:
                put_back(obj, "__dict__", d, label, changed, stuck)
    if not all_(map_(is_, map_(get, triple_dicts, triple_keys), triple_values)):
        for d, k, v, label in zip_(triple_dicts, triple_keys, triple_values, triple_labels):
            if get(d, k) is not v:
                put(d, k, v)
                append(changed, label)
    if tuple_(map_(len_, dicts)) != lens:
        for d, n, keyset, label in zip_(dicts, lens, keysets, labels):
            if len_(d) == n:
                continue
            for k in tuple_(keys_of(d)):
                if type_(k) is str_ and k in keyset:
                    continue
                v = get(d, k)
                if callable_(v) or isinstance_(v, module_type):
                    drop(d, k)
                    append(changed, add(add(label, "."), k) if type_(k) is str_ else label)


def _settle_interpreter(module, modules, interpreter, changed, stuck, is_=operator.is_, map_=map, all_=all,
                        len_=len, tuple_=tuple, zip_=zip, type_=type, str_=str, dict_=dict, frozenset_=frozenset,
                        repeat=itertools.repeat, get=dict.get, put=dict.__setitem__, drop=dict.__delitem__,
                        keys_of=dict.keys, values_of=dict.values, starts=str.startswith, add=str.__add__,
                        append=list.append, module_type=types.ModuleType, set_attribute=object.__setattr__,
                        get_attribute=object.__getattribute__, pristine_builtins=builtins.__dict__,
                        builtins_module=builtins, getsignal=signal.getsignal, set_signal=signal.signal,
                        sigmask=signal.pthread_sigmask, block=signal.SIG_BLOCK, setmask=signal.SIG_SETMASK,
                        getitimer=signal.getitimer, setitimer=signal.setitimer,
                        timers=(signal.ITIMER_VIRTUAL, signal.ITIMER_PROF), get_hooks=sys.get_asyncgen_hooks,
                        set_hooks=sys.set_asyncgen_hooks, gettrace=sys.gettrace, getprofile=sys.getprofile,
                        thread_count=_thread._count, current_frames=sys._current_frames, environ=os.environ,
                        framework_names=_FRAMEWORK_NAMES, framework_submodules=_FRAMEWORK_SUBMODULES,
                        catch=Exception) -> str:
    """sys.modules, every module's own ``__builtins__``, signal handlers and timers, the signal
    mask, async generator hooks, pytest's environment variables. Returns why no test can run
    now ("the program left threads running": they could change the test or the runner while
    it runs; native threads that run no Python, such as OpenBLAS' pool, are not counted)."""
    sysmods, names, mods, known = modules
    if not all_(map_(is_, map_(get, repeat(sysmods), names), mods)):
        for name, m in zip_(names, mods):
            if get(sysmods, name) is not m:
                put(sysmods, name, m)
                append(changed, add(add("sys.modules[", name), "]"))
    for name in tuple_(keys_of(sysmods)):  # a framework module no warm-up imported: imported afresh, from its file
        if type_(name) is str_ and (name in framework_names or starts(name, framework_submodules)) \
                and name not in known:
            drop(sysmods, name)
    if module is not None:
        put(sysmods, "solution", module)
        if type_(module) is not module_type:
            set_attribute(module, "__class__", module_type)
    for m in tuple_(values_of(sysmods)):  # a module's own builtins (its __import__, __build_class__)
        try:
            namespace = get_attribute(m, "__dict__")
            if type_(namespace) is dict_:
                found = get(namespace, "__builtins__", None)
                if found is not None and found is not pristine_builtins and found is not builtins_module:
                    put(namespace, "__builtins__", pristine_builtins)
        except catch:  # an object the program put in sys.modules: nothing to put back
            pass
    signums, handlers, mask, hooks = interpreter
    if not all_(map_(is_, map_(getsignal, signums), handlers)):
        for signum, handler in zip_(signums, handlers):
            if getsignal(signum) is not handler:
                try:
                    set_signal(signum, handler)
                except catch:
                    append(stuck, "a signal handler")
    for timer in timers:
        if getitimer(timer) != (0.0, 0.0):
            setitimer(timer, 0)
    if frozenset_(sigmask(block, ())) != mask:
        sigmask(setmask, mask)
    if not all_(map_(is_, get_hooks(), hooks)):
        set_hooks(*hooks)
    if gettrace() is not None or getprofile() is not None:
        append(stuck, "a trace or profile function")
    for name in tuple_(environ):
        if type_(name) is str_ and starts(name, "PYTEST_"):
            try:
                del environ[name]
            except catch:
                pass
    if thread_count() > 0 or len_(current_frames()) > 1:
        return "the program left threads running"
    return ""


def _same_source(key, pattern, type_=type, issubclass_=issubclass, str_=str, bytes_=bytes, str_eq=str.__eq__,
                 bytes_eq=bytes.__eq__) -> bool:
    """The text a cached pattern was compiled from is its key's. Keys may be subclasses of str
    (lxml's _ElementUnicodeResult): compared as str, by the type's slot, so no method of the
    program's runs; a subclass key is filed under its own type, never found by a plain str."""
    if issubclass_(type_(key), str_) and issubclass_(type_(pattern), str_):
        return str_eq(key, pattern) is True
    if issubclass_(type_(key), bytes_) and issubclass_(type_(pattern), bytes_):
        return bytes_eq(key, pattern) is True
    return False


def _inline_flags(key, issubclass_=issubclass, type_=type, str_=str, str_has=str.__contains__,
                  bytes_has=bytes.__contains__) -> bool:
    return str_has(key, "(?") if issubclass_(type_(key), str_) else bytes_has(key, b"(?")


def _settle_patterns(caches, changed, tuple_=tuple, type_=type, len_=len, items=dict.items, pattern_type=re.Pattern,
                     unicode=int(re.UNICODE), append=list.append, same_source=_same_source,
                     inline_flags=_inline_flags):
    """re's caches of compiled patterns (put back quietly: tests fill them) hold no pattern
    compiled from another source or with other flags: a program that slipped one in (so that a
    ``match=`` check matches anything) changed the test framework."""
    for cache in caches:
        for key, value in tuple_(items(cache)):
            if not (type_(key) is tuple_ and len_(key) == 3 and type_(value) is pattern_type
                    and type_(key[2]) is int and key[0] is type_(key[1]) and same_source(key[1], value.pattern)
                    and (not (value.flags & ~(key[2] | unicode)) or inline_flags(key[1]))):
                append(changed, "re._cache")
                return


def _settle(module, after=False, _ground=None, typed=_settle_typed, dicts=_settle_dicts,
            containers=_settle_containers, attributes=_settle_attributes, held=_settle_held,
            interpreter=_settle_interpreter, patterns=_settle_patterns, gc_off=gc.disable):
    """Puts the ground back (see above). Returns (changed, stuck, threads): what differed from
    it (the volatile aside), what could not be put back, and why no test can run now. With
    ``after`` (right after a framework returned) the gc stays off until the caller has sent its
    record: no finalizer of the program runs between the check and the record."""
    if after:
        gc_off()
    changed, stuck = [], []
    (g_typed, g_dicts, g_lists, g_sets, g_bases, g_cells, g_functions, g_held, g_modules, g_interpreter,
     g_patterns) = _ground
    patterns(g_patterns, changed)  # first: putting the registries back empties them quietly
    typed(g_typed, changed, stuck)
    dicts(g_dicts, g_modules[0], changed, stuck)
    containers(g_lists, g_sets, changed)
    attributes(g_bases, g_cells, g_functions, changed, stuck)
    held(g_held, changed, stuck)
    threads = interpreter(module, g_modules, g_interpreter, changed, stuck)
    return changed, stuck, threads


def _audit(event, args, _watched=frozenset(("object.__setattr__", "object.__delattr__", "sys.addaudithook",
                                            "sys.settrace", "sys.setprofile", "sys._settraceallthreads",
                                            "sys._setprofileallthreads", "sys.monitoring.register_callback",
                                            "gc.get_objects", "gc.get_referrers", "gc.get_referents")),
           _attributes=frozenset(("__code__", "__defaults__", "__kwdefaults__")), _codes=frozenset(),
           _arming=_ARMING, _scripts=_SCRIPTS, _repr=repr, _type=type, _function=types.FunctionType,
           _error=RuntimeError):
    """The audit hook ``prepare`` installs (see above). Installed for good, its state in
    counters that only go up: what it refuses, the program cannot make it allow; the harness
    never does it in a child."""
    if event not in _watched:
        return
    if event == "object.__setattr__" or event == "object.__delattr__":
        target = args[0]
        if _type(target) is _function and args[1] in _attributes and target.__code__ in _codes and (
                args[1] == "__code__"
                or (target.__defaults__ if args[1] == "__defaults__" else target.__kwdefaults__) is not None):
            raise _error("refused in the sandbox: the harness' and the test frameworks' functions keep their "
                         "code and defaults")
        return
    if _repr(_scripts if event != "sys.addaudithook" else _arming) != "count(0)":
        raise _error("refused in the sandbox: " + event)


_WARM_UP_UNITTEST = '''
import logging, os, unittest, warnings


class TestCases(unittest.TestCase):
    def setUp(self):
        self.values = [1, 2]
        self.addCleanup(lambda: None)

    def test_equal(self):
        self.assertEqual({"a": [1, 2]}, {"a": [1, 3]})

    def test_diff(self):
        self.assertEqual("a" * 80 + "b\\nc", "a" * 80 + "c\\nc")

    def test_others(self):
        self.assertCountEqual([1, 2], [2, 1])
        self.assertAlmostEqual(1.0, 1.0000001)
        self.assertIn(1, self.values)
        self.assertIsInstance(1, int)
        self.assertTrue(True)
        self.assertIsNone(None)
        self.assertRegex("abc", "b")
        self.assertGreater(2, 1)
        self.assertSetEqual({1}, {1})
        self.assertSequenceEqual((1,), (1,))
        self.assertListEqual([1], [2])

    def test_raises(self):
        with self.assertRaises(ValueError):
            int("x")
        with self.assertRaisesRegex(ValueError, "invalid"):
            int("x")
        self.assertRaises(KeyError, {}.__getitem__, 1)

    def test_subtests(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertLess(i, 1)

    # mock

    def test_logs_and_warnings(self):
        with self.assertLogs(level="INFO") as logs:
            logging.getLogger("x").info("hello")
        self.assertIn("hello", logs.output[0])
        with self.assertWarns(UserWarning):
            warnings.warn("w")

    def test_error(self):
        raise KeyError("k")

    def test_skip(self):
        self.skipTest("no")
'''

_WARM_UP_MOCK = '''    @unittest.mock.patch("os.getcwd", return_value="/x")
    def test_mock(self, getcwd):
        self.assertEqual(os.getcwd(), "/x")
        getcwd.assert_called_once_with()
        with unittest.mock.patch.object(os, "getpid", return_value=1), unittest.mock.patch("os.listdir") as listdir:
            listdir.return_value = []
            called = unittest.mock.MagicMock()
            called(1)
            called.assert_called_with(2)
'''

_WARM_UP_PYTEST = '''
import unittest
import warnings

import pytest


@pytest.fixture
def numbers():
    yield [1, 2, 3]


def test_equal(numbers):
    assert numbers == [1, 2, 4]


@pytest.mark.parametrize("x, y", [(1, 2), (2, 3)])
def test_parametrized(x, y, tmp_path, capsys, monkeypatch):
    print(x)
    monkeypatch.setenv("X", "1")
    assert x + 1 == y


def test_raises():
    with pytest.raises(ValueError, match="invalid"):
        int("x")


def test_approx_and_warns():
    assert 0.1 + 0.2 == pytest.approx(0.3)
    with pytest.warns(UserWarning):
        warnings.warn("w")


class TestGroup:
    def test_method(self):
        assert "abc" != "abd"

    def test_error(self):
        raise KeyError("k")


class TestUnittest(unittest.TestCase):
    def test_case(self):
        self.assertEqual(1, 2)


def test_skip():
    pytest.skip("no")


@pytest.mark.xfail
def test_xfail():
    assert 0
'''


def _warm_up(frameworks: tuple) -> None:
    """Imports the frameworks and runs each once, in a scratch directory, so that what they
    import on first use is part of the ground. (Importing pytest and its first run cost the
    zygote about 0.35 s once; a child then runs a KodCode pytest module in 0.12 s instead of
    0.35 s, the median over KodCode's references.)"""
    import unittest

    _FRAMEWORKS["unittest"] = unittest
    script = _WARM_UP_UNITTEST
    if "unittest.mock" in frameworks:
        import unittest.mock  # BigCodeBench's tests use it (and check with it)

        script = script.replace("    # mock\n", _WARM_UP_MOCK)
    pytest = None
    if "pytest" in frameworks:
        try:  # (by name: the sandbox side imports the standard library only, pytest where installed)
            pytest = __import__("pytest")
        except Exception:  # noqa: BLE001 - not installed (or broken): KodCode's scripts fail for want of it, as before
            pytest = None
        else:
            _FRAMEWORKS["pytest"] = pytest
    cwd, path, streams, alarm = os.getcwd(), list(sys.path), (sys.stdout, sys.stderr), signal.getsignal(signal.SIGALRM)
    scratch = tempfile.mkdtemp(prefix="codea1-warm-up-")
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        os.chdir(scratch)
        with open(os.devnull, "w") as quiet:
            sys.stdout = sys.stderr = quiet
            module = types.ModuleType("solution")
            _run_unittest({"script": script}, module, 60.0, None)
            if pytest is not None:
                _run_pytest({"script": _WARM_UP_PYTEST}, 60.0, None, module)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, alarm)
        sys.stdout, sys.stderr = streams
        os.chdir(cwd)
        sys.path[:] = path
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            sys.__dict__.pop(name, None)
        for name in [n for n in sys.modules if n.startswith("test_solution_") or n == "solution"]:
            del sys.modules[name]
        shutil.rmtree(scratch, ignore_errors=True)
        gc.collect()


def _stuck(stuck: list) -> str:
    if not stuck:
        return ""
    return f"the program changed the test framework: {', '.join(sorted(set(stuck))[:4])} (it could not be put back)"


_FRAMEWORK_GROUND: tuple = ("unittest", "pytest", "_pytest", "pluggy", "iniconfig", "codea1")


def _framework_ground() -> tuple:
    """The modules a change to which, during a test, fails it: the frameworks' own and the
    standard-library modules they reach through their globals (contextlib, functools,
    traceback...), transitively. A change elsewhere (a library resolving its lazy
    attributes, mimetypes reading its tables, the test's own pyfakefs) is put back before
    the next script test but is no sign of tampering."""
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    found = {name for name in sys.modules if name.split(".")[0] in _FRAMEWORK_GROUND}
    todo = list(found)
    while todo:
        module = sys.modules.get(todo.pop())
        for value in list(getattr(module, "__dict__", {}).values()):
            name = getattr(value, "__name__", None) if type(value) is types.ModuleType else None
            if type(name) is str and name not in found and name in sys.modules and (
                    name.split(".")[0] in stdlib or name.split(".")[0] in _FRAMEWORK_GROUND):
                found.add(name)
                todo.append(name)
    return tuple(sorted(found))


# On the frameworks' ground but deciding no verdict (checked against unittest, unittest.mock,
# pytest and pluggy), and changed by libraries that tests use, as they load or run: put back
# before the next test like everything else, never held against the program.
#   linecache, tokenize: source lines for tracebacks (pyfakefs points them at the real disk);
#   tempfile: pyfakefs reloads it, on both sides of every test;
#   inspect.isgenerator: a Cython module (lxml.etree, first imported in a test) wraps it to
#   recognise its generators; no framework calls it.
_NO_VERDICT_MODULES = ("linecache", "tokenize", "tempfile")
_NO_VERDICT_NAMES = frozenset(("inspect.isgenerator",))
# A module attribute the interpreter itself reads (PEP 562); any other new dunder in builtins
# is a name only code that spells it reaches (pybind11 keeps its internals there).
_MODULE_HOOKS = frozenset(("__getattr__", "__dir__"))


def _decides_verdicts(label: str, builtin_names=frozenset(builtins.__dict__)) -> bool:
    if label in _NO_VERDICT_NAMES or label.split(".")[0] in _NO_VERDICT_MODULES:
        return False
    name = label[len("builtins."):] if label.startswith("builtins.") else ""
    return not (name.startswith("__") and name.endswith("__") and name not in builtin_names
                and name not in _MODULE_HOOKS)


def _tampering(after: tuple, ground: tuple | None = None) -> str:
    """Why a test whose framework just returned fails, from what ``_settle`` found then:
    changes to the frameworks' ground (``_framework_ground``) only, less what decides no
    verdict (``_decides_verdicts``)."""
    changed, stuck, threads = after
    if threads:
        return threads
    ground = _FRAMEWORK_GROUND if ground is None else ground
    found = sorted(label for label in set(stuck) | set(changed)
                   if any(label == m or label.startswith(m + ".") for m in ground) and _decides_verdicts(label))
    if not found:
        return ""
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    return f"the program changed {', '.join(found[:4])}{more} during the test"


def _safe_describe(exc: BaseException) -> str:
    """``_describe`` without running the program's code (after ``_settle``: none may run until
    the record is sent): the exception's class name, and its message where it is a builtin
    exception's one string argument."""
    kind = type(exc)
    name = type.__dict__["__name__"].__get__(kind)
    args = BaseException.__dict__["args"].__get__(exc)
    if type.__dict__["__module__"].__get__(kind) == "builtins" and type(args) is tuple and len(args) == 1 \
            and type(args[0]) is str:
        return f"{name}: {args[0][:2000]}"
    return name


def _error_record(error: BaseException, limit: float, took: float, status: str) -> dict:
    if type(error) is _TestTimeout:
        return {"s": "timeout", "e": f"exceeded {limit:.3g}s", "t": took}
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
    after = settle(module, True) if settle is not None else _NOTHING_FOUND
    return value, error, after, clock() - start


def _script_test(test: dict, module: types.ModuleType, limit: float, settle, problem: str) -> tuple[dict, object]:
    """A script test's record, and what to keep alive until it is sent; ``problem``: why it
    cannot run (the ground could not be put back)."""
    if problem:
        return {"s": "exception" if test.get("report") else "failed", "e": problem, "t": 0.0}, None
    if test.get("report"):
        return _run_reported(test, module, limit, settle)
    return _run_script(test, module, limit, settle)


def _run_script(test: dict, module: types.ModuleType, limit: float, settle) -> tuple[dict, object]:
    """A script judged in-process: (its record, what to keep alive until the record is sent)."""
    if test.get("framework") == "pytest":
        return _run_pytest(test, limit, settle, module)
    return _run_unittest(test, module, limit, settle)


# -- unittest (BigCodeBench) -----------------------------------------------------------------
# The observer's state, a tuple (read by index: a class's attributes are the program's to
# patch): 0 _ut_part, 1 test method names, 2 their functions, 3 counters of parts that raised,
# 4 counters of test methods that returned, 5 messages, 6 TestCase's own _callSetUp and
# _callTearDown (at 0 and 2), 7 BaseException, 8 next, 9 getattr, 10 _describe, 11 AssertionError,
# 12 what each test case gets in its own dict (see _observe_unittest), 13 types.MethodType.

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
            if part == 0:  # unittest's own assertions, in the case's dict: no class patch reaches them
                own = case.__dict__
                for attribute, value, method in s[12]:
                    own[attribute] = s[13](value, case) if method else value
            s[6][part](case)
    except s[7] as exc:
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


_ASSERTION_HELPERS = frozenset(("_formatMessage", "_getAssertEqualityFunc", "_baseAssertEqual", "_truncateMessage",
                                "failureException", "longMessage", "maxDiff"))


def _observe_unittest(cases: type, base: type, names: tuple) -> tuple:
    """Puts the observer's part runners on the script's class (see _ut_part). Each test case
    also gets unittest's assertions (with the helpers and settings they look up on ``self``)
    in its own dict, as the ground has them, where the script's classes do not define their
    own: a test that calls the program and then ``self.assertEqual`` uses these, whatever the
    program did to ``TestCase`` in between (even undoing it before anyone could look)."""
    own = tuple((attribute, value, isinstance(value, types.FunctionType))
                for attribute, value in base.__dict__.items()
                if (attribute.startswith(("assert", "fail")) or attribute in _ASSERTION_HELPERS)
                and not isinstance(value, (staticmethod, classmethod))
                and _class_attribute(cases, attribute) is getattr(value, "__func__", value))
    state = (_ut_part, names, tuple(_class_attribute(cases, n) for n in names),
             tuple(itertools.count() for _ in names), tuple(itertools.count() for _ in names), {},
             (base._callSetUp, None, base._callTearDown), BaseException, next, getattr, _describe, AssertionError,
             own, types.MethodType)
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
    unittest = _FRAMEWORKS["unittest"]
    imports, functions = script_tests.script_names(test["script"], "unittest")
    namespace = dict(module.__dict__)
    namespace["__builtins__"] = builtins.__dict__
    exec(compile(test["script"], "test_solution.py", "exec"), namespace)
    sys.modules.pop(script_tests.HOOK_MODULE, None)  # a rewritten script's report hooks: bound, out of sight
    for name in imports:
        if name in namespace:
            module.__dict__[name] = namespace[name]
    cases = namespace.get("TestCases")
    if not isinstance(cases, type) or not issubclass(cases, unittest.TestCase):
        raise NameError("the test script defines no TestCases class")
    names = tuple(q.split(".", 1)[1] for q in functions if q.startswith("TestCases."))
    state = _observe_unittest(cases, unittest.TestCase, names)
    suite = unittest.TestLoader().loadTestsFromTestCase(cases)
    loaded = {id(case): case._testMethodName for case in suite}
    result = unittest.TestResult()
    _timed(limit, suite.run, result)
    return result, state, loaded


def _unittest_outcomes(run: tuple) -> tuple[dict, dict, str]:
    """({test method: "returned" | why not}, {test method: traceback}, problem) from the
    observer's counters and unittest's result together, read as data."""
    result, state, loaded = run
    names, failed, returned, messages = state[1], state[3], state[4], state[5]
    fields = _instance_dict(result) or {}
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


def _run_unittest(test: dict, module: types.ModuleType, limit: float, settle) -> tuple[dict, object]:
    run, error, after, took = _observed(settle, module, _unittest_run, test, module, limit)
    tampered = _tampering(after)
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
# collection), 10 messages, 11 next, 12 _describe, 13 script_tests.pytest_function_name,
# 14 sys.modules, 15 getattr, 16 AssertionError, 17 the report hooks' module name.

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


def _observe_pytest(pytest, names: tuple) -> tuple:
    """A plugin (a module of wrapper hooks) observing each item's phases (see _pt_part)."""
    state = (_pt_collected, _pt_index, names, _pt_part, _pt_check, BaseException,
             tuple(itertools.count() for _ in names), tuple(itertools.count() for _ in names),
             tuple(itertools.count() for _ in names), [None] * len(names), {}, next, _describe,
             script_tests.pytest_function_name, sys.modules, getattr, AssertionError, script_tests.HOOK_MODULE)
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
    pytest = _FRAMEWORKS.get("pytest") or __import__("pytest")  # not prepared: imported here, after the ground
    _imports, functions = script_tests.script_names(test["script"], "pytest")
    observer, state = _observe_pytest(pytest, tuple(functions))
    outcomes: dict[str, str] = {}
    _timed(limit, pytest.main, _pytest_arguments(test["script"]), [observer, _PytestCollector(outcomes)])
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


def _run_pytest(test: dict, limit: float, settle, module: types.ModuleType) -> tuple[dict, object]:
    run, error, after, took = _observed(settle, module, _pytest_run, test, limit)
    tampered = _tampering(after)
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
        _write_all(fd, script.encode())
    finally:
        os.close(fd)
    return ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--noconftest",
            "-c", os.devnull, "--rootdir", os.getcwd(), "--confcutdir", os.getcwd(), "-o", "addopts=",
            "--import-mode=importlib", name]


# -- rewritten scripts, judged in the parent ---------------------------------------------------

def _run_reported(test: dict, module: types.ModuleType, limit: float, settle) -> tuple[dict, object]:
    """A rewritten script (harness.script_tests): its report calls go to a Reporter made
    here, from the harness' own reference; the record carries the reports and how each test
    function ended (the observer's counters and the framework's result together), never a
    verdict (the parent judges)."""
    reporter = _REPORTER(_TestTimeout, _PRISTINE_BUILTINS)
    reports = reporter.reports
    sys.modules[script_tests.HOOK_MODULE] = reporter.module
    pytest_style = test.get("framework") == "pytest"
    if pytest_style:
        run, error, after, took = _observed(settle, module, _pytest_run, test, limit)
    else:
        run, error, after, took = _observed(settle, module, _unittest_run, test, module, limit)
    sys.modules.pop(script_tests.HOOK_MODULE, None)
    keep = (run, error, reporter)
    tampered = _tampering(after)
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
