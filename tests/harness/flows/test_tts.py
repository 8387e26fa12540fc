"""Best-of-N test-time scaling: the pure selection rules with hand-worked matrices, and
`codea1 tts` on the demo benchmark with codes and tests replayed from saved responses
(`codea1 generate --generator replay`), reproducing hand-computed selections, including a
task where selection overturns a wrong majority."""

from __future__ import annotations

import json

import pytest

from codea1.harness.cli import main
from codea1.harness.flows.tts import curves, grid, select_best, unique_tests


def test_most_passes_wins_and_ties_go_to_the_lowest_index():
    assert select_best([[True, False], [True, True], [False, True]]) == 1
    assert select_best([[True, False], [False, True]]) == 0  # tie: the earliest sample
    assert select_best([[], []]) == 0
    with pytest.raises(ValueError):
        select_best([])


def test_unique_tests_count_once_across_suites():
    tests, first = unique_tests([["assert f(1) == 2", "assert f(2)==3"], ["assert f(2) == 3", "assert f(4) == 5"]])
    assert tests == ["assert f(1) == 2", "assert f(2)==3", "assert f(4) == 5"] and first == [0, 0, 1]


def test_grid_and_curves():
    assert grid(16) == [1, 2, 4, 8, 16] and grid(3) == [1, 2, 3] and grid(1) == [1]
    # one task, 2 codes, 2 unique tests: test 0 from suite 0 (only code 0 passes it),
    # test 1 from suite 1 (only code 1 passes it, twice as hard); code 1 is the right one.
    task = {"passes": [[True, False], [False, True]], "first_suite": [0, 1], "golden": [False, True]}
    got = curves([task], ms=[1, 2], ns=[0, 1, 2])
    assert got == {"m=1,n=0": 0.0, "m=1,n=1": 0.0, "m=1,n=2": 0.0,
                   "m=2,n=0": 0.0, "m=2,n=1": 0.0, "m=2,n=2": 0.0}
    task["passes"] = [[True, False], [True, True]]
    assert curves([task], ms=[2], ns=[1, 2]) == {"m=2,n=1": 0.0, "m=2,n=2": 1.0}


def block(lines):
    return "Here you are:\n```python\n" + "\n".join(lines) + "\n```\n"


WRONG_PAL = "def is_palindrome(text):\n    return text == text[::-1]\n"
RIGHT_PAL = ("def is_palindrome(text):\n    kept = [c.lower() for c in text if c.isalnum()]\n"
             "    return kept == kept[::-1]\n")
CODES = {
    # a wrong majority: three copies of the case-sensitive version, the right one last
    "demo/1": [WRONG_PAL, WRONG_PAL, WRONG_PAL, RIGHT_PAL],
    "demo/0": ["def digit_sum(n):\n    return len(str(n))\n",
               "def digit_sum(n):\n    return sum(int(c) for c in str(n))\n",
               "def digit_sum(n):\n    return sum(map(int, str(n)))\n"],
    "demo/6": ["def second_largest(xs):\n    return sorted(set(xs))[-2]\n",
               "def second_largest(xs):\n    d = sorted(set(xs))\n    return d[-2] if len(d) > 1 else None\n"],
    # the only test predicts a wrong answer: nothing passes, the tie goes to sample 0 (wrong)
    "demo/4": ["def count_vowels(text)\n    return 0\n",
               "def count_vowels(text):\n    return sum(c in 'aeiou' for c in text.lower())\n"],
}
SUITES = {
    "demo/1": [['assert is_palindrome("abba") == True', 'assert is_palindrome("A man, a plan, a canal: Panama") == True'],
               ['assert is_palindrome("abba")==True', 'assert is_palindrome("Ab") == False',
                'assert is_palindrome("No lemon, no melon") == True']],
    "demo/0": [["assert digit_sum(123) == 6", "assert digit_sum(0) == 0", "assert 0 < digit_sum(5) < 9"],
               ["assert digit_sum(99) == 18"]],
    "demo/6": [["assert second_largest([1, 2, 3]) == 3", "assert second_largest([5, 5]) == None"]],
    "demo/4": [["assert count_vowels('xyz') == 1"]],
}


