"""The reports of a rewritten script test: made in the child, judged in the parent.

A script that ``script_tests`` rewrote calls report hooks instead of checking: the child
gives it a ``Reporter`` (its ``module`` installed as ``HOOK_MODULE``), which records each
reported value as plain data, each exception a raises-block caught, and each raises-block
that raised nothing. The child sends them in one record (``{"i": i, "s": "reports", "f":
{...}, "r": [...]}``); the parent reads it with ``parse_reports`` (anything malformed is a
protocol violation) and decides the test with ``judge_reports``, against the site table
that never left the parent: every report must hold (``check_site``: ==, pytest.approx,
assertAlmostEqual, numpy's array_equal and allclose, assertCountEqual, raises with an
optional pattern, all on plain data), every test function must have returned, reached
every required site and at least one site.

This module imports only the standard library and plaindata: the child imports it.
"""

from __future__ import annotations

import marshal
import math
import re
import types
from typing import Any

from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.plaindata import is_nan

HOOK_MODULE = "_codea1_report"
REPORT, RAISES, RAISES_CALL = "__codea1_report__", "__codea1_raises__", "__codea1_raises_call__"
UNSHADOW = "__codea1_unshadow__"
IMPORT_LINE = (f"from {HOOK_MODULE} import report as {REPORT}, raises as {RAISES}, "
               f"raises_call as {RAISES_CALL}, unshadow as {UNSHADOW}\n")
MAX_REPORTS = 10_000  # per script: a loop of sites must not flood the channel
SCALAR_TYPES = (int, float, complex, bool)
# numpy checks compared in the parent, with the keyword arguments each takes
ARRAY_CHECKS = {"array_equal": ("equal_nan",), "allclose": ("rtol", "atol", "equal_nan")}


# ---------------------------------------------------------------------------------------------
# The child's side: the hooks the rewritten script calls.


class Reporter:
    """Collects one script's reports: ``[site, "v", tree]`` for a value, ``[site, "e",
    [class names of the exception's MRO], message]`` for an exception a raises-site caught,
    ``[site, "n"]`` for a raises-site whose block raised nothing. Never raises into the test
    (a report is not a check), except the harness' own timeout (``passthrough``)."""

    def __init__(self, passthrough: type[BaseException], builtin_values: dict):
        """``builtin_values``: the builtins as no program touched them (the zygote's)."""
        self.reports: list[list] = []
        self.passthrough = passthrough
        self.overflow = False
        to_tree, error = plaindata.to_tree, plaindata.PlainDataError  # bound now: the program may patch the module
        dumps, loads = marshal.dumps, marshal.loads
        reports, passthrough_type = self.reports, passthrough

        def snapshot(value):
            # A tree may share lists with the value (plaindata's fast path): copied now, so
            # that the test mutating the object after the check does not change what it saw.
            return loads(dumps(to_tree(value, arrays=True)))

        def add(entry: list) -> None:
            if len(reports) < MAX_REPORTS:
                reports.append(entry)
            else:
                self.overflow = True

        def report(site, value):
            try:
                add([site, "v", snapshot(value)])
            except error as exc:
                add([site, "x", f"not plain data: {exc}"[:500]])

        def caught(site, exc):
            if isinstance(exc, passthrough_type):
                return False
            try:
                names = [c.__name__ for c in type(exc).__mro__ if type(c.__name__) is str]
                message = str(exc)
                message = message[:2000] if type(message) is str else ""
            except BaseException:  # noqa: BLE001 - a hostile exception: reported by its type alone
                names, message = [type(exc).__name__], ""
            add([site, "e", names, message])
            return True

        class Raises:
            def __init__(self, site):
                self.site, self.value, self.exception, self.type = site, None, None, None

            def __enter__(self):
                return self

            def __exit__(self, kind, exc, tb):
                if exc is None:
                    add([self.site, "n"])
                    return False
                self.value = self.exception = exc
                self.type = kind
                return caught(self.site, exc)

        def raises_call(site, fn, *args, **kwargs):
            with Raises(site):
                fn(*args, **kwargs)

        def unshadow(namespace, keep):
            for name in [k for k in namespace if k in builtin_values and k not in keep and not k.startswith("__")]:
                if namespace[name] is not builtin_values[name]:
                    del namespace[name]

        self.module = types.ModuleType(HOOK_MODULE)
        self.module.report, self.module.raises, self.module.raises_call = report, Raises, raises_call
        self.module.unshadow = unshadow


