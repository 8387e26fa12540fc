"""Runs inside the forked, confined child: loads the program under test and runs its tests.

Protocol (one JSON object per line on the result pipe, nothing else):

    {"seal": key}                                   first, where a test is judged in-process
                                                    (protocol.verdict_seal; see run)
    {"load": "ok"} | {"load": "error", "e": msg}    phase 1: the program was loaded
    {"i": i, "s": "ok", "v": tree, "t": secs}       phase 2: outcome of test i, in order
                                                    (a large value: "h": its digest, with
                                                    or without "v"; see encode_for_channel)
    {"i": i, "s": "exception"|"timeout", "e": msg, "t": secs}
    {"i": i, "s": "passed"|"failed", "e": msg, "d": {...}, "t": secs, "m": seal}
                                                    (script tests judged in-process; "m" on a pass)
    {"i": i, "s": "reports", "f": {function: "returned"|msg}, "r": [report, ...], "e": msg, "t": secs}
                                                    (rewritten script tests, judged in the parent:
                                                    see harness.verdicts.script_tests)
    {"done": true, "deferred": n, "capped": m}      (the counts when not 0: harness.sandbox.timing;
                                                    "t" is always the test's own time)

No expected value, nor an expression that computes one, is in the job: the parent holds
them (expected sides written as expressions were computed beforehand, in a job of their
own whose program is the problem's prelude: harness.verdicts.expected), so the program cannot read
or steer them. Values leave as plain data (harness.verdicts.plaindata); the parent compares them. The
program may write to this pipe too: nothing on it is a verdict. A forged value is one the
program could have returned, a forged exception or timeout a failure it owns; a duplicate,
a gap or a blank line is tampering (a failed verdict); passed/failed is taken only for tests
documented as judged in-process. The per-test alarms here are for precise timeouts; the
zygote keeps its own per-test clock, which a program that cancels its alarms cannot stop.

The child's other parts, each a module of its own: ``timing`` (the per-test alarm),
``observers`` (script tests run in-process, and rewritten scripts' reports), ``ground`` and
``settle`` (the interpreter state those stand on, recorded in the zygote and put back before
and after each script test), ``warmup`` (the frameworks imported and run once in the
zygote). Only the standard library, those modules, harness.sandbox.protocol and
harness.verdicts' plaindata, script_reports and script_tests are imported: they all run in
the sandbox.
"""

from __future__ import annotations

import builtins
import functools
import gc
import hashlib
import importlib
import io
import itertools
import json
import os
import pickle
import random
import signal
import sys
import time
import types

from codea1.harness.sandbox import ground, protocol
from codea1.harness.sandbox.observers import script_test
from codea1.harness.sandbox.protocol import write_all
from codea1.harness.sandbox.settle import THREAD_COUNTERS, stand_on
from codea1.harness.sandbox.settle import settle as settle_ground
from codea1.harness.sandbox.timing import TestTimeout, counts, describe, on_alarm, open_clock, timed, timeout_message
from codea1.harness.sandbox.warmup import warm_up
from codea1.harness.verdicts import plaindata

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


FRAMEWORKS = protocol.FRAMEWORKS
_PRISTINE_BUILTINS: dict | None = None  # the builtins as no program touched them (prepare)


