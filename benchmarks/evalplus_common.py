"""Shared by the ``humaneval+`` and ``mbpp+`` plugins: evalplus' loaders and oracles.

The data comes through evalplus' own loaders; ``--data PATH`` sets evalplus' override
variable (HUMANEVAL_OVERRIDE_PATH / MBPP_OVERRIDE_PATH) before evalplus is imported, and
without a path evalplus downloads as it always does. Expected outputs are the reference
solution's outputs on base + plus inputs, computed by running it through the executor (the
evaluation flow caches them), and compared here with evalplus' rules: exact match, then
``np.allclose`` with the task's atol (1e-6 once a float output was seen), and evalplus'
special oracles (HumanEval/32 by polynomial root, several MBPP tasks by set equality,
``is not None``, or a reference formula).

Options, evalplus' flags of the same names (``evaluate --base-only`` / ``--mini`` set them):
``base_only`` keeps the base tests only (the original HumanEval / MBPP inputs), as
``evalplus.evaluate --base-only`` runs them; ``mini`` reads the Mini data set (evalplus'
``HumanEvalPlus-Mini-*.jsonl.gz``: the same tasks with fewer plus inputs), the file beside
``--data`` (or ``--data`` itself when it names one), downloaded by evalplus without ``--data``.

The comparison runs in the trusted parent on plain data, so a returned object whose
``__eq__`` always answers True fails here, where evalplus (which compares in the child)
passes it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

from codea1.harness.benchmark import Benchmark, BenchmarkError, BenchmarkOptions
from codea1.harness.jsonl import first_row, json_records
from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.judge import Checker, short_repr


def mini_file(dataset: str, data: str) -> str:
    """The Mini data file that goes with ``data``: itself when its name says Mini, else the
    file of evalplus' Mini name beside it (HumanEvalPlus-v0.1.10.jsonl.gz ->
    HumanEvalPlus-Mini-v0.1.10.jsonl.gz). One line when it is not there."""
    folder, name = os.path.split(data)
    if "-Mini" in name:
        return data
    release = {"humaneval": "HumanEvalPlus", "mbpp": "MbppPlus"}[dataset]
    mini_name, n = re.subn(rf"^{release}(?=[-.])", f"{release}-Mini", name)
    where = os.path.join(folder, mini_name) if n else os.path.join(folder or ".", f"{release}-Mini-<version>.jsonl.gz")
    if not n or not os.path.isfile(where):
        note = "" if dataset == "humaneval" else " (evalplus publishes no MBPP+ Mini)"
        raise BenchmarkError(f"--mini: the {dataset}+ Mini data is not here: expected {where}, beside --data "
                             f"{data}, or --data naming a {release}-Mini-*.jsonl.gz file{note}")
    return where


def load_evalplus_problems(dataset: str, data: str | None, mini: bool = False) -> dict[str, dict]:
    env_var, module_name, getter, prefix = {
        "humaneval": ("HUMANEVAL_OVERRIDE_PATH", "evalplus.data.humaneval", "get_human_eval_plus", "HumanEval/"),
        "mbpp": ("MBPP_OVERRIDE_PATH", "evalplus.data.mbpp", "get_mbpp_plus", "Mbpp/"),
    }[dataset]
    if data:
        if not os.path.isfile(data):
            what = "a directory, not a file" if os.path.isdir(data) else "no such file"
            raise BenchmarkError(f"--data {data}: {what} (expected evalplus' {dataset} .jsonl or .jsonl.gz)")
        first = first_row(data, BenchmarkError)
        if not str(first.get("task_id", "")).startswith(prefix):
            raise BenchmarkError(f"--data {data}: not a {dataset}+ file: its first record's field 'task_id' is "
                                 f"{first.get('task_id')!r}, where {dataset}+ task ids start with {prefix!r}")
        os.environ[env_var] = os.path.abspath(data)
    module = import_evalplus_data(module_name)
    if data:
        # evalplus reads the variable at import time; set it again for a module imported earlier.
        setattr(module, env_var, os.path.abspath(data))
    if mini and not data and dataset == "mbpp":
        raise BenchmarkError("--mini: evalplus publishes no MBPP+ Mini data set (its loader refuses mini=True); "
                             "--data may name a MbppPlus-Mini-*.jsonl.gz file")
    try:
        return getattr(module, getter)(mini=mini) if mini and not data else getattr(module, getter)()
    except Exception as exc:
        if mini and not data:
            from evalplus.data.utils import get_dataset_metadata

            url, cache = get_dataset_metadata("HumanEvalPlus", module.HUMANEVAL_PLUS_VERSION, True)
            raise BenchmarkError(f"--mini: the humaneval+ Mini data is not here ({cache}) and evalplus could not "
                                 f"download it from {url}: {type(exc).__name__}: {exc}; or pass --data "
                                 f"HumanEvalPlus-Mini-*.jsonl.gz") from exc
        if data:
            json_records(data, BenchmarkError)  # a bad line: named in the file, not at evalplus' column
            if "BOM" in str(exc):
                raise BenchmarkError(f"{data}:1: starts with a UTF-8 byte order mark, which evalplus' loader "
                                     f"cannot read: save the file without one") from None
        if not data:
            pattern = "HumanEvalPlus-*.jsonl.gz" if dataset == "humaneval" else "MbppPlus-*.jsonl.gz"
            raise BenchmarkError(f"evalplus could not download {dataset}+ ({type(exc).__name__}: {exc}): pass --data "
                                 f"with a {pattern} file (offline: the data is not downloaded)") from exc
        raise BenchmarkError(f"{data}: evalplus could not load {dataset}+: {type(exc).__name__}: {exc}") from exc


def import_evalplus_data(module_name: str):
    """Import a module of ``evalplus.data`` without the second of start-up its package spends
    importing ``datasets`` (pandas, pyarrow) for ``load_dataset``, which only evalplus'
    EvalPerf loader calls: while the package is imported, a stand-in ``datasets`` module
    offers a ``load_dataset`` that imports the real one on first use. Imported as usual when
    ``datasets`` is already loaded, or when evalplus wants more of it than that name."""
    if "evalplus.data" in sys.modules or "datasets" in sys.modules:
        return importlib.import_module(module_name)
    stand_in = types.ModuleType("datasets")

    def load_dataset(*args, **kwargs):
        if sys.modules.get("datasets") is stand_in:
            del sys.modules["datasets"]
        import datasets

        return datasets.load_dataset(*args, **kwargs)

    stand_in.load_dataset = load_dataset
    sys.modules["datasets"] = stand_in
    try:
        return importlib.import_module(module_name)
    except ImportError:  # a name the stand-in lacks: import the package as it is
        for name in [m for m in sys.modules if m == "evalplus.data" or m.startswith("evalplus.data.")]:
            del sys.modules[name]
        if sys.modules.get("datasets") is stand_in:
            del sys.modules["datasets"]
        return importlib.import_module(module_name)
    finally:
        if sys.modules.get("datasets") is stand_in:
            del sys.modules["datasets"]


def problems_from_evalplus(raw: dict[str, dict], dataset: str) -> list[Problem]:
    problems = []
    for task_id, task in raw.items():
        tests = [TestCase(id=f"base/{i}", args=list(inp), has_expected=False) for i, inp in enumerate(task["base_input"])]
        tests += [TestCase(id=f"plus/{i}", args=list(inp), has_expected=False) for i, inp in enumerate(task["plus_input"])]
        problems.append(Problem(task_id=task_id, prompt=task["prompt"], entry_point=task["entry_point"],
                                reference=task["prompt"] + task["canonical_solution"], tests=tests,
                                metadata={"atol": float(task.get("atol") or 0), "dataset": dataset}))
    return problems


class EvalplusChecker(Checker):
    """evalplus' ``unsafe_execute`` comparison, statement for statement, on plain data.
    Stateful like the original: once a float output is seen, atol stays 1e-6. With
    ``special_oracles`` false, the per-task oracles (MBPP+'s sum_div, are_equivalent, ...,
    HumanEval+'s find_zero) are left out: equality, or allclose within the tolerance."""

    def __init__(self, dataset: str, entry_point: str, atol: float, special_oracles: bool = True):
        self.dataset = dataset
        self.entry_point = entry_point
        self.atol = atol
        self.special_oracles = special_oracles

    def check(self, test: TestCase, out: Any, exp: Any) -> tuple[bool, str]:
        np, is_floats, oracle = _evalplus_parts()
        inp = test.args or []
        try:
            exact_match = out == exp
            if self.dataset == "mbpp" and self.special_oracles:
                ep = self.entry_point
                if ep == "are_equivalent":  # Mbpp/164
                    exact_match = True
                elif ep == "sum_div":  # Mbpp/295
                    exact_match = exact_match or out == 0
                elif ep == "surface_Area":  # Mbpp/581
                    exact_match = exact_match or abs(out - oracle._surface_Area(*inp)) <= self.atol
                elif ep == "digit_distance_nums":  # Mbpp/558
                    exact_match = exact_match or out == oracle._digit_distance_nums(*inp)
                elif ep in oracle.MBPP_OUTPUT_SET_EQ_TASKS:
                    exact_match = set(out) == set(exp)
                elif ep in oracle.MBPP_OUTPUT_NOT_NONE_TASKS:
                    exact_match = out == exp if isinstance(out, bool) else exp == (out is not None)
            if self.dataset == "humaneval" and self.entry_point == "find_zero" and self.special_oracles:
                ok = abs(oracle._poly(*inp, out)) <= self.atol
                return (True, "") if ok else (False, f"|poly(x={out!r})| > atol {self.atol}")
            if self.atol == 0 and is_floats(exp):
                self.atol = 1e-6
            if not exact_match and self.atol != 0:
                ok = type(out) == type(exp)
                if ok and isinstance(exp, (list, tuple)):
                    ok = len(out) == len(exp)
                ok = ok and bool(np.allclose(out, exp, rtol=1e-07, atol=self.atol))
            else:
                ok = bool(exact_match)
        except Exception as exc:  # noqa: BLE001 - as in evalplus: a comparison error is a failure
            return False, f"comparison failed: {type(exc).__name__}: {exc}"
        if ok:
            return True, ""
        return False, f"got {short_repr(out)}, expected {short_repr(exp)}"


def _dataset_hash(dataset: str, mini: bool = False) -> str:
    """evalplus' hash of the data file in use (its override path when --data was given)."""
    if dataset == "humaneval":
        from evalplus.data import get_human_eval_plus_hash as data_hash
    else:
        from evalplus.data import get_mbpp_plus_hash as data_hash
    return data_hash(mini=True) if mini else data_hash()


@functools.lru_cache(maxsize=1)
def _evalplus_parts():
    import numpy as np
    from evalplus.eval import _special_oracle as oracle
    from evalplus.eval import is_floats

    return np, is_floats, oracle


@dataclass
class EvalplusOptions(BenchmarkOptions):
    base_only: bool = False  # evalplus' --base-only: the base tests only
    mini: bool = False  # evalplus' --mini: the Mini data set


class EvalplusBenchmark(Benchmark):
    """Base of humaneval+ and mbpp+; subclasses set ``name`` and ``dataset``."""

    dataset = ""
    Options = EvalplusOptions
    reference_failure_policy = "drop_test"  # an input the reference cannot handle has no expected output
    frameworks = ()  # call tests only

    def load(self) -> list[Problem]:
        data, mini = self.options.data, self.options.mini
        if mini and data:
            data = mini_file(self.dataset, data)
        problems = problems_from_evalplus(load_evalplus_problems(self.dataset, data, mini), self.dataset)
        if self.options.base_only:
            problems = [dataclasses.replace(p, tests=[t for t in p.tests if t.id.startswith("base/")])
                        for p in problems]
        return problems

    def data_read(self) -> str | None:
        data = self.options.data
        return mini_file(self.dataset, data) if data and self.options.mini else data

    def checker(self, problem: Problem) -> Checker:
        return EvalplusChecker(self.dataset, problem.entry_point, problem.metadata.get("atol", 0.0))

    def plain_checker(self, problem: Problem) -> Checker:
        return EvalplusChecker(self.dataset, problem.entry_point, problem.metadata.get("atol", 0.0),
                               special_oracles=False)

    def reference_expected(self, problem: Problem) -> bool:
        return True

    def evalplus_results(self, samples, verdicts, problems) -> dict:
        """evalplus' results document: per task, in sample order, task_id, solution,
        base_status, plus_status and the failing inputs. Plus tests are not run once a base
        test failed (early stop), so such a sample's plus_status is "fail": evalplus' own
        scripts count base+plus passes as ``base_status == plus_status == "pass"``, which
        stays exact. With ``evaluate --test-details`` (no early stop) every failing input
        the verdict holds is listed, and plus_status is the plus tests' own; with
        ``base_only`` plus_status is null, as evalplus writes it."""
        from datetime import datetime

        document = {"date": datetime.now().strftime("%Y-%m-%d %H:%M"),
                    "hash": _dataset_hash(self.dataset, self.options.mini and not self.options.data), "eval": {}}
        for sample, verdict in zip(samples, verdicts):
            tests = {t.id: t for t in problems[sample.task_id].tests}
            failed = [tv.id for tv in verdict.tests if tv.status in ("fail", "timeout")]
            first = (verdict.first_failure or {}).get("test", "")
            if first and first not in failed:  # e.g. not run: the program died on it
                failed.insert(0, first)

            def status(group: str) -> str | None:
                if not any(t.startswith(group + "/") for t in tests):
                    return None  # --base-only: no plus test was run
                value = verdict.groups.get(group) or ("fail" if verdict.status != "pass" else "pass")
                return value if value in ("pass", "fail", "timeout") else "fail"

            def fail_tests(group: str) -> list:
                return [tests[t].args for t in failed if t.startswith(group + "/") and t in tests]

            document["eval"].setdefault(sample.task_id, []).append(
                {"task_id": sample.task_id, "solution": sample.code, "base_status": status("base"),
                 "plus_status": status("plus"), "base_fail_tests": fail_tests("base"),
                 "plus_fail_tests": fail_tests("plus")})
        return document

    def expected_from_reference(self, problem: Problem, value: Any) -> Any:
        if self.dataset == "mbpp":
            from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS

            if problem.entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
                return value is not None
        return value
