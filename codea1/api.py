"""What a plugin author imports: the hook marker, the base classes and the records.

    from codea1.api import Benchmark, Problem, hookimpl, parse_asserts

Everything here is stable for plugins; the modules behind it (``codea1.harness.*``) may
move. Importing this module imports nothing heavy. The hooks and their contracts are
documented in ``codea1.harness.hookspecs`` and docs/plugins.md.
"""

from codea1.harness.benchmark import Benchmark, BenchmarkError, BenchmarkOptions
from codea1.harness.command import Command
from codea1.harness.errors import Codea1Error, ConfigError
from codea1.harness.formulas import MetricValue
from codea1.harness.generation import (
                                       Generation,
                                       GenerationError,
                                       GenerationRequest,
                                       Generator,
                                       GeneratorUnavailable,
                                       SamplingParams,
)
from codea1.harness.hookspecs import hookimpl
from codea1.harness.metrics import CodeMetric, TestMetric
from codea1.harness.records import (
                                       CodeSample,
                                       ExecJob,
                                       Problem,
                                       RawOutcome,
                                       RawResult,
                                       TaskRecord,
                                       TestCase,
                                       TestVerdict,
                                       Verdict,
)
from codea1.harness.registry import Registry
from codea1.harness.reporting import Figure, Report, Reporter, Table
from codea1.harness.sandbox.executor import ZygoteExecutor
from codea1.harness.training import LogColumn, PolicyBackend, PolicySample, StepFigure, StepFiles, Trainer
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert, parse_asserts
from codea1.harness.verdicts.execution import EarlyStop, Executor, ExecutorUnavailable, run_jobs
from codea1.harness.verdicts.judge import Checker, judge

__all__ = [
    # hooks
    "hookimpl", "Registry",
    # executors
    "Executor", "ExecutorUnavailable", "EarlyStop", "ZygoteExecutor", "run_jobs",
    # generators
    "Generator", "Generation", "GenerationRequest", "GenerationError", "GeneratorUnavailable", "SamplingParams",
    # benchmarks and judging
    "Benchmark", "BenchmarkOptions", "BenchmarkError", "Checker", "judge", "parse_assert", "parse_asserts",
    "AssertParseError",
    # metrics
    "CodeMetric", "TestMetric", "MetricValue",
    # training and reports
    "Trainer", "PolicyBackend", "PolicySample", "LogColumn", "StepFigure", "StepFiles",
    "Reporter", "Report", "Table", "Figure",
    # commands and errors
    "Command", "Codea1Error", "ConfigError",
    # records
    "Problem", "TestCase", "CodeSample", "ExecJob", "RawOutcome", "RawResult", "TestVerdict", "Verdict", "TaskRecord",
]