# ---------------------------------------------------------------------------------------------
# The parent's judgement.


def _almost(value: Any, expected: Any, tolerance: dict) -> bool:
    if type(value) is plaindata.Array and value.kind == "ndarray" and len(value.items) == 1:
        value = value.items[0]  # numpy: the one element's answer (a larger array is ambiguous)
    if value == expected:
        return True
    diff = abs(value - expected)
    if tolerance.get("delta") is not None:
        return diff <= tolerance["delta"]
    places = tolerance.get("places")
    return round(diff, 7 if places is None else places) == 0


def _approx(value: Any, expected: Any, tolerance: dict) -> bool:
    """pytest.approx on plain data: numbers within rel (default 1e-6) or abs (default 1e-12)
    of each other; containers element by element; anything else by ==. An array against a
    number: every element (pytest's rule); against a list: its rows."""
    if type(value) is plaindata.Array:
        if type(expected) in (int, float, complex):
            return all(_approx(v, expected, tolerance) for v in value.items)
        if type(expected) not in (list, tuple):
            return value == expected
        # item by item, shapes equal (never nested lists: an array of 64 dimensions would
        # make 64 lists per item)
        try:
            expected_array = plaindata.as_array(expected)
        except ValueError:
            return False
        return value.shape == expected_array.shape and \
            all(_approx(v, e, tolerance) for v, e in zip(value.items, expected_array.items))
    if type(expected) in (list, tuple):
        return type(value) in (list, tuple) and len(value) == len(expected) and \
            all(_approx(v, e, tolerance) for v, e in zip(value, expected))
    if type(expected) is dict:
        return type(value) is dict and value.keys() == expected.keys() and \
            all(_approx(value[k], expected[k], tolerance) for k in expected)
    if type(expected) in (int, float, complex) and type(value) in (int, float, complex) and type(value) is not bool:
        if value == expected:
            return True
        if isinstance(expected, float) and (math.isinf(expected) or math.isnan(expected)):
            return False
        rel, absolute = tolerance.get("rel"), tolerance.get("abs")
        limit = max(abs(expected) * (1e-6 if rel is None else rel), 1e-12 if absolute is None else absolute)
        if rel is not None and absolute is None:
            limit = max(abs(expected) * rel, 1e-12)
        return abs(value - expected) <= limit
    return value == expected


def _array_equal(value: Any, expected: Any, tolerance: dict) -> bool:
    """numpy.array_equal on plain data: False when either is not an array (ragged)."""
    try:
        a, b = plaindata.as_array(value), plaindata.as_array(expected)
    except ValueError:
        return False
    nan = bool(tolerance.get("equal_nan"))
    return a.shape == b.shape and all(x == y or (nan and is_nan(x) and is_nan(y)) for x, y in zip(a.items, b.items))


def _allclose(value: Any, expected: Any, tolerance: dict) -> bool:
    """numpy.allclose on plain data: |a - b| <= atol + rtol * |b| everywhere (b: its second
    argument), arrays broadcast together; infinities equal to themselves only."""
    rtol, atol = tolerance.get("rtol", 1e-05), tolerance.get("atol", 1e-08)
    nan = bool(tolerance.get("equal_nan"))
    a, b = (value, expected) if tolerance.get("actual_first", True) else (expected, value)

    def close(x, y):
        if type(x) not in SCALAR_TYPES or type(y) not in SCALAR_TYPES or type(rtol) not in SCALAR_TYPES \
                or type(atol) not in SCALAR_TYPES:
            raise TypeError("allclose of a value that is not a number")
        if is_nan(x) or is_nan(y):
            return nan and is_nan(x) and is_nan(y)
        if math.inf in (abs(x), abs(y)):
            return x == y
        return abs(x - y) <= atol + rtol * abs(y)

    return all(plaindata.elementwise(close, a, b))


def _count_equal(value: Any, expected: list) -> bool:
    if type(value) not in (list, tuple, set, frozenset, dict, str, plaindata.Array):
        return False
    left = list(expected)
    for item in value:
        for k, e in enumerate(left):
            if item == e:
                del left[k]
                break
        else:
            return False
    return not left


