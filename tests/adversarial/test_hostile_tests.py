"""Hostile generated tests: in `codea1 evaluate-tests` (ULT form: validity on the reference,
then the reference's mutants) and in `validate_for_training`. None may be valid, none may
kill a mutant, and whatever training keeps of one must not fail a right program that is not
the reference's text."""

from __future__ import annotations

import json
import shutil

import pytest
from adversarial.hostile import (
    ADD_CORRECT_OTHER,
    ADD_REFERENCE,
    EXECUTOR_BINARIES,
    code_object_hex,
    generated_test_attacks,
    hash_of_under_seed_zero,
    report,
    ult_file,
)

from codea1.harness.records import ExecJob, Problem
from codea1.harness.verdicts.asserts import parse_assert
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge
from codea1.trainers.method.validation import VALID, WRONG, validate_for_training


@pytest.fixture(scope="module")
def attacks(decoys):
    return generated_test_attacks(decoys, code_object_hex(ADD_REFERENCE, "add"),
                                  hash_of_under_seed_zero("codea1-adversarial"))


def expectation(attack) -> str:
    return {"valid": "valid, kills", "invalid": "invalid"}.get(attack.control, "invalid with a reason, no kill")


@pytest.mark.parametrize("executor_name", list(EXECUTOR_BINARIES))
def test_evaluate_tests_counts_no_hostile_test_valid_and_no_kill(plugins, tmp_path, attacks, executor_name):
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install 'codea1[mutation]')")
    from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig, evaluate_tests

    binary = EXECUTOR_BINARIES[executor_name]
    if binary and shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (executor {executor_name!r})")
    data, rows = ult_file(tmp_path / "ULT_Lite.json", attacks)
    tests_file = tmp_path / "tests.jsonl"
    tests_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # A mutant's budget of 1 s instead of 10 keeps the suite short; the sleeping test sleeps
    # past it by the same margin a real one would sleep past 10 s.
    cfg = EvaluateTestsConfig(benchmark="ult", data=str(data), out=str(tmp_path / "run"), tests=str(tests_file), k=[1],
                              workers=2, progress=False, coverage=False, mutant_timeout=1.0, executor=executor_name)
    tasks = evaluate_tests(plugins, cfg)["tasks"]
    out = []
    for a in attacks:
        task = tasks[f"adv/{a.name}"]
        valid, reason, killed = task["valid"][0], task["invalid_reasons"].get("0", ""), task["mutants"]["killed"]
        if a.control == "valid":
            ok = valid and killed > 0
        elif a.control == "invalid":
            ok = not valid and bool(reason)
        else:
            ok = not valid and bool(reason) and killed == 0
        outcome = f"valid, {killed}/{task['mutants']['unique']} killed" if valid else f"invalid ({reason[:80]})"
        out.append({"case": a.name, "attack": a.attack, "control": bool(a.control), "outcome": outcome,
                    "expected": expectation(a), "ok": ok, "forged_valid": bool(valid and not a.control),
                    "forged_kills": killed if not a.control else 0})
    broken = report("tests/evaluate-tests", executor_name, out)
    assert not broken, f"{len(broken)} of {len(out)} cases broke their promise:\n" + "\n".join(broken)


def test_validate_for_training_keeps_no_hostile_test(adv_executor, attacks):
    # One question per attack: each is its validation job's only test, as when it is the
    # only new assert of its question.
    problems = {a.name: Problem(task_id=f"adv/{a.name}", prompt="", entry_point="add", reference=ADD_REFERENCE,
                                tests=[parse_assert("assert add(1, 2) == 3", "add", "golden/0")]) for a in attacks}
    checked = validate_for_training(adv_executor, {a.name: (problems[a.name], [a.source]) for a in attacks}, 1)
    # What training keeps runs against the candidates: a right program that is not the
    # reference's text must pass it.
    jobs = {a.name: ExecJob(job_id=f"kept-{a.name}", code=ADD_CORRECT_OTHER, tests=checked[a.name].kept,
                            entry_point="add", time_limits=[2.0] * len(checked[a.name].kept), batch_timeout=10)
            for a in attacks if checked[a.name].kept}
    raws = run_jobs(adv_executor, list(jobs.values()))
    out = []
    for a in attacks:
        status = checked[a.name].status[0]
        other = judge(a.name, 0, jobs[a.name], raws[jobs[a.name].job_id]).status if a.name in jobs else "nothing kept"
        if a.control == "valid":
            ok = status == VALID and other == "pass"
        elif a.control == "invalid":
            ok = status == WRONG and other == "pass"
        else:
            ok = status != VALID and other in ("pass", "nothing kept")
        out.append({"case": a.name, "attack": a.attack, "control": bool(a.control),
                    "outcome": f"{status}; right non-reference program on what is kept: {other}",
                    "expected": "not valid; kept tests pass a right program", "ok": ok})
    broken = report("tests/validate_for_training", adv_executor.name, out)
    assert not broken, f"{len(broken)} of {len(out)} cases broke their promise:\n" + "\n".join(broken)
