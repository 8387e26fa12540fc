"""The reward rules a policy searching for the cheapest reward meets, each shown on one real
code-a1 step (harness validation, the subprocess executor, the trainer's rewards and Mistake
Book) with scripted policies, beside an honest baseline run the same way:

1. one judge: a benchmark's special oracle never decides a generated test;
2. a call is its values: respelled copies of one call earn what one call earns, through
   defaults, whatever the entry point's definition and whatever wrappers the asserts put
   around it (inputs equal under == that the reference answers differently stay two tests);
3. consensus no single program can steer: an unstable program loses its vote, not the test;
   a vote runs each input with its own type; a wrong consensus answer does not stay in the
   Mistake Book;
4. a book that holds what finds bugs: a slow valid test keeps the reference's time in the
   book; a program that raises everywhere cannot flood it;
5. an empty suite says nothing: it does not lower a right program's reward;
6. a part's timeouts end that part: two timeouts in one suite leave the other suites run;
7. the golden-tests trainer pays no constant program through a special oracle.
"""

from __future__ import annotations

import pytest
from scripted_policies import ScriptedPolicy, fenced, scripted_context

from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.asserts import parse_assert
from codea1.trainers.code_a1 import CodeA1Options, CodeA1Trainer

SQ = "def sq(x):\n    return x * x\n"
SQ_OTHER = "def sq(x):\n    return x ** 2\n"
SQ_QUESTION = Problem(task_id="rules/sq", prompt="Write sq(x).", entry_point="sq", reference=SQ,
                      tests=[parse_assert("assert sq(6) == 36", "sq", "golden/0")])


def run_steps(plugins, executor, tmp_path, question, programs, suites, *, bench="demo", steps=1, **options):
    """``steps`` code-a1 steps on ``question``: every program faces every suite (``programs``
    and ``suites``: name -> text, or name -> one text per step). Returns the trainer, each
    step's figures, and per step R_C by program and R_T by (program, suite)."""
    def per_step(texts):
        return [[t[min(s, len(t) - 1)] if isinstance(t, list) else t for t in texts] for s in range(steps)]

    code = ScriptedPolicy([[fenced(c) for c in row] for row in per_step(list(programs.values()))])
    tests = ScriptedPolicy([[fenced(s + "\n") for s in row] for row in per_step(list(suites.values()))])
    bench = plugins.benchmarks.create(bench)
    m, n = len(programs), len(suites)
    k = max(len([line for line in (s if isinstance(s, str) else s[0]).splitlines() if line.strip()])
            for s in suites.values())
    trainer = CodeA1Trainer(CodeA1Options(m=m, n=n, k=max(k, 1), topvar=m, **options),
                            context=scripted_context(plugins, bench, executor, code, tests, tmp_path))
    figures, r_c, r_t = [], [], []
    for s in range(steps):
        figures.append(trainer.step(s, [question]))
        code_rewards, test_rewards = code.updates[-1][1], tests.updates[-1][1]
        r_c.append(dict(zip(programs, code_rewards)))
        r_t.append({(p, name): test_rewards[i * n + j]
                    for i, p in enumerate(programs) for j, name in enumerate(suites)})
    return trainer, figures, r_c, r_t


SUM_DIV = ("def sum_div(number):\n    divisors = [1]\n    for i in range(2, number):\n"
           "        if (number % i) == 0:\n            divisors.append(i)\n    return sum(divisors)\n")
CHECK_STR = "import re\ndef check_str(string):\n    return re.search('^[aeiouAEIOU][A-Za-z0-9_]*', string)\n"


def mbpp_question(task_id, entry_point, reference, inputs):
    """An MBPP+ task as the mbpp+ plugin makes it: inputs only, the reference answers them,
    and evalplus' special oracle for the entry point is its checker."""
    return Problem(task_id=task_id, prompt="", entry_point=entry_point, reference=reference,
                   tests=[TestCase(id=f"base/{i}", kind="call", args=[x]) for i, x in enumerate(inputs)],
                   metadata={"atol": 0.0, "dataset": "mbpp"})


