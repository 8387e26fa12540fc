"""Benchmark plugin base: loads Problem records and says how its samples are judged."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from codea1.harness.errors import Codea1Error
from codea1.harness.records import Problem
from codea1.harness.verdicts.judge import Checker


@dataclass
class BenchmarkOptions:
    """Options every benchmark understands; plugins extend this dataclass."""

    data: str | None = None  # file or directory holding the benchmark's data


class BenchmarkError(Codea1Error):
    """Bad benchmark data: the message names the file, the line and the field."""


class Benchmark:
    name = ""
    description = ""
    Options = BenchmarkOptions
    # Timeout rule (evalplus): per test max(min_time_limit, time_factor x reference time).
    min_time_limit = 1.0
    time_factor = 4.0
    memory_mb = 4096  # address-space limit of the sandbox child
    # When the reference solution fails a golden test here: "report" it and keep the test,
    # "drop_test" (no expected value exists), or "skip_task" (the environment lacks something).
    reference_failure_policy = "report"
    # Printed beside `evaluate-tests --tests golden` figures when the golden tests are not a
    # trustworthy ceiling (ULT's are mostly wrong).
    golden_tests_note = ""
    # What the executor's warm workers prepare once for this benchmark's jobs (a hint:
    # Executor.warm_for): the test frameworks its script tests use (None: any of them;
    # () for call tests only), and the libraries its programs import, imported once per
    # worker instead of in every program's process (a verdict does not change with them).
    frameworks: tuple[str, ...] | None = None
    imports: tuple[str, ...] = ()

    def __init__(self, options: Any = None):
        self.options = options or self.Options()

    def load(self) -> list[Problem]:
        raise NotImplementedError

    def prepare(self, problems: list[Problem]) -> list[Problem]:
        """The problems a run uses, their tests made ready to run. ``load`` may leave costly
        work on the tests to this step (BigCodeBench rewrites each task's test script for
        the parent to judge), which the harness takes for the selected tasks only, after
        selecting them: listing ids, selecting tasks and refusing a bad file stay quick.
        Must be idempotent (a prepared problem comes back as it is). The default: as loaded."""
        return list(problems)

    def min_time_limit_for(self, test) -> float:
        """The floor of one test's time limit (a pytest module needs longer than a call)."""
        return self.min_time_limit

    def time_limits(self, problem: Problem, reference_times: list[float]) -> list[float]:
        """evalplus' rule, per test: max(floor, time_factor x the reference's time)."""
        return [max(self.min_time_limit_for(test), self.time_factor * float(t))
                for test, t in zip(problem.tests, reference_times)]

    def sample_code(self, problem: Problem, record: dict) -> str:
        """The program to run for one samples-file record (evalplus' convention: ``solution``
        is a whole program, ``completion`` continues the prompt)."""
        if "solution" in record:
            return record["solution"]
        return problem.prompt + record["completion"]

    def checker(self, problem: Problem) -> Checker:
        """A fresh checker per sample; benchmarks with special comparison rules override."""
        return Checker()

    def data_read(self) -> str | None:
        """The data file (or folder) this benchmark actually reads with its options: what a
        run's data digest is taken of (``--data`` unless an option reads another file: the
        Mini set beside it). None where it reads its own embedded or downloaded data."""
        return getattr(self.options, "data", None)

    def plain_checker(self, problem: Problem) -> Checker:
        """The benchmark's comparison without its per-task special oracles (float tolerance
        kept): what training falls back to where a special oracle accepts a constant
        program. The same as ``checker`` unless a benchmark has such oracles."""
        return self.checker(problem)

    def reference_expected(self, problem: Problem) -> bool:
        """True when expected values come from running the reference solution (HumanEval+,
        MBPP+) rather than from the tests themselves."""
        return False

    def expected_from_reference(self, problem: Problem, value: Any) -> Any:
        """Turn the reference's output into the expected value (MBPP+ keeps only
        ``is not None`` for a few tasks)."""
        return value

    def missing_libraries(self, problem: Problem) -> list[str]:
        """Libraries the task imports that this environment lacks: such tasks are skipped,
        with the reason, and count as failures unless ``evaluate --exclude-skipped``."""
        missing = []
        for lib in problem.libs:
            top = lib.split(".")[0]
            try:
                if importlib.util.find_spec(top) is None:
                    missing.append(lib)
            except (ImportError, ValueError):
                missing.append(lib)
        return missing

    def evalplus_results(self, samples: list, verdicts: list, problems: dict[str, Problem]) -> dict | None:
        """An evalplus-style ``*_eval_results.json`` document for these samples and verdicts
        (in the same order), for benchmarks evalplus knows; None elsewhere."""
        return None

    def default_samples(self) -> str | None:
        """A samples file to use when ``--samples`` is not given (the demo ships one)."""
        return None