def prepare(frameworks: tuple = FRAMEWORKS, imports=()) -> tuple[list[str], dict[str, str]]:
    """Made once in the zygote, before any child: the test frameworks, warmed up, and the
    ground they stand on (``harness.sandbox.ground``), the builtins as no program has
    touched them, the alarm handler and the audit hook (``ground.audit``). A child that made them itself
    wrote to the page of every builtin object (the copy's references), and the kernel copies
    each page a child writes: a one-test child's CPU went from 2.2 to 1.9 ms.

    ``frameworks``: of FRAMEWORKS, those to prepare (unittest always). Each costs every child
    its fork: unittest.mock (it imports asyncio) about 0.6 ms, pytest and its first run about
    0.8 ms (measured on a 2-core VM). A zygote that runs no KodCode-style script may leave
    pytest out: a pytest script then imports it afresh in the child, after the ground was put
    back (its own modules then are not part of the ground).

    ``imports``: libraries the programs import (a benchmark's: BigCodeBench's pandas,
    matplotlib and scikit-learn cost a child about a second of CPU each time it imported
    them itself), imported after the ground is recorded, so that their modules are no more
    part of it than a program's own import would make them. Returns (imported, {name: why
    not}) for the ready report; a library that does not import here is left to the program."""
    global _PRISTINE_BUILTINS
    if _PRISTINE_BUILTINS is not None:
        return [], {}
    warm_up(frameworks)
    _PRISTINE_BUILTINS = dict(builtins.__dict__)
    signal.signal(signal.SIGALRM, on_alarm)
    recorded, codes = ground.build()
    imported, failed = [], {}
    for name in imports:
        try:
            importlib.import_module(name)
            imported.append(name)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: reported, never the zygote's end
            failed[name] = describe(exc)
    if imported or failed:
        # What the imports did to the ground (registries, caches, re's compiled patterns:
        # pandas compiles hundreds) is the zygote's doing, no program's: recorded as the
        # ground, or every script test would put it back and recompile it (0.15 s a test).
        recorded = ground.record_again()
    stand_on(recorded)
    ground.install_audit(codes, THREAD_COUNTERS)
    # What the zygote holds now lives as long as it does: out of the gc's sight, a child's
    # collections do not walk (and so copy) the pages of the frameworks and the ground.
    gc.freeze()
    return imported, failed


class _Channel:
    """Writes each record at once, so a process killed mid-test has reported every test
    before it (a crash is pinned on the right test)."""

    def __init__(self, fd: int):
        self.fd = fd

    def _write(self, line: str) -> None:
        write_all(self.fd, line.encode())

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


# Builtins a test's wrapper may apply to the call's result (harness.verdicts.asserts.WRAP_CALLS).
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
    # Before the program loads: what the channel is (an event checks it is still that), and,
    # where a test is judged in-process, the key that seals its pass (protocol.verdict_seal).
    # The sealer is held by the map below alone, on this frame's value stack: no name in any
    # frame refers to it, so the program's code, which can read every frame's names
    # (sys._getframe), can neither call it nor read its key. gc walks, which could find it,
    # are refused in a child with script tests (ground.audit).
    identity = _identity(channel_fd)
    sealed = any(test.get("kind") == "script" and not test.get("report") for test in job["tests"])
    try:
        for _sent in map(_send_verdict, _run(job, channel, identity), itertools.repeat(channel_fd),
                         itertools.repeat(functools.partial(protocol.verdict_seal, _announce_key(channel_fd))
                                          if sealed else None)):
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):  # the process ends with os._exit: no implicit flush
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the program may have replaced or closed them
                pass


def _identity(fd: int) -> tuple:
    """(device, inode) of the results channel, as the child got it."""
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


def _announce_key(fd: int) -> bytes:
    """A fresh key for this child's in-process verdicts, written as its first record."""
    key = os.urandom(protocol.SEAL_KEY_BYTES)
    write_all(fd, b'{"seal":"%s"}\n' % key.hex().encode())
    return key


def _send_verdict(record: dict, fd: int, seal, _quote=_JSON_STR, _float=float.__repr__, _write=write_all,
                  _str=str, _dict=dict, _type=type, _float_type=float) -> None:
    """The record of a script test judged in-process, its pass sealed. Written with functions
    bound here, before any program ran, and the sealer let go before the write: no code of
    the program's runs while this frame names it."""
    i, status = record["i"], record["s"]
    message, took = record.get("e", ""), record.get("t", 0.0)
    line = '{"i":%d,"s":%s,"e":%s,"t":%s' % (i, _quote(status), _quote(message if _type(message) is _str else "?"),
                                             _float(took if _type(took) is _float_type else 0.0))
    details = record.get("d")
    if _type(details) is _dict and details:
        line += ',"d":{%s}' % ",".join([_quote(k if _type(k) is _str else "?") + ":" + _quote(v if _type(v) is _str else "?")
                                         for k, v in details.items()])
    if status == "passed" and seal is not None:
        line += ',"m":"%s"' % seal(i)
    del seal
    _write(fd, (line + "}\n").encode())