def test_a_special_oracle_judges_the_benchmarks_tests_only(plugins, executor, tmp_path):
    pytest.importorskip("evalplus", reason="evalplus is not installed (pip install 'codea1[benchmarks]')")
    # MBPP+'s sum_div oracle accepts any program's 0: a constant program passed every generated test.
    question = mbpp_question("Mbpp/295", "sum_div", SUM_DIV, [8, 12])
    programs = {"reference-text": SUM_DIV, "constant-zero": "def sum_div(number):\n    return 0\n",
                "honest-wrong": SUM_DIV.replace("range(2, number)", "range(2, number + 1)")}
    suites = {"honest": "assert sum_div(8) == 7\nassert sum_div(12) == 16\nassert sum_div(7) == 1"}
    _, _, [r_c], _ = run_steps(plugins, executor, tmp_path / "sum_div", question, programs, suites, bench="mbpp+")
    assert r_c["reference-text"] == 1.0
    assert r_c["constant-zero"] <= r_c["honest-wrong"], r_c  # (the oracle: 1.000 against 0.333)

    # check_str's oracle compares "is not None" with the answer: `== None`, valid on the reference,
    # failed every program, the reference's own text included, and paid the suite as a bug found.
    question = mbpp_question("Mbpp/737", "check_str", CHECK_STR, ["annie", "dawood"])
    programs = {"reference-text": CHECK_STR,
                "right-other-text": "import re\ndef check_str(s):\n    return re.match(r'[aeiouAEIOU]\\w*', s)\n"}
    suites = {"none-answer": "assert check_str('dawood') == None"}
    _, [figures], [r_c], [r_t] = run_steps(plugins, executor, tmp_path / "check_str", question, programs, suites,
                                           bench="mbpp+")
    assert figures["tests"] == {"valid": 2}
    # K = 1, valid, the right programs pass it: R_T = 0.5 x 1 + 0.5 x 0 (the oracle: 1.0)
    assert r_t["reference-text", "none-answer"] == r_t["right-other-text", "none-answer"] == 0.5
    assert r_c == {"reference-text": 1.0, "right-other-text": 1.0}


def test_the_golden_tests_trainer_pays_no_constant_through_a_special_oracle(plugins, executor, tmp_path):
    """golden-tests: the golden tests are the whole reward. sum_div's oracle accepts any 0,
    so a program returning 0 earned 1.0 while an honest wrong one earned 1/3; a constant
    passes every golden test there and not under the plain comparison, so the plain one
    judges. An oracle no constant passes (check_str's "is not None") still judges."""
    pytest.importorskip("evalplus", reason="evalplus is not installed (pip install 'codea1[benchmarks]')")
    from codea1.trainers.golden_tests import GoldenTestsOptions, GoldenTestsTrainer

    def step(question, programs):
        code = ScriptedPolicy([[fenced(c) for c in programs.values()]])
        context = scripted_context(plugins, plugins.benchmarks.create("mbpp+"), executor, code, ScriptedPolicy([]),
                                   tmp_path / question.entry_point)
        figures = GoldenTestsTrainer(GoldenTestsOptions(m=len(programs)), context=context).step(0, [question])
        return figures, dict(zip(programs, code.updates[-1][1]))

    question = mbpp_question("Mbpp/295", "sum_div", SUM_DIV, [8, 12, 1])
    figures, rewards = step(question, {"reference-text": SUM_DIV, "constant-zero": "def sum_div(number):\n    return 0\n",
                                       "honest-wrong": SUM_DIV.replace("range(2, number)", "range(2, number + 1)")})
    assert rewards["reference-text"] == 1.0 and rewards["honest-wrong"] == pytest.approx(1 / 3)
    assert rewards["constant-zero"] <= rewards["honest-wrong"], rewards  # (the oracle: 1.0 against 1/3)
    assert figures["golden_plain_checks"] == 1

    question = mbpp_question("Mbpp/737", "check_str", CHECK_STR, ["annie", "dawood", "Else"])
    figures, rewards = step(question, {"reference-text": CHECK_STR, "always-none": "def check_str(s):\n    return None\n",
                                       "right-other-text": "import re\ndef check_str(s):\n"
                                                           "    return re.match(r'[aeiouAEIOU]\\w*', s)\n"})
    assert figures["golden_plain_checks"] == 0
    assert rewards == {"reference-text": 1.0, "always-none": pytest.approx(1 / 3), "right-other-text": 1.0}


