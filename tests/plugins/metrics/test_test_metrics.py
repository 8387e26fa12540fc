"""Regression tests of the test-generation metrics on hand-computed fixtures, and the paper's
published Mul figures recomputed from its own pass@5 and mut@5."""

from __future__ import annotations

import re

import pytest
from conftest import SHARED_DATA

from codea1.harness.formulas import coverage_at_k, mul, mut_at_k
from codea1.harness.formulas import test_pass_at_k as accuracy_at_k
from codea1.harness.records import TaskRecord

T, F = True, False


def mutant(first_fail, status="fail"):
    return {"id": "m", "first_fail": first_fail, "status": "pass" if first_fail is None else status, "diff": ""}


@pytest.fixture
def records():
    return {
        # valid at 0, 1, 3, 4; mutants killed by test 0, test 1, never, test 3; one sandbox error
        "A": TaskRecord("A", ["t"] * 5, [T, T, F, T, T], [""] * 5,
                        mutants=[mutant(0), mutant(1), mutant(None), mutant(3),
                                 {"id": "x", "first_fail": None, "status": "sandbox_error", "diff": ""}],
                        coverage={"1": {"line": 0.5, "branch": None}, "2": {"line": 1.0, "branch": 0.5}}),
        "B": TaskRecord("B", ["t"] * 5, [F, T, T, T, T], [""] * 5, mutants=[mutant(2)],
                        coverage={"1": {"line": 0.25, "branch": 0.0}}),
        "C": TaskRecord("C", ["t"] * 5, [T, T, T, T, T], [""] * 5, mutants=[]),  # zero mutants
        # one test only; a timeout counts as a kill
        "D": TaskRecord("D", ["t"], [T], [""], mutants=[mutant(0, status="timeout"), mutant(None)]),
    }


def test_test_accuracy_counts_missing_tests_as_failures(records):
    assert accuracy_at_k(records, 1).value == pytest.approx((1 + 0 + 1 + 1) / 4)
    assert accuracy_at_k(records, 2).value == pytest.approx((2 + 1 + 2 + 1) / 8)
    assert accuracy_at_k(records, 5).value == pytest.approx((4 + 4 + 5 + 1) / 20)
    assert accuracy_at_k(records, 2).per_task == {"A": 1.0, "B": 0.5, "C": 1.0, "D": 0.5}
    assert accuracy_at_k({}, 1).value is None


def test_mutation_score_per_k(records):
    # k=1: eligible A, C, D. A: 1 of 5 killed by test 0 (its sandbox error stays in the
    # denominator, not killed); C has no mutant (left out); D: the timeout kills, the other
    # survives: 1/2.
    value = mut_at_k(records, 1)
    assert value.per_task == {"A": 0.2, "D": 0.5}
    assert value.value == pytest.approx(0.35)
    assert "without mutants" in value.note
    # k=2: eligible A (T, T) and C; D has one test only.
    assert mut_at_k(records, 2).value == pytest.approx(2 / 5)
    # k=5: only C is eligible and it has no mutant.
    five = mut_at_k(records, 5)
    assert five.value is None and "no eligible task has a completed mutant" in five.note


def test_the_largest_k_task_set_quirk(records):
    # Every k uses the tasks eligible at k=2: A and C; D drops out of mut@1.
    assert mut_at_k(records, 1, task_set="largest-k", largest_k=2).value == pytest.approx(0.2)
    assert mut_at_k(records, 1, task_set="per-k", largest_k=2).value == pytest.approx(0.35)


def test_edge_cases():
    none_eligible = {"A": TaskRecord("A", ["t"], [F], [""], mutants=[mutant(0)])}
    value = mut_at_k(none_eligible, 1)
    assert value.value is None and "no eligible task" in value.note
    survivors = {"A": TaskRecord("A", ["t"], [T], [""], mutants=[mutant(None), mutant(None)])}
    assert mut_at_k(survivors, 1).value == 0.0
    all_killed = {"A": TaskRecord("A", ["t"], [T], [""], mutants=[mutant(0), mutant(0, status="error")])}
    assert mut_at_k(all_killed, 1).value == 1.0


