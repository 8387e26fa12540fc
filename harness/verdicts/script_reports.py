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
import sys
import types
from typing import Any

from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.plaindata import is_nan

HOOK_MODULE = "_codea1_report"
REPORT, RAISES, RAISES_CALL = "__codea1_report__", "__codea1_raises__", "__codea1_raises_call__"
UNSHADOW, LEAVES, FRAME = "__codea1_unshadow__", "__codea1_leaves__", "__codea1_frame__"
IMPORT_LINE = (f"from {HOOK_MODULE} import report as {REPORT}, raises as {RAISES}, "
               f"raises_call as {RAISES_CALL}, unshadow as {UNSHADOW}, leaves as {LEAVES}, frame as {FRAME}\n")
MAX_REPORTS = 100_000  # per script: a loop of sites must not flood the channel
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
        dumps, loads, iterate, plain_leaf_now = marshal.dumps, marshal.loads, list, plain_leaf
        not_plain = plaindata.NotPlain
        reports, passthrough_type = self.reports, passthrough

        def snapshot(value):
            # A tree may share lists with the value (plaindata's fast path): copied now, so
            # that the test mutating the object after the check does not change what it saw.
            return loads(dumps(to_tree(value, arrays=True)))

        def snapshot_plain(value):
            # most values are plain data as they come: one walk; a value that is not is made
            # comparable first (dates, dtypes, paths: plain_leaf) and walked again
            try:
                return loads(dumps(to_tree(value, strict=True, arrays=True)))
            except not_plain:
                return snapshot(plain_leaf_now(value))

        def add(entry: list) -> None:
            if len(reports) < MAX_REPORTS:
                reports.append(entry)
            else:
                self.overflow = True

        def report(site, value):
            try:
                add([site, "v", snapshot_plain(value)])
            except error as exc:
                add([site, "x", f"not plain data: {exc}"[:500]])

        def leaves(site, *thunks):
            # each leaf of a check the parent decides (harness.verdicts.check_exprs): its
            # value, or the exception computing it raised (read only if the check reads it)
            out = []
            for thunk in thunks:
                try:
                    value = thunk()
                    tree = snapshot_plain(value)
                    if type(tree) is dict and "o" in tree:
                        # a view or an iterator (dict.values(), a generator): its items, as iterating it gives
                        try:
                            items = iterate(value)
                        except Exception:  # noqa: BLE001 - not iterable: the parent sees an opaque value
                            items = None
                        if items is not None:
                            tree = snapshot(items)
                    out.append([True, tree])
                except passthrough_type:
                    raise
                except error as exc:
                    out.append([False, f"not plain data: {exc}"[:500]])
                except Exception as exc:  # noqa: BLE001 - the test's own error, decided in the parent
                    try:
                        out.append([False, f"{type(exc).__name__}: {exc}"[:500]])
                    except BaseException:  # noqa: BLE001 - a hostile exception: its type alone
                        out.append([False, "an exception"])
            add([site, "l", out])

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
        self.module.unshadow, self.module.leaves, self.module.frame = unshadow, leaves, describe_frame


DATE_TAG = "\x00"  # a tagged date or time never equals a string a program could return


def plain_leaf(value):
    """A value as the parent can compare it: a numpy dtype as its name (numpy's dtype equals
    its name); a date, time or datetime (Python's, pandas', numpy's) as ``"\\x00datetime:" +
    ISO text`` (equal, and ordered, as the values are, within one kind and time zone), also
    inside a pandas Series or Index or a numpy array of them; a timedelta as its seconds; a
    path as ``"\\x00path:" + text``; a time zone as ``"\\x00tzinfo:" + name``; a list or
    tuple of such, item by item; anything else as it is."""
    t = type(value)
    module = getattr(t, "__module__", "") or ""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.dtype):
        return str(value)
    tagged = _tagged_time(value, t, module)
    if tagged is not None:
        return tagged
    if module == "pathlib" and hasattr(value, "as_posix"):
        return f"{DATE_TAG}path:{value.as_posix()}"
    zones = sys.modules.get("datetime")
    if zones is not None and isinstance(value, zones.tzinfo):
        return f"{DATE_TAG}tzinfo:{value}"
    if t.__name__ in ("Series", "Index", "DatetimeIndex", "TimedeltaIndex") and module.startswith("pandas") \
            and len(value) <= 2_000_000:
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        if kind in ("M", "m") or (kind == "O" and len(value) and any(
                isinstance(v, numpy.dtype) or _tagged_time(v, type(v), getattr(type(v), "__module__", "") or "")
                is not None for v in value.tolist())):
            items = [None if str(v) == "NaT" else plain_leaf(v) for v in value.tolist()]
            pandas = sys.modules["pandas"]
            return pandas.Series(items, index=value.index, dtype=object) if t.__name__ == "Series" \
                else pandas.Index(items, dtype=object)
    if numpy is not None and t is numpy.ndarray and value.dtype.kind in ("M", "m") and value.size <= 2_000_000:
        unit = value.astype("datetime64[us]" if value.dtype.kind == "M" else "timedelta64[us]")
        return numpy.array([plain_leaf(v) for v in unit.astype(object).ravel().tolist()],
                           dtype=object).reshape(value.shape)
    if t in (list, tuple) and len(value) <= 2_000_000:
        items = [plain_leaf(v) for v in value]
        return items if t is list else tuple(items)
    if t is dict and len(value) <= 2_000_000:
        return {k: plain_leaf(v) for k, v in value.items()}
    return value


