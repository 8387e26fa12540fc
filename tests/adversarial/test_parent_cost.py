"""The parent's cost of judging what a program sends is bounded by what it sent.

A program's answer reaches the parent as plain data; the parent compares it with the expected
value. An ndarray of 64 dimensions, all but two of length 1, broadcasts against a short
expected list in numpy's rules: a broadcast spends the program's dimensions times the expected
size on every item (35 s of the parent's time for one 2 MB record, before). Arrays of different
shapes are unequal at once, and no broadcast makes anything larger than what was received.

The parent's time is measured as its own CPU time (``time.thread_time``), which a busy machine
does not stretch; the bound asserted is the issue's (one second) and the comparisons made are
counted too, so the test does not rest on the clock alone.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from adversarial.hostile import ProgramCase, program_job

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts import plaindata
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.script_tests import split_test

SCRIPT = '''\
import unittest
import numpy as np


class TestCases(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(task_func([3, 1, 2]), [1, 2, 3])

    def test_close(self):
        self.assertTrue(np.allclose(task_func([3, 1, 2]), [1, 2, 3]))

    def test_in(self):
        self.assertIn(task_func([3, 1, 2]), [[1, 2, 3]])
'''
REFERENCE = "def task_func(xs):\n    return sorted(xs)\n"
# about 2 MB as a record: 200,000 rows of 3 items, 62 axes of length 1 between them
BROADCAST = ("import numpy as np\n\ndef task_func(xs):\n"
             "    return np.ones((200_000,) + (1,) * 62 + (3,), dtype=np.int8)\n")
NDIM = 64


def broadcast_problem() -> Problem:
    tests = split_test(TestCase(id="unittest/0", kind="script", script=SCRIPT, framework="unittest"))
    return Problem(task_id="adv/broadcast", prompt="", entry_point="task_func", reference=REFERENCE, tests=tests)


def test_the_record_has_64_dimensions_and_its_tests_are_judged_in_the_parent():
    problem = broadcast_problem()
    assert [t.judged for t in problem.tests] == ["parent"]
    assert np.ones((2,) + (1,) * 62 + (3,)).ndim == NDIM  # numpy takes 64 dimensions


def test_a_64_dimension_broadcast_record_costs_the_parent_under_a_second(adv_executor, monkeypatch):
    problem = broadcast_problem()
    cases = [ProgramCase("reference", "-", "adv/broadcast", "", ("pass",), control=True),
             ProgramCase("broadcast", "f", "adv/broadcast", BROADCAST)]
    jobs = {c.name: program_job(c, problem, 30.0) for c in cases}
    raws = run_jobs(adv_executor, list(jobs.values()))

    compared = [0]
    spread = plaindata._spread

    def counted(items, shape, target):
        out = spread(items, shape, target)
        compared[0] += len(out)
        return out

    monkeypatch.setattr(plaindata, "_spread", counted)
    start = time.thread_time()
    hostile = judge(problem.task_id, 0, jobs["broadcast"], raws[jobs["broadcast"].job_id])
    parent_s = time.thread_time() - start
    honest = judge(problem.task_id, 0, jobs["reference"], raws[jobs["reference"].job_id])

    assert honest.status == "pass", honest.message
    assert hostile.status == "fail", hostile.message
    assert "ndarray(shape=(200000, 1, 1" in hostile.message  # the record arrived whole, and was compared
    # == and `in`: unequal at once; allclose (numpy broadcasts there): the short list
    # stretched to the received shape, never beyond the items received
    assert compared[0] <= 200_000 * 3
    assert parent_s < 1.0, f"the parent spent {parent_s:.2f} s of its own time on one record"


@pytest.mark.parametrize("shape, other, equal", [
    ((1,), [1], True),              # one item against one: its answer
    ((3,), [1, 1, 1], None),        # same shape: item by item, then numpy's "ambiguous"
    ((1, 3), [1, 1, 1], False),     # numpy would broadcast; different shapes are unequal at once
    ((3, 1), [[1, 1, 1]], False),   # an outer product in numpy: unequal at once here
    ((), [1, 1, 1], None),          # a 0-d array against a list: element-wise, ambiguous
])
def test_arrays_of_different_shapes_are_unequal_without_a_broadcast(shape, other, equal):
    a = plaindata.Array("ndarray", shape, [1] * math.prod(shape))
    if equal is None:
        with pytest.raises(ValueError):
            bool(a == other)
    else:
        assert (a == other) is equal and (a != other) is (not equal)


def test_a_broadcast_larger_than_both_sides_is_refused():
    """(n, 1) against (m,) would make n x m items: an outer product is never computed."""
    column = plaindata.Array("ndarray", (100_000, 1), [1] * 100_000)
    row = plaindata.Array("ndarray", (100_000,), [1] * 100_000)
    with pytest.raises(ValueError, match="larger"):
        plaindata.elementwise(lambda x, y: x == y, column, row)
    # one side stretched to the other's shape is still numpy's broadcast
    assert plaindata.elementwise(lambda x, y: (x, y), plaindata.Array("ndarray", (2, 3), [1, 2, 3, 4, 5, 6]),
                                 [7, 8, 9]) == [(1, 7), (2, 8), (3, 9), (4, 7), (5, 8), (6, 9)]
    assert plaindata.elementwise(lambda x, y: (x, y), [[7], [8]], plaindata.Array("ndarray", (2, 2), [1, 2, 3, 4])) \
        == [(7, 1), (7, 2), (8, 3), (8, 4)]