def test_respelled_copies_of_one_call_earn_what_one_call_earns(plugins, executor, tmp_path):
    question = Problem(task_id="rules/add", prompt="Write add(a, b).", entry_point="add",
                       reference="def add(a, b):\n    return a + b\n",
                       tests=[parse_assert("assert add(1, 2) == 3", "add", "golden/0")])
    programs = {"right": "def add(a, b):\n    return a + b\n",
                "one-bug": "def add(a, b):\n    return a + b + (a == 7)\n"}
    copies = ["add(7, 1) == 8", "add(7.0, 1) == 8", "add(7, True) == 8", "add(a=7, b=1) == 8",
              "int(add(7, 1)) == 8", "abs(add(7, 1)) == 8", "round(add(7, 1)) == 8"]
    suites = {"copies": "\n".join(f"assert {c}" for c in copies), "one": "assert add(7, 1) == 8"}
    _, [figures], _, [r_t] = run_steps(plugins, executor, tmp_path, question, programs, suites)
    # Per program: "copies" keeps one valid test, six duplicates; "one" one valid, six missing.
    assert figures["tests"] == {"duplicate": 12, "missing": 12, "valid": 4}
    assert r_t["one-bug", "copies"] == r_t["one-bug", "one"] == pytest.approx(1 / 7)  # (before: 1.0 vs 1/7)


@pytest.mark.parametrize("reference, copies", [
    ("def clip(x, cap=float('inf')):\n    return min(x, cap)\n",  # a default that is data, not a literal
     ["clip(7)", "clip(7, float('inf'))", "clip(x=7, cap=1e999)"]),
    ("clip = lambda x, cap=10: min(x, cap)\n",  # the entry point a lambda
     ["clip(7)", "clip(7, 10)", "clip(cap=10.0, x=7)"]),
    ("def _clip(x, cap=10):\n    return min(x, cap)\nif True:\n    clip = _clip\n",  # an alias, under an if
     ["clip(7)", "clip(7, 10)", "clip(x=7, cap=10)"]),
])
def test_a_call_through_its_default_or_an_entry_point_that_is_no_plain_def_is_one_call(
        plugins, executor, tmp_path, reference, copies):
    question = Problem(task_id="rules/clip", prompt="Write clip(x, cap).", entry_point="clip", reference=reference,
                       tests=[parse_assert("assert clip(1) == 1", "clip", "golden/0")])
    programs = {"right": reference, "one-bug": "def clip(x, cap=10):\n    return x + (x == 7)\n"}
    suites = {"copies": "\n".join(f"assert {c} == 7" for c in copies), "one": f"assert {copies[0]} == 7"}
    _, [figures], _, [r_t] = run_steps(plugins, executor, tmp_path, question, programs, suites)
    assert figures["tests"] == {"duplicate": 4, "missing": 4, "valid": 4}  # (before: 6 valid per copies suite)
    assert r_t["one-bug", "copies"] == r_t["one-bug", "one"]


