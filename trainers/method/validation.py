"""Validation of generated tests for training (the paper's Step 3): a test is valid when it
parses, its call is unique within its suite (the same values reaching the function:
``call_key``), it runs on the reference and its answer is
right; a wrong answer is corrected to the reference's and kept (still invalid); the rest is
dropped. Checking against the reference is the core's (``harness.verdicts.validity.check_suites``,
shared with ``evaluate-tests``); what training adds is here.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import _calls
from codea1.harness.verdicts.syntax import parse_untrusted
from codea1.harness.verdicts.validity import check_suites, parse_suite

# Statuses of a generated test, position by position: the test keeps its place in the suite.
VALID, WRONG, ERROR, UNPARSED, DUPLICATE, MISSING = "valid", "wrong", "error", "unparsed", "duplicate", "missing"
NONDETERMINISTIC = "nondeterministic"  # its outcome on the reference differs between two runs: dropped


@dataclass
class ValidatedSuite:
    """A generated suite after validation: per requested position its status, and the tests
    that run against the candidate codes (``kept``: the valid ones and the wrong ones
    corrected to the reference's answer), with their sources (what the Mistake Book stores)."""

    status: list[str]
    kept: list[TestCase]
    kept_sources: list[str]
    kept_times: list[float] = dataclasses.field(default_factory=list)  # the reference's time per kept test
    kept_calls: list[str] = dataclasses.field(default_factory=list)  # call_key per kept test

    def count(self, status: str) -> int:
        return self.status.count(status)


def call_key(test: TestCase, problem: Problem | None = None, exact: bool = False) -> str:
    """What makes two tests the same test of a reward: the values that reach the function.

    A data test's key is its arguments bound to the parameters of ``problem``'s reference
    (positional or keyword alike, defaults that are data filled in, ``float('inf')`` too; the
    entry point a ``def``, a lambda or an alias of the top level, also under ``if``/``try``),
    each value in a normal form in which values equal under ``==`` are one (``True``, ``1``
    and ``1.0``; a set and a frozenset; a dict in any order; every NaN). Its wrapper
    (``int(...)``, ``len(...)``, ``sorted(...)``), its operator and its answer are not part of
    it. Validation takes two tests of a suite for one when their keys match and the reference
    answers both alike (under ``==``): so ``add(7, 1)``, ``add(7.0, 1)``, ``add(7, True)``, ``add(a=7, b=1)`` and
    ``int(add(7, 1))`` are one test, paid once, while ``digits(5)`` and ``digits(5.0)``, which
    the reference answers differently, stay two. A test whose call is not plain data keeps its
    call expression up to spacing and quotes. ``exact``: values by type as well
    (``exact_form``): the key of what the function receives, ``5`` and ``5.0`` apart (what a
    vote runs once, and what makes two asserts one test whatever their wrappers)."""
    import ast

    if test.call is None:
        form = exact_form if exact else normal_form
        return repr(("call", _bound(test.args or [], test.kwargs or {}, _signature(problem), form)))
    source = test.call
    try:
        return ast.dump(parse_untrusted(source, mode="eval"))
    except SyntaxError:
        return source


def normal_form(value: Any) -> Any:
    """``value`` in a form where values equal under ``==`` are equal, containers by kind."""
    kind = type(value)
    if kind is bool or kind is int:
        return ("n", int(value))
    if kind is float:
        if value != value:
            return ("nan",)
        return ("n", int(value)) if value.is_integer() else ("n", value)
    if kind is complex:
        return normal_form(value.real) if value.imag == 0 else ("c", value.real, value.imag)
    if kind is list or kind is tuple:
        return ("l" if kind is list else "t", tuple(normal_form(v) for v in value))
    if kind is set or kind is frozenset:
        return ("set", tuple(sorted((normal_form(v) for v in value), key=repr)))
    if kind is dict:
        return ("d", tuple(sorted(((normal_form(k), normal_form(v)) for k, v in value.items()), key=repr)))
    return (kind.__name__, repr(value))


def exact_form(value: Any) -> Any:
    """``value`` with every type kept: ``5``, ``5.0`` and ``True`` apart, a set from a
    frozenset, a float by its repr (``-0.0``, ``nan``); a dict in any order is still one."""
    kind = type(value)
    if kind is list or kind is tuple:
        return (kind.__name__, tuple(exact_form(v) for v in value))
    if kind is set or kind is frozenset:
        return (kind.__name__, tuple(sorted((exact_form(v) for v in value), key=repr)))
    if kind is dict:
        return ("dict", tuple(sorted(((exact_form(k), exact_form(v)) for k, v in value.items()), key=repr)))
    return (kind.__name__, repr(value))


def repeats(seen: set, call: str, exact: str, answer: Any) -> bool:
    """Whether a test of a suite repeats one before it (and if not, it is remembered in
    ``seen``): the same values, types and all, reach the function (``exact``), whatever
    wrapper each puts around the call; or values equal under ``==`` (``call``) that the
    reference (or the vote) answers alike (``answer``)."""
    if ("exact", exact) in seen or ("answered", call, answer) in seen:
        return True
    seen.update({("exact", exact), ("answered", call, answer)})
    return False


def _bound(args: Sequence[Any], kwargs: Mapping[str, Any], signature: tuple | None, form=normal_form) -> tuple:
    """The call's arguments by parameter (in ``form``), as Python would bind them to the
    reference's signature; by position and keyword as written where there is no signature or
    the call would not bind."""
    written = (tuple(form(a) for a in args), tuple(sorted((k, form(v)) for k, v in kwargs.items())))
    if signature is None:
        return written
    positional, keyword_only, defaults, varargs, varkw = signature
    bound: dict[str, Any] = dict(zip(positional, args))
    extra = list(args[len(positional):])
    if extra and not varargs:
        return written
    for name, value in kwargs.items():
        if name in bound or (name not in positional and name not in keyword_only and not varkw):
            return written
        bound[name] = value
    for name, value in defaults.items():
        bound.setdefault(name, value)
    return (tuple(sorted((k, form(v)) for k, v in bound.items())), tuple(form(a) for a in extra))


def _signature(problem: Problem | None) -> tuple | None:
    """(positional parameters, keyword-only ones, defaults that are data, *args?, **kwargs?)
    of the entry point as the reference's top level defines it; None where it does not."""
    if problem is None or not problem.reference or not problem.entry_point:
        return None
    return _parsed_signature(problem.reference, problem.entry_point)


@functools.lru_cache(maxsize=256)
def _parsed_signature(reference: str, entry_point: str) -> tuple | None:
    from codea1.harness.verdicts import testdata

    try:
        tree = parse_untrusted(reference)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    a = _entry_arguments(tree.body, entry_point)
    if a is None:
        return None
    positional = [x.arg for x in (*a.posonlyargs, *a.args)]
    defaults = {}
    for name, node in [*zip(positional[len(positional) - len(a.defaults):], a.defaults),
                       *((x.arg, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)]:
        try:  # plain data, float('inf') and tuple() too, as a test's own arguments are read
            defaults[name] = testdata.evaluate(node)
        except (ValueError, SyntaxError, TypeError, ArithmeticError, MemoryError, RecursionError):
            continue  # a default that is no data (a name, a call): a call that omits it keeps its own key
    return tuple(positional), tuple(x.arg for x in a.kwonlyargs), defaults, a.vararg is not None, a.kwarg is not None


def _entry_arguments(body: list, entry_point: str):
    """The ``ast.arguments`` the module's top level gives ``entry_point`` (its last
    definition wins, as when the module runs): a ``def``; a lambda assigned to the name; another
    such function assigned to it (``entry = helper``); also inside top-level ``if``, ``try`` and
    ``with`` blocks. A decorated ``def`` is taken as it is written (``functools.lru_cache`` and
    ``wraps`` keep what it takes; a decorator that changes it is not seen). None where the name
    is something else (a class, a ``functools.partial``)."""
    import ast

    found: dict[str, ast.arguments | None] = {}

    def visit(statements: list) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[node.name] = node.args  # decorators too: functools' keep what it takes
            elif isinstance(node, ast.ClassDef):
                found[node.name] = None
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                args = (value.args if isinstance(value, ast.Lambda)
                        else found.get(value.id) if isinstance(value, ast.Name) else None)
                for target in targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = args
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                visit(node.body)

    visit(body)
    return found.get(entry_point)


def _answer_key(check, usable: int | None, position: int) -> str:
    """The reference's answer to the call of the test at ``position`` in a normal form under
    ``==``; what stands for it where the reference raised, was not stable or cannot be keyed."""
    if position in check.nondeterministic:
        return "nondeterministic"
    if check.reference is None or usable not in check.reference.values:
        return "raised"
    try:
        return repr(normal_form(check.reference.value(usable)))
    except (RecursionError, MemoryError, ValueError, TypeError):
        return f"unkeyed {position}"  # never the same as another's


def corrected(test: TestCase, value: Any, entry_point: str | None = None) -> tuple[TestCase, str] | None:
    """The test with the reference's answer: ``assert CALL == <value>``; None when the value
    has no literal form (an opaque object, a NaN) to write into an assert."""
    import ast

    text = repr(value)
    try:
        if ast.literal_eval(text) != value or type(ast.literal_eval(text)) is not type(value):
            return None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    source = f"assert {call_source(test, entry_point)} == {text}"
    return dataclasses.replace(test, op="==", expected=value, expected_source=None, source=source), source


def call_source(test: TestCase, entry_point: str | None) -> str:
    """The call side of a test's assert, as written (a data test keeps its source; its call
    side is the one that calls ``entry_point``)."""
    import ast

    if test.call is not None:
        return test.call
    node = parse_untrusted(test.source or "").body[0].test
    left, right = node.left, node.comparators[0]
    side = right if entry_point and _calls(right, entry_point) else left
    return ast.get_source_segment(test.source, side) or ast.unparse(side)


def _parse_once(parses: dict, problem: Problem, source: str, position: int) -> tuple[TestCase | None, str]:
    """``source`` at ``position`` parsed as ``parse_suite`` does (None when unusable), with
    its ``call_key`` and exact one; kept in ``parses``."""
    [test], _ = parse_suite(problem, [source])
    if test is not None:
        test.id = f"test/{position}"
    keys = ("", "") if test is None else (call_key(test, problem), call_key(test, problem, exact=True))
    parses[problem.task_id, source] = found = (test, *keys)
    return found


def validate_for_training(executor, suites: Mapping[str, tuple[Problem, Sequence[str]]], requested: int, *,
                          memory_mb: int = 4096) -> dict[str, ValidatedSuite]:
    """The paper's test validation, one executor batch for every suite: a test is valid when
    it parses, its call does not repeat one before it in the suite (``repeats``: the same
    values whatever the wrapper, or equal ones the reference answers alike), it runs on the
    reference and its answer is right. A wrong answer is corrected
    and kept (still invalid); the rest is dropped.
    Positions beyond what the writer produced, up to ``requested``, are "missing".

    The suites of one question share most of their asserts (M programs x N suites of K): each
    distinct assert of a question runs once on its reference, in one job per question."""
    positions: dict[str, list[tuple[str, TestCase | None, str, str]]] = {}  # suite -> per position: source, test, keys
    distinct: dict[str, dict[str, TestCase]] = {}  # question -> source -> test
    problems: dict[str, Problem] = {}
    # A question's suites repeat most of their asserts: each distinct source of a question is
    # parsed once (the parse is the same wherever it appears but for the test's id, that of
    # the position where it was first parsed; layouts rename every test they run).
    parses: dict[tuple[str, str], tuple[TestCase | None, str, str]] = {}
    for key, (problem, sources) in suites.items():
        problems[problem.task_id] = problem
        row = []
        for position, src in enumerate(list(sources)[:requested]):
            test, call, exact = parses.get((problem.task_id, src)) or _parse_once(parses, problem, src, position)
            if test is not None:
                distinct.setdefault(problem.task_id, {}).setdefault(src.strip(), test)
            row.append((src.strip(), test, call, exact))
        positions[key] = row
    checks = check_suites(executor, {task: (problems[task], list(tests.values())) for task, tests in distinct.items()},
                          memory_mb=memory_mb, recheck_outputs=True)
    verdicts: dict[tuple[str, str], tuple[str, TestCase | None, str, float]] = {}
    answers: dict[tuple[str, str], str] = {}  # the reference's answer to each test's call, as == sees it
    for task, tests in distinct.items():
        check = checks[task]
        usable = check.usable()
        for i, (src, test) in enumerate(tests.items()):
            answers[(task, src)] = _answer_key(check, usable.get(i), i)
            if i in check.nondeterministic:
                verdicts[(task, src)] = (NONDETERMINISTIC, None, "", 0.0)
            elif check.valid[i]:
                verdicts[(task, src)] = (VALID, check.tests[i], test.source or src, check.times[i])
            elif check.reference is not None and check.usable().get(i) in check.reference.values:
                fixed = corrected(test, check.reference_value(i), problems[task].entry_point)  # it ran: a wrong answer
                verdicts[(task, src)] = (WRONG, *(fixed or (None, "")), check.times[i])
            else:
                verdicts[(task, src)] = (ERROR, None, "", 0.0)
    out = {}
    for key, row in positions.items():
        task = suites[key][0].task_id
        suite = ValidatedSuite([], [], [], [])
        seen = set()
        for src, test, call, exact in row:
            if test is None:
                suite.status.append(UNPARSED)
                continue
            if repeats(seen, call, exact, answers[(task, src)]):
                suite.status.append(DUPLICATE)
                continue
            status, kept, kept_source, took = verdicts[(task, src)]
            suite.status.append(status)
            if kept is not None:
                suite.kept.append(kept)
                suite.kept_sources.append(kept_source)
                suite.kept_times.append(took)
                suite.kept_calls.append(call)
        suite.status += [MISSING] * (requested - len(suite.status))
        out[key] = suite
    return out
