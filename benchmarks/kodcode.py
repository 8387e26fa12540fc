"""Benchmark ``kodcode``: KodCode training questions (question, reference solution, pytest
golden tests, function signature).

``--data`` is a KodCode JSON file (a JSON array, as the KodCode_*.json files) or JSON Lines,
or a directory of them. Golden tests come from the record's ``test_code``, a pytest module that
imports from ``solution``. A test function that is a plain sequence of
``assert f(...) <op> expected`` (no fixtures, no decorators, nothing but asserts that call
the solution's functions and builtins) becomes call tests, one per assert, judged by the
harness outside the program's process like any call test; the rest of the module (tests
with ``pytest.raises``, helpers, fixtures, prints) stays one pytest script run in the
sandbox, where the program under test is loaded as module ``solution``.
Licence of the data: CC BY-NC 4.0.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import os
from pathlib import Path

from codea1.harness.benchmark import Benchmark, BenchmarkError
from codea1.harness.hookspecs import hookimpl
from codea1.harness.jsonl import json_records
from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.script_tests import split_test
from codea1.harness.verdicts.syntax import parse_untrusted


class KodCode(Benchmark):
    name = "kodcode"
    description = "KodCode questions with reference solutions and pytest golden tests"
    min_time_limit = 1.0
    reference_failure_policy = "skip_task"
    frameworks = ("pytest",)  # its test modules; those the parent judges run as calls

    def min_time_limit_for(self, test: TestCase) -> float:
        # a pytest module needs 10 s at least: collection, imports
        return max(10.0, self.min_time_limit) if test.kind == "script" else self.min_time_limit

    def load(self) -> list[Problem]:
        path = self.options.data
        if not path:
            raise BenchmarkError("benchmark 'kodcode' needs --data PATH (a KodCode .json/.jsonl file or a directory)")
        files = sorted(Path(path).glob("*.json*")) if os.path.isdir(path) else [Path(path)]
        if not files or not all(f.is_file() for f in files):
            raise BenchmarkError(f"--data {path}: no KodCode .json/.jsonl file there")
        problems = []
        for file in files:
            for where, rec in json_records(str(file), BenchmarkError):
                for field in ("question_id", "question", "solution", "test_code"):
                    if field not in rec:
                        raise BenchmarkError(f"{where}: record {rec.get('question_id', '?')}: missing field {field!r}")
                info = (rec.get("test_info") or [{}])[0] or {}
                entry = info.get("function_name") or ""
                problems.append(Problem(
                    task_id=rec["question_id"], prompt=rec["question"], entry_point=entry, reference=rec["solution"],
                    tests=golden_tests(rec["test_code"], entry),
                    metadata={"function_declaration": info.get("function_declaration", ""),
                              "parameter_list": info.get("parameter_list", ""), "docstring": info.get("docstring", ""),
                              "subset": rec.get("subset", ""), "style": rec.get("style", "")}))
        return problems


BUILTINS = frozenset(dir(builtins))


def golden_tests(test_code: str, entry_point: str) -> list[TestCase]:
    """Call tests from the plain test functions, then the rest of the module as one pytest
    script (when any test is left in it)."""
    script = test_code if "from solution import" in test_code else "from solution import *\n" + test_code
    try:
        module = parse_untrusted(script)
    except SyntaxError:
        return [TestCase(id="pytest/script", kind="script", script=script, framework="pytest")]
    solution = {entry_point} | {a.asname or a.name for node in module.body
                                if isinstance(node, ast.ImportFrom) and node.module == "solution"
                                for a in node.names if a.name != "*"}
    calls, rest = [], []
    for node in module.body:
        converted = _plain_asserts(node, solution)
        if converted is None:
            rest.append(node)
        else:
            calls += [dataclasses.replace(test, id=f"pytest/{node.name}/{i}") for i, test in enumerate(converted)]
    left = [n for n in rest if (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
            or (isinstance(n, ast.ClassDef) and n.name.startswith("Test"))]
    if left:
        module.body = rest
        calls += split_test(TestCase(id="pytest/script", kind="script", script=ast.unparse(module), framework="pytest"))
    return calls


def _plain_asserts(node: ast.stmt, solution: set[str]) -> list[TestCase] | None:
    """The call tests of a plain test function, or None when it is anything more. Each
    assert must use a function of the solution, and no name but those and builtins."""
    if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test") and not node.decorator_list
            and not node.args.args and not node.args.kwonlyargs and not node.args.vararg and not node.args.kwarg):
        return None
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not all(isinstance(s, ast.Assert) and s.msg is None for s in body):
        return None
    tests = []
    for statement in body:
        bound = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        bound |= {a.arg for n in ast.walk(statement) if isinstance(n, ast.Lambda) for a in n.args.args}
        free = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        free -= bound
        if not free & solution or not free <= solution | BUILTINS:
            return None  # uses a name of the test module (a helper, a constant, an import)
        try:
            tests.append(parse_assert(ast.unparse(statement), golden=True))
        except AssertParseError:
            return None
    return tests


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(KodCode)