def test_one_call_under_wrappers_whose_answers_differ_is_one_test(plugins, executor, tmp_path):
    """str(add(7, 1)), add(7, 1).bit_length(), ...: the same values reach the function, so one
    test of the suite, whatever each wrapper makes of the answer."""
    question = Problem(task_id="rules/add", prompt="Write add(a, b).", entry_point="add",
                       reference="def add(a, b):\n    return a + b\n",
                       tests=[parse_assert("assert add(1, 2) == 3", "add", "golden/0")])
    programs = {"right": "def add(a, b):\n    return a + b\n",
                "one-bug": "def add(a, b):\n    return a + b + (a == 7)\n"}
    split = ["add(7, 1) == 8", "str(add(7, 1)) == '8'", "add(7, 1).bit_length() == 4",
             "tuple(str(add(7, 1))) == ('8',)", "str(add(7, 1)).zfill(2) == '08'"]
    honest = ["add(7, 1) == 8", "add(1, 2) == 3", "add(0, 0) == 0", "add(2, 5) == 7", "add(-1, 1) == 0"]
    suites = {"split": "\n".join(f"assert {c}" for c in split), "honest": "\n".join(f"assert {c}" for c in honest)}
    _, [figures], _, [r_t] = run_steps(plugins, executor, tmp_path, question, programs, suites)
    assert figures["tests"] == {"duplicate": 8, "valid": 12}  # (before: 20 valid)
    assert r_t["one-bug", "split"] < r_t["one-bug", "honest"]  # (before: 0.9 against 0.6)


def test_a_decorated_reference_binds_calls_and_a_decorated_program_keeps_its_function(plugins, executor, tmp_path):
    reference = "import functools\n@functools.lru_cache(maxsize=None)\ndef add(a, b):\n    return a + b\n"
    question = Problem(task_id="rules/add-cached", prompt="Write add(a, b).", entry_point="add",
                       reference=reference, tests=[parse_assert("assert add(1, 2) == 3", "add", "golden/0")])
    programs = {"right": reference, "one-bug": "def add(a, b):\n    return a + b + (a == 7)\n"}
    suites = {"respelled": "assert add(7, 1) == 8\nassert add(a=7, b=1) == 8\nassert add(7, b=1) == 8",
              "one": "assert add(7, 1) == 8"}
    _, [figures], [r_c], [r_t] = run_steps(plugins, executor, tmp_path, question, programs, suites)
    assert figures["tests"] == {"duplicate": 4, "missing": 4, "valid": 4}  # (before: 12 valid)
    assert r_t["one-bug", "respelled"] == r_t["one-bug", "one"]
    assert r_c["right"] == 1.0  # (before: 0.0: the sanitizer dropped the decorated function)


def test_equal_inputs_the_reference_answers_differently_stay_two_tests(plugins, executor, tmp_path):
    reference = "def digits(x):\n    return 1 if type(x) is int else -1\n"
    question = Problem(task_id="rules/digits", prompt="", entry_point="digits", reference=reference,
                       tests=[parse_assert("assert digits(2) == 1", "digits", "golden/0")])
    programs = {"right": reference, "ignores-floats": "def digits(x):\n    return 1\n"}
    suites = {"suite": "assert digits(5) == 1\nassert digits(5.0) == -1"}
    _, [figures], [r_c], _ = run_steps(plugins, executor, tmp_path, question, programs, suites)
    assert figures["tests"] == {"valid": 4}
    assert r_c == {"right": 1.0, "ignores-floats": 0.5}


def test_one_unstable_program_cannot_remove_a_test(plugins, executor, tmp_path):
    """Consensus validation: a partial program answers at random where it would be wrong, so
    its two runs differ there. It loses its vote on those calls; the test stays, and it fails."""
    programs = {"right": SQ, "right-other-text": SQ_OTHER,
                "partial-random": ("import random\ndef sq(x):\n"
                                   "    return x * x if x < 3 else random.randrange(10 ** 6)\n")}
    suites = {"suite": "assert sq(2) == 4\nassert sq(5) == 25"}
    _, [figures], [r_c], _ = run_steps(plugins, executor, tmp_path, SQ_QUESTION, programs, suites,
                                       validation="consensus")
    assert figures["tests"] == {"valid": 6}  # (before: sq(5) dropped as nondeterministic in every suite)
    assert r_c["right"] == r_c["right-other-text"] == 1.0
    assert r_c["partial-random"] == 0.5  # (before: 1.0)


