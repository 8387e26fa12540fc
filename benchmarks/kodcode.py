"""Benchmark ``kodcode``: KodCode training questions (question, reference solution, pytest
golden tests, function signature).

``--data`` is a KodCode JSON file (a JSON array, as the KodCode_*.json files) or JSON Lines,
or a directory of them. Golden tests are the record's ``test_code``, a pytest module that
imports from ``solution``; the program under test is loaded as module ``solution``.
Licence of the data: CC BY-NC 4.0.
"""

from __future__ import annotations

import os
from pathlib import Path

from codea1.harness.benchmark import Benchmark, BenchmarkError
from codea1.harness.hookspecs import hookimpl
from codea1.harness.jsonl import json_records
from codea1.harness.records import Problem, TestCase


class KodCode(Benchmark):
    name = "kodcode"
    description = "KodCode questions with reference solutions and pytest golden tests"
    min_time_limit = 10.0  # a pytest module, collected and run as one test
    reference_failure_policy = "skip_task"

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
                test_code = rec["test_code"]
                if "from solution import" not in test_code:
                    test_code = "from solution import *\n" + test_code
                problems.append(Problem(
                    task_id=rec["question_id"], prompt=rec["question"], entry_point=entry, reference=rec["solution"],
                    tests=[TestCase(id="pytest/0", kind="script", script=test_code, framework="pytest")],
                    metadata={"function_declaration": info.get("function_declaration", ""),
                              "parameter_list": info.get("parameter_list", ""), "docstring": info.get("docstring", ""),
                              "subset": rec.get("subset", ""), "style": rec.get("style", "")}))
        return problems


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(KodCode)
