"""Benchmark ``ult``: UnLeakedTestBench (Test LLM evaluation).

Reads ULT_Lite's JSON array or the full set's JSON Lines (either may be gzip-compressed); each record has ``task_id``,
``func_name``, ``code`` (the reference function), ``prompt`` and ``test_list`` (a list of
assert strings, or its Python repr as in ULT_Lite).

Beware: ULT_Lite's ``test_list`` asserts are not valid golden tests (only about 15% hold on
the reference). They are a realistic sample of *generated* tests, which is how the test
evaluation uses them; as golden tests of code evaluation they reject correct code.
"""

from __future__ import annotations

import ast
import os

from codea1.harness.benchmark import Benchmark, BenchmarkError
from codea1.harness.hookspecs import hookimpl
from codea1.harness.jsonl import json_records
from codea1.harness.records import Problem
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.syntax import quiet_parsing

# The imports the reference evaluation puts above each function and its tests.
IMPORT_HEADER = ("import math\nimport re\nimport string\nimport itertools\nimport collections\nimport heapq\n"
                 "import functools\nimport random\nimport datetime\nfrom typing import *\n"
                 "from collections import *\n")


class UnLeakedTestBench(Benchmark):
    name = "ult"
    description = "UnLeakedTestBench (ULT_Lite JSON array or full ULT JSONL): functions + asserts"
    golden_tests_note = ("ULT's own asserts are not a ceiling: most do not hold on the reference (about 15% of "
                         "ULT_Lite's are valid); they are a sample of generated-looking tests")

    def load(self) -> list[Problem]:
        path = self.options.data
        if not path:
            raise BenchmarkError("benchmark 'ult' needs --data PATH (ULT_Lite.json or the full set's .jsonl)")
        if not os.path.isfile(path):
            raise BenchmarkError(f"--data {path}: {'a directory, not a file' if os.path.isdir(path) else 'no such file'}")
        problems = []
        for where, rec in json_records(path, BenchmarkError):
            for field in ("task_id", "func_name", "code"):
                if field not in rec:
                    raise BenchmarkError(f"{where}: task {rec.get('task_id', '?')}: missing field {field!r}")
            raw_tests = rec.get("test_list", [])
            if isinstance(raw_tests, str):
                try:
                    with quiet_parsing():
                        raw_tests = ast.literal_eval(raw_tests)
                except (ValueError, SyntaxError) as exc:
                    raise BenchmarkError(f"{where}: task {rec['task_id']}: field 'test_list' is not a list: {exc}") from None
            tests = []
            for i, src in enumerate(raw_tests):
                try:
                    # ULT's asserts are a sample of generated tests: outside the paper's form,
                    # they are kept marked in-process (evaluate-tests refuses them by default).
                    tests.append(parse_assert(src, rec["func_name"], f"assert/{i}", allow_other_forms=True))
                except AssertParseError as exc:
                    raise BenchmarkError(f"{where}: task {rec['task_id']}: field 'test_list'[{i}]: {exc.reason}") from None
            problems.append(Problem(task_id=str(rec["task_id"]), prompt=rec.get("prompt", ""),
                                    entry_point=rec["func_name"], reference=IMPORT_HEADER + rec["code"],
                                    tests=tests, prelude=IMPORT_HEADER))
        return problems

    def sample_code(self, problem, record):
        if "solution" in record:
            return IMPORT_HEADER + record["solution"]
        return IMPORT_HEADER + record["completion"]


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(UnLeakedTestBench)