def test_a_vote_runs_each_input_with_its_own_type(plugins, executor, tmp_path):
    """Consensus: to_str(5) and to_str(5.0) are two runs of the vote (equal under ==, but the
    function receives other values), so to_str(5.0) is not judged on the answer to to_str(5)."""
    reference = "def to_str(x):\n    return str(x)\n"
    question = Problem(task_id="rules/to-str", prompt="", entry_point="to_str", reference=reference,
                       tests=[parse_assert("assert to_str(1) == '1'", "to_str", "golden/0")])
    programs = {"right-a": reference, "right-b": "def to_str(x):\n    return f'{x}'\n",
                "right-c": "def to_str(x):\n    return '%s' % (x,)\n",
                "wrong-floats": ("def to_str(x):\n"
                                 "    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)\n")}
    suites = {"int-first": "assert to_str(5) == '5'", "float-second": "assert to_str(5.0) == '5.0'"}
    trainer, [figures], [r_c], _ = run_steps(plugins, executor, tmp_path, question, programs, suites,
                                             validation="consensus")
    assert figures["tests"] == {"valid": 8}
    assert r_c == {"right-a": 1.0, "right-b": 1.0, "right-c": 1.0, "wrong-floats": 0.5}  # (before: 0.5 and 1.0)
    assert trainer.book.retrieve(question.task_id, 20) == ["assert to_str(5.0) == '5.0'"]  # (before: == '5')


def test_a_wrong_consensus_answer_leaves_the_book_when_the_vote_changes(plugins, executor, tmp_path):
    wrong_at_5 = "def sq(x):\n    return x * x + (x == 5)\n"
    wrong_at_2 = "def sq(x):\n    return x * x + (x == 2)\n"
    # Step 0: three identical wrong programs outvote the right one (majority voting's own limit):
    # sq(5) is corrected to 26, the right program fails it, and it enters the book. Step 1: the
    # right programs are the majority, and no program passes `== 26` (which used to be the only
    # way out of the book): it no longer has the vote, and leaves.
    programs = {"a": [wrong_at_5, SQ], "b": [wrong_at_5, SQ_OTHER], "c": [wrong_at_5, SQ], "d": [SQ, wrong_at_2]}
    suites = {"suite": "assert sq(2) == 4\nassert sq(5) == 25"}
    trainer, figures, _, _ = run_steps(plugins, executor, tmp_path, SQ_QUESTION, programs, suites, steps=2,
                                       validation="consensus")
    assert figures[0]["mistake_book"]["added"] == 1
    assert "assert sq(5) == 26" not in trainer.book.questions.get(SQ_QUESTION.task_id, {})
    assert figures[1]["mistake_book"]["disputed"] == 1
    assert trainer.book.retrieve(SQ_QUESTION.task_id) == ["assert sq(2) == 4"]  # failed by step 1's wrong program