def _tagged_time(value, t, module: str):
    name = t.__name__
    if name in ("datetime", "Timestamp", "date", "time") and (module == "datetime" or module.startswith("pandas")) \
            and hasattr(value, "isoformat"):
        if str(value) == "NaT":
            return None
        kind = "datetime" if name in ("datetime", "Timestamp") else name
        return f"{DATE_TAG}{kind}:{value.isoformat()}"
    if name in ("datetime64", "timedelta64") and module == "numpy":
        return plain_leaf(value.item()) if value.item() is not None and not isinstance(value.item(), int) else None
    if name in ("timedelta", "Timedelta") and hasattr(value, "total_seconds"):
        return value.total_seconds()
    return None


def describe_frame(value):
    """A pandas DataFrame or Series as pandas' testing assertions see it, in plain data:
    ``[kind, index, index names, columns (a Series: [its name]), column names, dtypes,
    columns' values]`` (items that are not plain scalars, e.g. Timestamps, as their repr).
    Computed in the child for the program's value and in the slice for the expected one;
    anything else than a DataFrame or Series is described as ``["other", repr]``."""
    kind = type(value).__name__
    if kind not in ("DataFrame", "Series") or not type(value).__module__.startswith("pandas"):
        return ["other", kind]
    frame = value if kind == "DataFrame" else value.to_frame()
    columns = [_plain_item(c) for c in frame.columns.tolist()]
    dtypes = [str(t) for t in frame.dtypes.tolist()]
    values = [[_plain_item(v) for v in frame.iloc[:, j].tolist()] for j in range(frame.shape[1])]
    names = [_plain_item(n) for n in frame.index.names]
    column_names = [_plain_item(n) for n in frame.columns.names] if kind == "DataFrame" else [_plain_item(value.name)]
    return [kind, [_plain_item(i) for i in frame.index.tolist()], names, columns, column_names, dtypes, values]


def _plain_item(v):
    if v is None or type(v) in (int, float, str, bool, complex, bytes):
        return v
    if type(v) is tuple:
        return tuple(_plain_item(x) for x in v)
    return repr(v)


# ---------------------------------------------------------------------------------------------
# The parent's judgement.


def _close(x, y, rtol: float, atol: float, nan: bool = True) -> bool:
    """numpy's isclose for two plain scalars (NaN equal to NaN when ``nan``); other items by ==."""
    if type(x) in SCALAR_TYPES and type(y) in SCALAR_TYPES and type(x) is not bool and type(y) is not bool:
        if is_nan(x) or is_nan(y):
            return nan and is_nan(x) and is_nan(y)
        if math.inf in (abs(x), abs(y)):
            return x == y
        return abs(x - y) <= atol + rtol * abs(y)
    if is_nan(x) and is_nan(y):
        return nan
    return plaindata.equal(x, y)


def _frame_equal(value, expected, tolerance: dict) -> tuple[bool, str]:
    """pandas' assert_frame_equal / assert_series_equal on two ``describe_frame`` values."""
    if type(value) not in (list, tuple) or type(expected) not in (list, tuple) or len(value) != 7 \
            or len(expected) != 7:
        return False, "not a DataFrame or Series"
    kind, index, names, columns, column_names, dtypes, values = value
    e_kind, e_index, e_names, e_columns, e_column_names, e_dtypes, e_values = expected
    if kind != e_kind:
        return False, f"a {kind}, expected a {e_kind}"
    if len(index) != len(e_index) or len(columns) != len(e_columns):
        return False, f"shape ({len(index)}, {len(columns)}), expected ({len(e_index)}, {len(e_columns)})"
    exact = bool(tolerance.get("check_exact", False))
    rtol, atol = (0.0, 0.0) if exact else (tolerance.get("rtol", 1e-05), tolerance.get("atol", 1e-08))
    if not all(_close(a, b, rtol, atol) for a, b in zip(index, e_index)):
        return False, "the index differs"
    if kind == "DataFrame" and not all(plaindata.equal(a, b) or (is_nan(a) and is_nan(b))
                                       for a, b in zip(columns, e_columns)):
        return False, "the columns differ"  # (a Series' "column" is its name: checked with the names)
    if tolerance.get("check_names", True) and (names != e_names or column_names != e_column_names):
        return False, "the names differ"
    if tolerance.get("check_dtype", True) and dtypes != e_dtypes:
        return False, f"dtypes {dtypes[:5]}, expected {e_dtypes[:5]}"
    for j, (column, e_column) in enumerate(zip(values, e_values)):
        if len(column) != len(e_column) or not all(_close(a, b, rtol, atol) for a, b in zip(column, e_column)):
            return False, f"column {j} differs"
    return True, ""


