"""Small helpers for tests: build jobs and judge them through a real executor."""

from __future__ import annotations

from codea1.harness.records import ExecJob, Verdict
from codea1.harness.verdicts.asserts import parse_asserts
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.expected import settle_tests
from codea1.harness.verdicts.judge import judge


def run_code(executor, code: str, asserts: str, entry_point: str | None = None, limit: float = 2.0,
             fail_fast: bool = True, batch: float | None = None, memory_mb: int = 1024) -> tuple[Verdict, object]:
    tests, rejected = parse_asserts(asserts, entry_point, allow_other_forms=True)  # the executor's both paths
    assert not rejected, rejected
    tests = settle_tests(executor, tests)  # expected sides that are expressions: computed first, as flows do
    job = ExecJob(job_id="t", code=code, tests=tests, entry_point=entry_point, time_limits=[limit] * len(tests),
                  batch_timeout=batch if batch is not None else limit * len(tests) + 3, memory_mb=memory_mb,
                  fail_fast=fail_fast)
    raw = run_jobs(executor, [job])["t"]
    return judge("task", 0, job, raw), raw