def _run(job: dict, channel: _Channel, identity: tuple):
    """The job's tests, run in order; yields the records of script tests judged in-process
    (``run`` seals and sends them), sends every other record itself."""
    if _PRISTINE_BUILTINS is None:
        prepare()
    # Every program starts from the job's random state (0 unless validation asks for another
    # to find tests that depend on it): verdicts repeat from run to run and zygote to zygote.
    random.seed(job.get("random_seed", 0))
    # numpy's global generator, where the zygote imported numpy (prepare's imports), holds the
    # state it drew there, the same in every child: drawn afresh, as the program's own import
    # of numpy would (its verdicts, flaky or not, stay as they were without the import).
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    open_clock()  # own time, not wall time, for the limits (harness.sandbox.timing)
    tests = job["tests"]
    limits = job["time_limits"]
    large_output = job.get("large_output", "value")
    entry_point = job.get("entry_point")
    prelude = job.get("prelude") or ""
    pristine_builtins = _PRISTINE_BUILTINS
    # The harness' own, into locals before the program can rebind the module's names.
    settle, arming, scripts, gc_on = settle_ground, ground.ARMING, ground.SCRIPTS, gc.enable

    # Phase 1: load the program as module `solution` (KodCode's tests import from it).
    # Written with os calls, not open(): every object the child touches costs a page copy
    # (its pages are the zygote's until written), and a text file object touches dozens.
    module = types.ModuleType("solution")
    module.__file__ = os.getcwd() + "/solution.py"  # the zygote made the directory: absolute, normalized
    fd = os.open("solution.py", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, job["code"].encode())
    finally:
        os.close(fd)
    sys.modules["solution"] = module
    next(arming)  # from here on: no audit hook of the program's (see ground.audit)
    if any(test.get("kind") == "script" for test in tests):
        next(scripts)  # nor trace or profile function, nor gc walk
    try:
        code_obj = compile(job["code"], module.__file__, "exec")
        timed(min(job.get("batch_timeout", 60.0), 60.0), exec, code_obj, module.__dict__)
    except TestTimeout:
        channel.send({"load": "error", "e": "timed out while loading the program"})
        return
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the program ends here
        channel.send({"load": "error", "e": describe(exc)})
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
                    # in-process: each part's failure is sent as it happens, on the channel as it was
                    test["events"] = (channel.fd, i, identity)
                    record, keep = script_test(test, module, limits[i], settle, threads or ground.stuck_reason(stuck),
                                               pristine_builtins)
                    record["i"] = i
                    if test.get("report"):
                        channel.send(record)
                    else:
                        yield record
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
                    value, took = timed(limits[i], _call_entry, entry, args, kwargs, wrap)
                else:
                    value, took = timed(limits[i], entry, *args)
            else:
                value, took = timed(limits[i], _evaluate_call, test["call"], namespace, test.get("items", False))
            try:
                text, digest = encode_for_channel(value, large_output)
            except plaindata.PlainDataError as exc:
                channel.send({"i": i, "s": "exception", "e": f"output is not plain data: {exc}", "t": took})
                continue
            channel.send_ok(i, text, digest, took)
        except TestTimeout as exc:
            channel.send({"i": i, "s": "timeout", "e": timeout_message(limits[i], exc), "t": time.perf_counter() - start})
            if job.get("fail_fast", True) or job.get("stop_on_timeout", False):
                break
        except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt are failures too
            channel.send({"i": i, "s": "exception", "e": describe(exc), "t": time.perf_counter() - start})
            if job.get("fail_fast", True):
                break
    # How many tests the machine's load would have timed out on the wall clock alone, and how
    # many timeouts the wall cap decided (harness.sandbox.timing): counted in results.json.
    channel.send({"done": True, **{k: v for k, v in counts.items() if v}})