def _array_almost(value, expected, tolerance: dict) -> bool:
    """numpy.testing.assert_array_almost_equal: |desired - actual| < 1.5 * 10**-decimal item
    by item, shapes equal (a number against an array: every item); NaN where both are."""
    limit = 1.5 * 10.0 ** (-tolerance.get("decimal", 6))

    def almost(x, y):
        if x is None or y is None:  # a masked item (numpy.ma): not compared, as numpy's testing does
            return True
        if is_nan(x) or is_nan(y):
            return is_nan(x) and is_nan(y)
        if type(x) not in SCALAR_TYPES or type(y) not in SCALAR_TYPES:
            return plaindata.equal(x, y)
        return x == y or abs(x - y) < limit

    if type(value) in SCALAR_TYPES and type(expected) in SCALAR_TYPES:
        return almost(value, expected)
    try:
        a, b = plaindata.as_array(value), plaindata.as_array(expected)
    except ValueError:
        return False
    if a.shape != b.shape and a.shape and b.shape:
        return False
    return all(plaindata.elementwise(almost, a, b))


def _mock_calls(op: str, calls, expected) -> bool:
    """A mock's ``[[args], {kwargs}]`` per call against the expected (args, kwargs)."""
    if type(calls) is not list or type(expected) not in (list, tuple) or len(expected) != 2:
        return False
    want = [list(expected[0]), dict(expected[1])]
    same = [type(c) is list and len(c) == 2 and plaindata.equal(c[0], want[0]) and plaindata.equal(c[1], want[1])
            for c in calls]
    if op == "mock_called_once_with":
        return len(calls) == 1 and same[0]
    if op == "mock_called_with":
        return bool(calls) and same[-1]
    return any(same)  # mock_any_call


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
    if op == "expr":
        if kind != "l":
            return False, f"{where}: no value reported"
        from codea1.harness.verdicts.check_exprs import decide

        leaves = [[ok, plaindata.from_tree(tree) if ok else tree] for ok, tree in payload[0]]
        ok, why = decide(expected["source"], leaves, [plaindata.from_tree(v) for v in site["values"]],
                         expected["numpy"])
        return (True, "") if ok else (False, f"{where}: {expected['text']} does not hold{': ' + why if why else ''}")
    if kind == "x":
        return False, f"{where}: {payload[0]}"
    if kind != "v":
        return False, f"{where}: no value reported"
    value = plaindata.from_tree(payload[0])
    if tolerance.get("pair"):  # both sides computed at run time: [actual, desired]
        if type(value) not in (list, tuple) or len(value) != 2:
            return False, f"{where}: no pair reported"
        value, expected = value
    if op == "frame":
        a, b = (value, expected) if tolerance.get("actual_first", True) else (expected, value)
        ok, why = _frame_equal(a, b, tolerance)
        if tolerance.get("negate"):
            ok, why = not ok, "the frames are equal"
        return (True, "") if ok else (False, f"{where}: {why}")
    try:
        if op == "array_almost":
            ok = _array_almost(value, expected, tolerance)
        elif op.startswith("mock_"):
            ok = _mock_calls(op, value, expected)
        elif op in ARRAY_CHECKS:
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
        elif kind == "l" and len(entry) == 3 and type(entry[2]) is list \
                and all(type(x) is list and len(x) == 2 and type(x[0]) is bool for x in entry[2]):
            for ok, tree in entry[2]:
                if ok:
                    plaindata.from_tree(tree)
            checked.append([entry[0], "l", [[ok, tree if ok else str(tree)] for ok, tree in entry[2]]])
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
        if any(sites[k]["required"] for k in own) and not any(k in reached for k in own):
            # (a function whose checks all sit in branches or loops may reach none, as it would
            # in its own framework)
            return False, f"{function}: no check was reached"
    return True, ""