def test_mul_and_coverage(plugins, records):
    value = plugins.metrics.create("Mul").compute(records, 2)
    assert value.value == pytest.approx(0.75 * 0.4)  # A kills 2 of 5 at k=2 (its sandbox error counts)
    assert plugins.metrics.create("Mul").compute(records, 5).value is None
    assert plugins.metrics.create("Mul").label(5) == "Mul@5"
    assert coverage_at_k(records, 1, "line").value == pytest.approx((0.5 + 0.25) / 2)
    assert coverage_at_k(records, 1, "branch").value == 0.0  # A's None is left out, not counted as 0
    assert coverage_at_k(records, 2, "branch").value == 0.5
    assert coverage_at_k(records, 5, "line").value is None


def _cells(line: str) -> list[str]:
    line = re.sub(r"\\rowcolor\{[^}]*\}", "", line)
    line = re.sub(r"\\(textbf|underline|textcolor\{[^}]*\})\{([^}]*)\}", r"\2", line)
    return [c.strip() for c in line.strip().rstrip("\\").split("&")]


def paper_rows() -> list[tuple[str, float, float, float]]:
    """(row, pass@5, mut@5, Mul) of every row of Table 2's Test LLM part, the ablation table
    and the ReasonFlux-Coder comparison, read from the paper's source."""
    tex = (SHARED_DATA.parent / "seed" / "code-a1-paper.tex")
    if not tex.exists():
        pytest.skip(f"{tex} is not here")
    rows = []
    for line in tex.read_text().splitlines():
        cells = _cells(line)
        numbers = []
        for c in cells:
            try:
                numbers.append(float(c))
            except ValueError:
                numbers.append(None)
        params = len(cells) > 1 and re.match(r"^\d+(\.\d+)?B", cells[1])
        if len(cells) == 9 and all(n is not None for n in numbers[2:]):
            if params:  # comparison: model, params, HE, MBPP, BCB, Avg, pass@5, mut@5, Mul
                rows.append((cells[0], numbers[6], numbers[7], numbers[8]))
            else:  # Table 2: model, method, pass@1, pass@2, pass@5, mut@1, mut@2, mut@5, Mul
                rows.append((f"{cells[0]} {cells[1]}".strip(), numbers[4], numbers[7], numbers[8]))
        elif len(cells) == 8 and all(n is not None for n in numbers[1:]):  # ablation: ..., pass@5, mut@5, Mul
            rows.append((cells[0], numbers[5], numbers[6], numbers[7]))
    return rows


def test_published_mul_is_pass5_times_mut5_over_100():
    rows = paper_rows()
    assert len(rows) >= 12 + 6 + 4  # Table 2 (12 rows), the comparison (6), the ablation (4)
    for label, pass5, mut5, published in rows:
        assert abs(mul(pass5, mut5) - published) <= 0.01 + 1e-9, (label, pass5, mut5, published, mul(pass5, mut5))
    figures = {(p, m): v for _, p, m, v in rows}
    assert figures[(27.05, 26.41)] == 7.14 and figures[(37.15, 53.14)] == 19.74


def test_a_mutant_that_only_timed_out_is_neither_killed_nor_completed():
    """Four mutants, tests valid at 0..2: killed by test 0; timed out at test 1 (no test
    failed before); timed out at test 2; survived. k=1: the timeouts lie beyond test 0, so
    all four completed, one killed: 1/4. k=2: the test-1 timeout is left out: 1/3. k=3:
    both timeouts left out: 1/2."""
    timed_out_1, timed_out_2 = ({**mutant(None, status="timeout"), "first_timeout": i} for i in (1, 2))
    records = {"A": TaskRecord("A", ["t"] * 3, [T, T, T], [""] * 3,
                               mutants=[mutant(0), timed_out_1, timed_out_2, mutant(None)])}
    assert [mut_at_k(records, k).value for k in (1, 2, 3)] == pytest.approx([1 / 4, 1 / 3, 1 / 2])
    only_timeouts = {"A": TaskRecord("A", ["t"], [T], [""], mutants=[{**mutant(None), "first_timeout": 0}])}
    assert mut_at_k(only_timeouts, 1).value is None