def test_a_slow_valid_test_keeps_the_references_time_in_the_book(plugins, executor, tmp_path):
    """The reference needs 2.5 s for slow(500) (it sleeps): as a generated test it gets 4 x that;
    in the book it used to get a flat 2 s, and every correct program timed out on it there."""
    reference = "import time\ndef slow(x):\n    if x > 100:\n        time.sleep(2.5)\n    return x + 1\n"
    question = Problem(task_id="rules/slow", prompt="Write slow(x).", entry_point="slow", reference=reference,
                       tests=[parse_assert("assert slow(1) == 2", "slow", "golden/0")])
    programs = {"reference-text": reference, "wrong-on-large": "def slow(x):\n    return x + 1 + (x > 100)\n"}
    suites = {"suite": "assert slow(1) == 2\nassert slow(500) == 501"}
    trainer, figures, _, _ = run_steps(plugins, executor, tmp_path, question, programs, suites, steps=2,
                                       book_history=1)
    assert figures[0]["mistake_book"]["added"] == 1
    # Step 1: the book's slow(500) runs on both: the reference's text passes it (before: a timeout).
    assert figures[1]["pass_rate_hist"] == 0.5
    assert trainer.book.time(question.task_id, "assert slow(500) == 501") >= 2.5
    assert sorted(p.name for p in (tmp_path / "mistake_book").iterdir()) == ["step-000002.json"]  # book_history 1


def test_a_program_that_raises_everywhere_cannot_flood_the_book(plugins, executor, tmp_path):
    programs = {"raises": "def sq(x):\n    raise ValueError(x)\n",
                "partial": "def sq(x):\n    return x * x if x < 3 else 0\n", "right": SQ}
    suites = {"easy": "assert sq(0) == 0\nassert sq(1) == 1\nassert sq(2) == 4",
              "hard": "assert sq(2) == 4\nassert sq(3) == 9\nassert sq(4) == 16"}
    trainer, [figures], _, _ = run_steps(plugins, executor, tmp_path, SQ_QUESTION, programs, suites)
    # Only what a program that passes something failed: the hard tests the partial program fails
    # (before: every easy test too, entered by the raising program, tied with the hard ones).
    assert trainer.book.retrieve(SQ_QUESTION.task_id) == ["assert sq(3) == 9", "assert sq(4) == 16"]
    assert figures["mistake_book"]["added"] == 2


@pytest.mark.parametrize("variant", ["authors", "paper"])
def test_an_empty_suite_does_not_lower_a_right_programs_reward(plugins, executor, tmp_path, variant):
    programs = {"right": SQ, "partial": "def sq(x):\n    return x * x if x < 3 else 0\n"}
    suites = {"valid": "assert sq(2) == 4\nassert sq(3) == 9", "all-error": "assert sq('a') == 1\nassert sq([]) == 0"}
    _, [figures], [r_c], _ = run_steps(plugins, executor, tmp_path, SQ_QUESTION, programs, suites,
                                       reward_variant=variant)
    assert figures["tests"] == {"error": 4, "valid": 4}
    assert r_c == {"right": 1.0, "partial": 0.5}  # (before: 0.5 and 0.25)


def test_two_timeouts_in_one_suite_leave_the_other_suites_their_results(plugins, executor, tmp_path):
    """Both programs hang on inputs of 100 and more; one is right elsewhere, one wrong at 5.
    The "hangs" suite's two timeouts (after a pass) end that suite only: the "plain" suite
    still runs and tells the two apart (before: it was left unrun, and both programs earned
    0.0)."""
    hangs = "def sq(x):\n    while x >= 100:\n        pass\n    return x * x{}\n"
    programs = {"slow-right": hangs.format(""), "slow-wrong-at-5": hangs.format(" + (x == 5)")}
    suites = {"hangs": "assert sq(2) == 4\nassert sq(100) == 10000\nassert sq(101) == 10201",
              "plain": "assert sq(3) == 9\nassert sq(5) == 25"}
    _, [figures], [r_c], _ = run_steps(plugins, executor, tmp_path, SQ_QUESTION, programs, suites)
    assert figures["tests"] == {"missing": 2, "valid": 10}  # K = 3: "plain" has two of three
    # per suite, the share of its kept tests passed: "hangs" 1/3 for both; "plain" 1 and 1/2
    assert r_c == pytest.approx({"slow-right": (1 / 3 + 1) / 2, "slow-wrong-at-5": (1 / 3 + 1 / 2) / 2})
    # (before: "plain" unrun for both, 1/6 and 1/6)