@pytest.fixture
def replayed(tmp_path):
    """Saved model responses -> `codea1 generate --generator replay` -> samples.jsonl, tests.jsonl."""
    responses = tmp_path / "responses.jsonl"
    with responses.open("w") as fh:
        for task, codes in CODES.items():
            for code in codes:
                fh.write(json.dumps({"task_id": task, "raw": f"Sure.\n```python\n{code}```\nDone."}) + "\n")
    test_responses = tmp_path / "test_responses.jsonl"
    with test_responses.open("w") as fh:
        for task, suites in SUITES.items():
            for suite in suites:
                fh.write(json.dumps({"task_id": task, "raw": block(suite)}) + "\n")
    paths = {}
    for role, src, counts in (("code", responses, CODES), ("tests", test_responses, SUITES)):
        out = tmp_path / f"gen-{role}"
        for task in CODES:  # one call per task: the tasks have different numbers of samples
            assert main(["generate", "--role", role, "--benchmark", "demo", "--generator", "replay",
                         "--generator-opt", f"file={src}", "--tasks", task, "--n", str(len(counts[task])),
                         "--no-progress", "--out", str(out)]) == 0
        paths[role] = out / ("samples.jsonl" if role == "code" else "tests.jsonl")
    return paths


def test_tts_reproduces_hand_computed_selections(replayed, tmp_path, capsys):
    out = tmp_path / "tts"
    capsys.readouterr()
    assert main(["tts", "--benchmark", "demo", "--codes", str(replayed["code"]), "--tests", str(replayed["tests"]),
                 "--curves", "--no-progress", "--out", str(out)]) == 0
    assert f"wrote {out}/results.json, matrix.jsonl, golden/" in capsys.readouterr().out
    r = json.loads((out / "results.json").read_text())
    t = r["tasks"]
    # demo/1: the wrong code passes 2 of 4 unique tests ("abba" counted once), the right one 4
    assert t["demo/1"]["pass_counts"] == [2, 2, 2, 4] and t["demo/1"]["unique_tests"] == 4
    assert t["demo/1"]["chosen"] == 3 and t["demo/1"]["chosen_correct"]
    assert t["demo/1"]["golden"] == [False, False, False, True]
    # demo/0: two right codes tie on 3; the chained comparison is not a usable test
    assert t["demo/0"]["pass_counts"] == [0, 3, 3] and t["demo/0"]["chosen"] == 1
    assert t["demo/0"]["unparsed"] == [{"test": "assert 0 < digit_sum(5) < 9",
                                        "reason": "a chained comparison: the paper's form is assert f(args) == answer"}]
    # demo/6: a wrongly predicted answer fails both codes; the other test decides
    assert t["demo/6"]["pass_counts"] == [0, 1] and t["demo/6"]["chosen"] == 1
    # demo/4: nothing passes anything: the tie rule picks sample 0, which does not even parse
    assert t["demo/4"]["pass_counts"] == [0, 0] and t["demo/4"]["chosen"] == 0
    assert not t["demo/4"]["chosen_correct"]
    m = r["metrics"]
    assert m["best_of_n"] == pytest.approx(3 / 4)
    assert m["avg_at_m"] == pytest.approx((2 / 3 + 1 / 4 + 1 / 2 + 1 / 2) / 4)
    assert m["oracle"] == 1.0
    assert r["counts"]["tasks"] == 4 and r["counts"]["max_codes"] == 4 and r["counts"]["max_suites"] == 2
    # CURE's grid: one code is avg@1 of the first samples (all wrong); two codes and the first
    # suite already fix demo/0 and demo/6
    assert r["curves"]["m=1,n=2"] == 0.0 and r["curves"]["m=2,n=1"] == 0.5 and r["curves"]["m=4,n=2"] == 0.75
    assert r["curves"]["m=4,n=0"] == 0.0  # no tests: the first sample
    # a rerun resumes: nothing is executed again
    matrix_rows = (out / "matrix.jsonl").read_text()
    assert main(["tts", "--benchmark", "demo", "--codes", str(replayed["code"]), "--tests", str(replayed["tests"]),
                 "--curves", "--no-progress", "--out", str(out)]) == 0
    assert (out / "matrix.jsonl").read_text() == matrix_rows
    assert json.loads((out / "results.json").read_text())["metrics"] == m


def test_tts_does_not_claim_a_matrix_it_did_not_write(replayed, tmp_path, capsys):
    """Suites that parse into no test leave the matrix empty: the command does not say it wrote one."""
    tests = tmp_path / "unusable.jsonl"
    tests.write_text(json.dumps({"task_id": "demo/0", "tests": ["assert 0 < digit_sum(5) < 9"]}) + "\n")
    out = tmp_path / "tts"
    capsys.readouterr()
    assert main(["tts", "--benchmark", "demo", "--codes", str(replayed["code"]), "--tests", str(tests),
                 "--tasks", "demo/0", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "matrix.jsonl" not in printed and f"wrote {out}/results.json, golden/" in printed
    assert json.loads((out / "results.json").read_text())["counts"]["matrix_rows"] == 0
