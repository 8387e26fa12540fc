"""Generated tests are data, end to end through the real subprocess executor: white-box,
nondeterministic, sleeping or importing tests are invalid with their reason and never run;
wrappers around the result are applied in the child to the real object, with the verdict
plain Python gives."""

from __future__ import annotations

import uuid

import pytest

from codea1.harness.records import ExecJob, Problem
from codea1.harness.verdicts.asserts import parse_assert
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge
from codea1.harness.verdicts.validity import check_suites
from codea1.trainers.method.validation import UNPARSED, VALID, validate_for_training

REFERENCE = "import os\n\ndef f(x):\n    return x + 1\n"
PROBLEM = Problem(task_id="wb", prompt="", entry_point="f", reference=REFERENCE)

# Tests a test writer could use to kill every mutant, fail every correct program that is not
# the reference's text, or pass at random: each refused before anything runs.
HOSTILE = [
    ("assert f(len(open('solution.py').read())) == 36", "argument: not data: calls open"),
    ("assert f(1) == len(open(__file__).read())", "answer: not data: calls open"),
    ("assert f(1) == len(f.__code__.co_code)", "answer: not data: attribute access .co_code"),
    ("assert f(1) == __import__('inspect').getsource(f).count('+') + 1", "answer: not data: calls"),
    ("assert f(1) == (2 if __import__('os').urandom(1)[0] < 128 else 0)", "answer: not data: calls"),
    ("assert f(int(time.time()) % 2) == 1", "argument: not data: calls time.time"),
    ("assert f(random.randint(0, 1)) == 1", "argument: not data: calls random.randint"),
    ("assert f(hash('a') % 2) == 1", "argument: not data: calls hash"),
    ("assert f(1) == (__import__('time').sleep(3) or 2)", "answer: not data: calls"),
    ("assert f(1) == [time.sleep(0.5), 2][1]", "answer: not data: calls time.sleep"),
    ("import os", "not a single assert statement"),
    ("assert f(1) == __import__('os').getpid() * 0 + 2", "answer: not data: calls"),
    ("assert f(1).__class__.__name__ == 'int'", "the special attribute __name__"),
    ("assert f(1) == eval('2')", "answer: not data: calls eval"),
    ("assert f(1) == globals()['f'](1)", "answer: not data: calls globals()['f']"),
    ("assert f(1) != 3", "the operator !="),
    ("assert f(1)", "a bare truthy assert"),
]


def test_hostile_generated_tests_are_invalid_and_never_run(executor):
    sources = [src for src, _ in HOSTILE]
    checks = check_suites(executor, {"s": (PROBLEM, sources)})
    check = checks["s"]
    assert check.valid == [False] * len(HOSTILE)
    for (src, reason), got in zip(HOSTILE, check.reasons):
        assert got.startswith("not a usable assert: ") and reason in got, (src, got)
    assert check.reference is None  # nothing was usable: no job ran at all
    out = validate_for_training(executor, {"s": (PROBLEM, sources + ["assert f(1) == 2"])}, requested=len(HOSTILE) + 1)
    assert out["s"].status == [UNPARSED] * len(HOSTILE) + [VALID]
    assert out["s"].kept_sources == ["assert f(1) == 2"]


def test_the_old_behaviour_only_on_request_and_marked_in_process(executor):
    suite = ["assert f(1) != 3", "assert f(1) == 2"]
    check = check_suites(executor, {"s": (PROBLEM, suite)}, allow_other_forms=True)["s"]
    assert check.valid == [True, True]
    assert [t.judged for t in check.tests] == ["in-process", "parent"]


