"""Benchmark ``demo``: twelve small problems written for this project, shipped in the
package so that everything runs offline on a fresh machine.

``samples.jsonl`` beside this module holds each reference solution plus deliberately wrong
samples (off-by-one, wrong type, infinite loop, exception, partial, syntax error); it is the
default samples file of ``codea1 evaluate --benchmark demo``.
"""

from __future__ import annotations

from pathlib import Path

from codea1.benchmarks.demo.problems import PROBLEMS
from codea1.harness.benchmark import Benchmark, BenchmarkError
from codea1.harness.hookspecs import hookimpl
from codea1.harness.records import Problem
from codea1.harness.verdicts.asserts import parse_asserts

SAMPLES_FILE = Path(__file__).with_name("samples.jsonl")


class DemoBenchmark(Benchmark):
    name = "demo"
    description = "12 small problems shipped with codea1 (offline), golden asserts"
    frameworks = ()  # call tests only

    def load(self) -> list[Problem]:
        problems = []
        for spec in PROBLEMS:
            tests, rejected = parse_asserts("\n".join(spec["tests"]), spec["entry_point"], "assert",
                                             golden=True)
            if rejected:
                raise BenchmarkError(f"{__file__}: {spec['task_id']}: field 'tests': {rejected[0].reason}")
            problems.append(Problem(task_id=spec["task_id"], prompt=spec["prompt"], entry_point=spec["entry_point"],
                                    reference=spec["solution"], tests=tests))
        return problems

    def default_samples(self) -> str:
        return str(SAMPLES_FILE)


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(DemoBenchmark)
