"""Asserts that wrap the call (``list(f(x)) == [...]``, ``sorted(f(x))``, ``len(f(x))``,
``f(x).name``, ``f(x)[0]``, ``next(f(x))``) when the call returns something that is not
plain data: a generator, an iterator, an instance of the program's own class. Each test
here is valid in plain Python on the reference; it must be valid through the sandbox too,
and fail on a wrong program. Operators on such values stay closed (the conformance suite's
always-equal cases)."""

from __future__ import annotations

import json

import pytest
from codea1_testkit import run_code

GENERATOR = "def f(n):\n    for i in range(n):\n        yield i * i\n"
ITERATOR = "def f(n):\n    return iter([i * i for i in range(n)])\n"
MAP_OBJECT = "def f(n):\n    return map(lambda i: i * i, range(n))\n"
OBJECT = ("class Squares:\n    def __init__(self, n):\n        self.name = f'squares of {n}'\n"
          "        self.values = [i * i for i in range(n)]\n"
          "    def __len__(self):\n        return len(self.values)\n"
          "    def __getitem__(self, i):\n        return self.values[i]\n"
          "    def __iter__(self):\n        return iter(self.values)\n"
          "    def __contains__(self, x):\n        return x in self.values\n"
          "    def total(self, scale=1):\n        return scale * sum(self.values)\n"
          "    def __repr__(self):\n        return f'Squares({self.values})'\n"
          "def f(n):\n    return Squares(n)\n")

ITERABLE_FORMS = ["assert list(f(4)) == [0, 1, 4, 9]", "assert sorted(f(3), reverse=True) == [4, 1, 0]",
                  "assert tuple(f(2)) == (0, 1)", "assert sum(f(4)) == 14", "assert max(f(4)) == 9",
                  "assert [x + 1 for x in f(3)] == [1, 2, 5]", "assert set(f(3)) == {0, 1, 4}",
                  "assert 4 in list(f(3))", "assert len(list(f(5))) == 5", "assert list(reversed(list(f(3)))) == [4, 1, 0]"]
ITERATOR_FORMS = ["assert next(f(3)) == 0", "assert next(iter(f(3))) == 0"]
OBJECT_FORMS = ["assert len(f(4)) == 4", "assert f(4)[3] == 9", "assert f(4)[-1] == 9", "assert f(3).name == 'squares of 3'",
                "assert f(3).values == [0, 1, 4]", "assert f(3).total() == 5", "assert f(3).total(scale=2) == 10",
                "assert 4 in f(3)", "assert repr(f(2)) == 'Squares([0, 1])'", "assert str(f(2)) == 'Squares([0, 1])'",
                "assert isinstance(f(2), Squares)", "assert bool(f(1))", "assert f(3)[1:] == [1, 4]"]
CASES = ([(GENERATOR, form) for form in ITERABLE_FORMS + ITERATOR_FORMS]
         + [(ITERATOR, form) for form in ITERABLE_FORMS + ITERATOR_FORMS]
         + [(MAP_OBJECT, form) for form in ITERABLE_FORMS + ITERATOR_FORMS]
         + [(OBJECT, form) for form in ITERABLE_FORMS + OBJECT_FORMS])


def holds_in_python(code: str, test: str) -> bool:
    namespace: dict = {}
    exec(code, namespace)
    try:
        exec(test, namespace)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("code,test", CASES)
def test_a_wrapped_call_is_judged_as_python_judges_it(executor, code, test):
    assert holds_in_python(code, test)  # valid on this program in plain Python
    verdict, _ = run_code(executor, code, test, "f")
    assert verdict.status == "pass", (test, verdict.first_failure)
    wrong = code.replace("i * i", "i * i + 1")  # a wrong program: the same verdict as Python's
    verdict, _ = run_code(executor, wrong, test, "f")
    assert (verdict.status == "pass") == holds_in_python(wrong, test), (test, verdict.first_failure)


def test_a_bare_non_plain_value_still_compares_as_python_compares_it(executor):
    # A generator is not equal to a list in Python either: the assert is invalid as written.
    assert not holds_in_python(GENERATOR, "assert f(2) == [0, 1]")
    verdict, _ = run_code(executor, GENERATOR, "assert f(2) == [0, 1]", "f")
    assert verdict.status == "fail" and "opaque builtins.generator" in verdict.first_failure["message"]