COUNTER = "from collections import Counter\ndef f(s):\n    return Counter(s)\n"
# (program, assert): each judged by the executor on a data test, and by plain Python.
WRAPPED = [
    (COUNTER, "assert f('abca') == {'a': 2, 'b': 1, 'c': 1}"),
    (COUNTER, "assert f('abca').most_common(1) == [('a', 2)]"),
    (COUNTER, "assert f('abca')['z'] == 0"),
    (COUNTER, "assert f('ab') == {'a': 1}"),
    ("from collections import defaultdict\ndef f(n):\n    d = defaultdict(list)\n    d[n].append(1)\n    return d\n",
     "assert f(3) == {3: [1]}"),
    ("from collections import defaultdict\ndef f(n):\n    d = defaultdict(list)\n    d[n].append(1)\n    return d\n",
     "assert f(3)[4] == []"),
    ("from collections import OrderedDict\ndef f():\n    return OrderedDict([('b', 1), ('a', 2)])\n",
     "assert list(f().keys()) == ['b', 'a']"),
    ("from collections import OrderedDict\ndef f():\n    return OrderedDict([('b', 1), ('a', 2)])\n",
     "assert f() == {'a': 2, 'b': 1}"),
    ("from collections import OrderedDict\ndef f():\n    return OrderedDict([('b', 1), ('a', 2)])\n",
     "assert list(f()) == ['a', 'b']"),
    ("from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f(a):\n    return P(a, a + 1)\n",
     "assert f(1) == (1, 2)"),
    ("from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f(a):\n    return P(a, a + 1)\n",
     "assert f(1).y == 2"),
    ("from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f(a):\n    return P(a, a + 1)\n",
     "assert f(1)._asdict() == {'x': 1, 'y': 2}"),
    ("from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\ndef f(a):\n    return P(a)\n",
     "assert f(1).x == 1"),
    ("from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\ndef f(a):\n    return P(a)\n",
     "assert f(1) == {'x': 1}"),
    ("def f(n):\n    for i in range(n):\n        yield i * i\n", "assert list(f(3)) == [0, 1, 4]"),
    ("def f(n):\n    for i in range(n):\n        yield i * i\n", "assert next(f(3)) == 0"),
    ("def f(n):\n    for i in range(n):\n        yield i * i\n", "assert sorted(f(3), reverse=True) == [4, 1, 0]"),
    ("def f(n):\n    for i in range(n):\n        yield i * i\n", "assert f(3) == [0, 1, 4]"),
    ("def f(n):\n    for i in range(n):\n        yield i * i\n", "assert len(list(f(4))) == 5"),
    ("def f(x):\n    return {'a': [x, x + 1]}\n", "assert f(1)['a'][1:] == [2]"),
    ("def f(x):\n    return x / 3\n", "assert round(f(1), 2) == 0.33"),
    ("def f(x):\n    return lambda y: x + y\n", "assert f(1)(2) == 3"),
    ("def f(a, *, k=0):\n    return a * k\n", "assert f(2, k=3) == 6"),
    ("class Box:\n    def __eq__(self, other):\n        return True\ndef f():\n    return Box()\n", "assert f() == 1"),
]


def plain_python(code: str, source: str) -> bool:
    """What Python itself says of the assert (trusted code of this test module)."""
    namespace: dict = {}
    exec(code, namespace)
    try:
        exec(source, namespace)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("code,source", WRAPPED)
def test_wrappers_give_the_verdict_plain_python_gives(executor, code, source):
    test = parse_assert(source, "f", "t/0")
    job = ExecJob(job_id=f"wrap-{uuid.uuid4().hex[:8]}", code=code, tests=[test], entry_point="f",
                  time_limits=[5.0], batch_timeout=10.0, memory_mb=1024)
    verdict = judge("t", 0, job, run_jobs(executor, [job])[job.job_id])
    expected = plain_python(code, source)
    if source == "assert f() == 1":  # an object equal to everything: Python says True, the harness compares data
        assert expected and verdict.status == "fail"
        return
    assert (verdict.status == "pass") == expected, (source, verdict.first_failure)


def test_introspection_of_a_result_is_refused_in_the_child(executor):
    """A generator's frame reaches the module's globals and builtins: a wrapper may not read it."""
    code = "def f(n):\n    yield n\n"
    test = parse_assert("assert f(1).gi_frame.f_globals == {}", "f", "t/0")
    job = ExecJob(job_id=f"intro-{uuid.uuid4().hex[:8]}", code=code, tests=[test], entry_point="f",
                  time_limits=[5.0], batch_timeout=10.0, memory_mb=1024)
    verdict = judge("t", 0, job, run_jobs(executor, [job])[job.job_id])
    assert verdict.status == "fail" and "may not read 'gi_frame'" in verdict.first_failure["message"]