def check_site(site: dict, kind: str, payload: list) -> tuple[bool, str]:
    """One report against its site: (holds, message when it does not)."""
    from codea1.harness.verdicts.judge import compare, short_repr  # the judge imports this module

    op, expected, tolerance = site["op"], plaindata.from_tree(site["expected"]), site["tolerance"] or {}
    where = f"line {site['line']}"
    if op == "raises":
        if kind == "n":
            return False, f"{where}: no exception, expected {' or '.join(expected)}"
        if kind != "e":
            return False, f"{where}: expected {' or '.join(expected)}, the block did not end in one"
        names, message = payload
        if not set(expected) & set(names):
            return False, f"{where}: raised {names[0] if names else '?'}, expected {' or '.join(expected)}"
        if tolerance.get("match") is not None:
            try:
                if not re.search(str(tolerance["match"]), message):
                    return False, f"{where}: exception message {short_repr(message)} does not match"
            except re.error:
                return False, f"{where}: the pattern does not compile"
        return True, ""
    if kind == "x":
        return False, f"{where}: {payload[0]}"
    if kind != "v":
        return False, f"{where}: no value reported"
    value = plaindata.from_tree(payload[0])
    try:
        if op in ARRAY_CHECKS:
            ok = (_array_equal if op == "array_equal" else _allclose)(value, expected, tolerance)
            ok = ok != bool(tolerance.get("negate"))
        elif op == "approx":
            ok = _approx(value, expected, tolerance)
        elif op == "almost":
            ok = _almost(value, expected, tolerance)
        elif op == "count_equal":
            ok = _count_equal(value, expected)
        else:
            ok = compare(op, value, expected)
    except Exception:  # noqa: BLE001 - plain data only; a failing comparison is a failing check
        ok = False
    if ok:
        return True, ""
    if op in ("truthy", "falsy"):
        return False, f"{where}: got {short_repr(value)}, expected a {op} value"
    if op in ARRAY_CHECKS:
        op = ("not " if tolerance.get("negate") else "") + op
    return False, f"{where}: got {short_repr(value)}, expected {op} {short_repr(expected)}"


def parse_reports(rec: dict, table: dict) -> dict:
    """The child's "reports" record, checked against the test's site table (RecordParser):
    ``{"f": {function: "returned" | message}, "r": [...], "e": message}``. Raises ValueError
    on anything malformed (a protocol violation)."""
    functions, reports = rec.get("f"), rec.get("r")
    if type(functions) is not dict or type(reports) is not list:
        raise ValueError("reports record without 'f' and 'r'")
    n = len(table["sites"])
    checked = []
    for entry in reports:
        if type(entry) is not list or not entry or type(entry[0]) is not int or not 0 <= entry[0] < n:
            raise ValueError(f"bad report {str(entry)[:80]}")
        kind = entry[1] if len(entry) > 1 else None
        if kind == "v" and len(entry) == 3:
            plaindata.from_tree(entry[2])  # a malformed tree is a protocol violation (PlainDataError)
            checked.append([entry[0], "v", entry[2]])
        elif kind == "x" and len(entry) == 3:
            checked.append([entry[0], "x", str(entry[2])])
        elif kind == "e" and len(entry) == 4 and type(entry[2]) is list:
            checked.append([entry[0], "e", [str(x) for x in entry[2]], str(entry[3])])
        elif kind == "n" and len(entry) == 2:
            checked.append([entry[0], "n"])
        else:
            raise ValueError(f"bad report {str(entry)[:80]}")
    return {"f": {str(k): str(v) for k, v in functions.items()}, "r": checked, "e": str(rec.get("e", ""))}


def judge_reports(table: dict, reports: dict) -> tuple[bool, str]:
    """A parent-judged script's verdict from its reports: every report must hold, every test
    function must have returned, reached every required site and at least one site."""
    sites = table["sites"]
    reached: set[int] = set()
    for entry in reports["r"]:
        reached.add(entry[0])
        ok, message = check_site(sites[entry[0]], entry[1], entry[2:])
        if not ok:
            return False, f"{sites[entry[0]]['function']}: {message}"
    if reports.get("e"):
        return False, reports["e"]
    outcomes = reports["f"]
    for function in table["functions"]:
        status = outcomes.get(function)
        if status is None:
            return False, f"{function}: did not run"
        if status != "returned":
            return False, f"{function}: {status}"
        own = [k for k, s in enumerate(sites) if s["function"] == function]
        missing = [sites[k]["line"] for k in own if sites[k]["required"] and k not in reached]
        if missing:
            return False, f"{function}: returned before the check on line {missing[0]}"
        if not any(k in reached for k in own):
            return False, f"{function}: no check was reached"
    return True, ""
