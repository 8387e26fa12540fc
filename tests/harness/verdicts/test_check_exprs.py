"""The parent's evaluator of checks with comparisons inside (harness.verdicts.check_exprs): what
it decides as Python, numpy and pandas would, what it refuses, its step budget; and, end to
end, a program whose objects answer every comparison with True fails."""

from __future__ import annotations

import ast
import time

import pytest

from codea1.harness.records import FAIL, PASS, ExecJob, TestCase
from codea1.harness.verdicts import check_exprs, plaindata
from codea1.harness.verdicts.check_exprs import decide
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.script_tests import rewrite_test

NP = ["np", "numpy"]


def holds(source: str, *leaves, values=()) -> bool:
    return decide(source, [[True, v] for v in leaves], list(values), NP)[0]


def test_comparisons_comprehensions_and_calls_as_python_decides_them():
    assert holds("0 <= _v0 <= 3", 2) and not holds("0 <= _v0 <= 3", 4)
    assert holds("all((0 <= v <= 70 for v in _v0))", [1, 60, 70]) and not holds("all((v > 0 for v in _v0))", [1, 0])
    assert holds("any((w.isupper() for w in _v0.split(' ')))", "a B c")
    assert holds("len(set(_v0)) == len(_v0)", [1, 2, 3]) and not holds("len(set(_v0)) == len(_v0)", [1, 1])
    assert holds("sorted(_v0) == _e0", [3, 1, 2], values=[[1, 2, 3]])
    assert holds("math.isclose(_v0, 0.3, abs_tol=1e-09)", 0.1 + 0.2)
    assert holds("isinstance(_v0, tuple) and len(_v0) == 2", (1, 2))
    assert holds("abs(_v0 - _v1) <= 0.01", 1.0, 1.005)


def test_arrays_item_by_item_as_numpy_and_pandas_compare_them():
    a = plaindata.Array("ndarray", (3,), [1, 2, 3])
    series = plaindata.Array("Series", (3,), [1.0, 2.0, 3.0], [0, 1, 2])
    assert holds("(_v0 == _e0).all()", a, values=[[1, 2, 3]]) and not holds("(_v0 == _e0).all()", a, values=[[1, 2, 4]])
    assert holds("all(_v0 > 0)", series) and holds("np.all(_v0 >= 1)", a) and not holds("np.any(_v0 > 3)", a)
    assert holds("np.allclose(_v0, _e0)", a, values=[[1.0, 2.0, 3.000001]])
    assert holds("np.isclose(_v0, 2.0).any()", a) and not holds("np.isclose(_v0, 2.0).all()", a)
    # a Series' own truth is ambiguous, as pandas says: the check does not hold
    assert not holds("_v0 > 0", series)
    # shapes that would broadcast to something larger than either side: not compared
    wide = plaindata.Array("ndarray", (4, 1), [1, 2, 3, 4])
    assert not holds("(_v0 == _v1).all()", wide, plaindata.Array("ndarray", (3,), [1, 2, 3]))


def test_a_leaf_that_raised_matters_only_where_the_check_reads_it():
    leaves = [[True, None], [False, "TypeError: 'NoneType' object is not subscriptable"]]
    assert decide("_v0 is None or _v1 == 1", leaves, [], NP) == (True, "")
    ok, why = decide("_v0 is not None or _v1 == 1", leaves, [], NP)
    assert not ok and "TypeError" in why


def test_work_is_bounded_by_what_was_received():
    big = list(range(3000))
    start = time.process_time()
    ok, why = decide("all((x != y for x in _v0 for y in _v0))", [[True, big]], [], NP)
    assert not ok and "too costly" in why
    assert time.process_time() - start < 5  # a budget proportional to 3,000 items, not 9 million steps
    assert decide("_v0 ** _v1 > 0", [[True, 10], [True, 10 ** 6]], [], NP)[1].startswith("a power too large")


@pytest.mark.parametrize("source", ["_v0.__class__", "open('x')", "_v0.to_csv('x')", "exec('1')", "__import__('os')",
                                    "getattr(_v0, 'x')", "[x for x in _v0 if x.format()]"])
def test_anything_else_is_refused_before_a_program_runs(source):
    with pytest.raises(check_exprs.Unsupported):
        check_exprs.supported(ast.parse(source, mode="eval").body, set(NP), set())


SCRIPT = '''import unittest
class TestCases(unittest.TestCase):
    def test_a(self):
        result = task_func()
        self.assertTrue(all(0 <= v <= 10 for v in result))
        self.assertTrue(3 < len(result) <= 5)
'''
LIAR = ("class Liar(int):\n    def __le__(self, o):\n        return True\n    __ge__ = __lt__ = __gt__ = __le__\n"
        "class Many(list):\n    def __len__(self):\n        return 4\n"
        "def task_func():\n    return Many([Liar(99), Liar(-5)])\n")


@pytest.mark.parametrize("code, status", [("def task_func():\n    return [1, 5, 10, 2]\n", PASS),
                                          ("def task_func():\n    return [1, 50, 10, 2]\n", FAIL),
                                          (LIAR, FAIL)])
def test_end_to_end_a_programs_own_comparisons_do_not_decide(executor, code, status):
    test = rewrite_test(TestCase(id="unittest/0", kind="script", script=SCRIPT, framework="unittest"))
    assert test.judged == "parent"
    job = ExecJob(job_id=f"e-{abs(hash(code))}", code=code, tests=[test], time_limits=[30.0], batch_timeout=60.0,
                  memory_mb=1024)
    verdict = judge("t", 0, job, run_jobs(executor, [job])[job.job_id])
    assert verdict.status == status, verdict.message