LIAR = ("class Liar:\n    def __eq__(self, other):\n        return True\n    __ne__ = lambda self, o: False\n"
        "    def __lt__(self, other):\n        return True\n    __gt__ = __le__ = __ge__ = __lt__\n"
        "    def __sub__(self, other):\n        return 0\n    __rsub__ = __add__ = __radd__ = __sub__\n"
        "    def __iter__(self):\n        return iter([Liar(), Liar()])\n    def __len__(self):\n        return 2\n"
        "    def __bool__(self):\n        return True\n"
        "    __hash__ = object.__hash__\n"
        "def f(x):\n    return Liar()\n")


@pytest.mark.parametrize("test", [
    "assert (f(1) == 3) == True", "assert abs(f(1) - 3) < 1e-9", "assert [f(1)] == [3]", "assert list(f(1)) == [1, 2]",
    "assert sorted([f(1), 3]) == [3, 3]", "assert f(1) + 1 == 0", "assert {'a': f(1)} == {'a': 1}",
])
def test_operators_of_the_programs_objects_stay_closed(executor, test):
    """An object that says yes to every comparison cannot pass an assert written around the
    call; its structure (iteration, len) is the program's answer and reaches the test."""
    verdict, _ = run_code(executor, LIAR, test, "f")
    assert verdict.status == "fail", test
    assert run_code(executor, LIAR, "assert len(f(1)) == 2", "f")[0].status == "pass"


def test_values_passed_back_to_the_program_are_its_own(executor):
    code = ("class Box:\n    def __init__(self, v):\n        self.v = v\n"
            "def make(v):\n    return Box(v)\ndef unwrap(box):\n    assert type(box) is Box\n    return box.v\n"
            "def f(x):\n    return make(x)\n")
    assert run_code(executor, code, "assert unwrap(make(7)) == 7", "unwrap")[0].status == "pass"
    assert run_code(executor, code, "assert unwrap(box=make(7)) == 7", "unwrap")[0].status == "pass"


def test_a_job_can_stop_at_its_first_timeout_without_failing_fast(executor):
    """fail_fast off, stop_on_timeout on (the trainers' mode): a failed test does not stop the
    job, a timeout does, and the tests after it count as not run (the trainers continue such
    a job themselves: trainers.method.rollouts.run_codes)."""
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs
    from codea1.harness.verdicts.judge import judge

    code = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    tests, _ = parse_asserts("assert f(0) == 1\nassert f(1) == 1\nassert f(2) == 2\nassert f(3) == 3", "f")
    statuses = {}
    for stop in (True, False):
        job = ExecJob(job_id=f"stop-{stop}", code=code, tests=tests, entry_point="f", time_limits=[0.5] * 4,
                      batch_timeout=10, fail_fast=False, stop_on_timeout=stop)
        raw = run_jobs(executor, [job])[job.job_id]
        statuses[stop] = [t.status for t in judge("t", 0, job, raw).tests]
    assert statuses[True] == ["fail", "pass", "timeout", "not_run"]
    assert statuses[False] == ["fail", "pass", "timeout", "pass"]


@pytest.mark.parametrize("ending", [
    "signal.setitimer(signal.ITIMER_REAL, 0)\n        while True:\n            pass",  # its alarm cancelled: the zygote's clock
    "os._exit(0)",
    "sys.exit(0)",
    "os.write(3, b'{\"done\":true}\\n'); os._exit(0)",  # claims to be done: out of order, tampering
])
def test_a_program_that_ends_its_process_early_has_its_later_tests_run_anyway(executor, ending):
    """A program that passes test 0 and ends its process on test 1 (hangs with its alarm
    cancelled, exits, or fakes the end of the stream) must not turn tests 2 and 3, which it
    fails, into tests that did not run: they run in a fresh process. Only tampering ends
    the verdict at once, as a failure."""
    from codea1.harness.records import ExecJob
    from codea1.harness.verdicts.asserts import parse_asserts
    from codea1.harness.verdicts.execution import run_jobs
    from codea1.harness.verdicts.judge import judge

    code = ("import os, signal, sys\ndef f(x):\n    if x == 0:\n        return 0\n    if x == 1:\n        "
            + ending + "\n    return -1\n")
    tests, _ = parse_asserts("assert f(0) == 0\nassert f(1) == 1\nassert f(2) == 2\nassert f(3) == 3", "f")
    job = ExecJob(job_id="early", code=code, tests=tests, entry_point="f", time_limits=[0.5] * 4,
                  batch_timeout=60, fail_fast=False)
    raw = run_jobs(executor, [job])[job.job_id]
    verdict = judge("t", 0, job, raw)
    if "done" in ending:
        assert verdict.status == "fail" and raw.exit.startswith("protocol:")
        return
    assert [t.status for t in verdict.tests] == ["pass", "timeout" if "while" in ending else "fail", "fail", "fail"]
    assert raw.wall_time < 30  # the zygote's clock, not the 60 s budget, ended the hang


