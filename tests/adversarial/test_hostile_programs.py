"""Hostile programs against every executor: none may get `pass` (nor `sandbox_error`, which
trainers leave out), on KodCode pytest scripts, BigCodeBench unittest classes and call-style
tests. One executor batch per family; a failure lists every case that broke its promise."""

from __future__ import annotations

import pytest
from adversarial.hostile import PROBLEMS, call_problem, program_cases, report, run_program_cases

from codea1.harness.verdicts.reference import run_references

FAMILIES = {"kodcode-pytest": ("kodcode", "kodcode-hand"),
            "bigcodebench-unittest": ("bigcodebench", "bigcodebench-hand"),
            "call-style": ("call",)}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_no_hostile_program_passes(adv_executor, decoys, family):
    problems = {key: PROBLEMS[key]() for key in FAMILIES[family]}
    if family == "call-style":
        # The reference's outputs, cached on disk as every evaluation caches them.
        run_references([call_problem()], adv_executor, checks_tests=lambda p: True)
    cases = [c for c in program_cases(decoys) if c.problem in FAMILIES[family]]
    rows = run_program_cases(adv_executor, cases, problems)
    broken = report(f"programs/{family}", adv_executor.name, rows)
    assert not broken, f"{len(broken)} of {len(rows)} cases broke their promise:\n" + "\n".join(broken)