def test_large_containers_are_digested_by_value_alone():
    """The digest of a large container is a function of its value: shared and distinct
    string objects, lists built either way, give the same digest; another type (1.0 for
    1) or another value gives another. Small values and "value" jobs carry their text."""
    from codea1.harness.sandbox.child import LARGE_OUTPUT_BYTES, encode_for_channel

    word = "ab" * 10
    shared = [word] * 5000
    distinct = ["".join(["ab"] * 10) for _ in range(5000)]
    assert shared[0] is shared[1] and distinct[0] is not distinct[1]
    text, digest = encode_for_channel(shared, "digest")
    assert text is None and len(digest) == 64
    assert encode_for_channel(distinct, "digest") == (None, digest)
    assert encode_for_channel(tuple(distinct), "digest")[1] != digest  # a tuple is not a list
    numbers = [1, 2.5] * 20000
    assert encode_for_channel(numbers, "digest")[1] != encode_for_channel([1.0, 2.5] * 20000, "digest")[1]
    both_text, both_digest = encode_for_channel(numbers, "both")
    assert both_digest == encode_for_channel(numbers, "digest")[1] and json.loads(both_text) == numbers
    assert encode_for_channel(numbers, "value") == (json.dumps(numbers, separators=(",", ":")), None)
    assert encode_for_channel([1, 2], "digest") == ("[1,2]", None)
    long_text = "x" * (LARGE_OUTPUT_BYTES + 1)
    assert encode_for_channel(long_text, "digest")[0] is None
    assert encode_for_channel({"k": long_text}, "both")[0] == json.dumps({"d": [["k", long_text]]},
                                                                        separators=(",", ":"))


@pytest.mark.long
def test_large_outputs_are_judged_on_digests_and_rechecked_on_values(plugins, tmp_path):
    """A HumanEval+ task whose outputs exceed 64 KiB (HumanEval/130: lists of up to a
    million numbers): the canonical solution passes on digests alone (no recheck); a
    solution returning the same numbers as floats differs in its digests, is run again
    on values and passes as in evalplus (1 == 1.0); one wrong only for large n differs in
    its digests too, and fails on values."""
    import gzip

    from conftest import shared_file

    from codea1.harness.flows.evaluate import EvaluateConfig, evaluate

    data = shared_file("humanevalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
    task = next(json.loads(line) for line in gzip.open(data, "rt") if '"HumanEval/130"' in line)
    canonical = task["prompt"] + task["canonical_solution"]
    as_floats = canonical.replace("def tri(n):", "def tri(n):\n    return [float(x) for x in _tri(n)]\n\ndef _tri(n):")
    wrong_for_large = canonical.replace("def tri(n):", "def tri(n):\n    return _tri(n) if n < 5000 else _tri(n)[:-1]\n"
                                                       "\ndef _tri(n):")
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "HumanEval/130", "solution": s}) + "\n"
                               for s in (canonical, as_floats, wrong_for_large)))
    results = evaluate(plugins, EvaluateConfig(benchmark="humaneval+", data=str(data), samples=str(samples),
                                               tasks=["HumanEval/130"], out=str(tmp_path / "run"), progress=False,
                                               min_time_limit=30.0, gt_time_limit_factor=20.0))  # a busy machine
    assert results["tasks"]["HumanEval/130"]["statuses"] == ["pass", "pass", "fail"]
    assert results["timing"]["rechecked_samples"] == 2  # the canonical one needed none
