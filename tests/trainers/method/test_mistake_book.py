"""The Mistake Book over several steps: retrieval order, +1 / -1 / removal, one count per
candidate, atomic saves, clear errors for bad files."""

from __future__ import annotations

import json

import pytest

from codea1.trainers.method.mistake_book import MistakeBook, MistakeBookError

A, B, C = "assert f(1) == 1", "assert f(2) == 4", "assert f(3) == 9"


def test_updates_over_several_steps(tmp_path):
    book = MistakeBook()
    # step 1: candidate 0 fails A and B (B in two of its suites: counted once), candidate 1 fails A
    change = book.update("q", failed_new=[A, B, B], passed_book=[])
    assert change.added == [A, B]
    book.update("q", failed_new=[A], passed_book=[])
    assert book.questions["q"] == {A: 2, B: 1}
    assert book.retrieve("q") == [A, B]
    # step 2: a candidate passes both book tests and fails a new one
    change = book.update("q", failed_new=[C], passed_book=[A, B])
    assert change.added == [C] and change.decremented == [A] and change.removed == [B]
    assert book.questions["q"] == {A: 1, C: 1}
    assert book.retrieve("q") == [A, C]  # equal frequencies: the order they entered
    # step 3: C failed twice more, A passed: A leaves, C leads
    book.update("q", failed_new=[C], passed_book=[A])
    book.update("q", failed_new=[C], passed_book=[])
    assert book.questions["q"] == {C: 3} and book.size() == 1
    # every book test passed: the question leaves the book
    book.update("q", failed_new=[], passed_book=[C])
    book.update("q", failed_new=[], passed_book=[C])
    assert book.update("q", failed_new=[], passed_book=[C]).removed == [C]
    assert book.questions == {} and book.retrieve("q") == []


def test_retrieval_takes_the_top_eight_by_frequency():
    book = MistakeBook({"q": {f"assert f({i}) == {i}": 1 + i % 3 for i in range(12)}})
    top = book.retrieve("q")
    assert len(top) == 8
    assert [book.questions["q"][t] for t in top] == [3, 3, 3, 3, 2, 2, 2, 2]
    assert top[:4] == ["assert f(2) == 2", "assert f(5) == 5", "assert f(8) == 8", "assert f(11) == 11"]
    assert book.retrieve("q", top=3) == top[:3]


def test_save_and_load_round_trip_atomically(tmp_path):
    book = MistakeBook()
    book.update("q1", [A, B], [])
    book.update("q2", [C], [])
    path = tmp_path / "book" / "step-1.json"
    book.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["step-1.json"]  # no temporary file left
    data = json.loads(path.read_text())
    assert data == {"version": 2, "questions": {"q1": [{"test": A, "frequency": 1, "call": A},
                                                       {"test": B, "frequency": 1, "call": B}],
                                                "q2": [{"test": C, "frequency": 1, "call": C}]}}
    again = MistakeBook.load(path)
    assert again.questions == book.questions and again.retrieve("q1") == [A, B]
    book.update("q1", [C], [], {C: "c-call"}, {C: 0.25})
    book.save(path)
    again = MistakeBook.load(path)
    assert again.calls["q1"][C] == "c-call" and again.time("q1", C) == 0.25
    # a version 1 file (no calls, no times) still loads: its entries keyed by their text
    path.write_text(json.dumps({"version": 1, "questions": {"q": [{"test": A, "frequency": 2}]}}))
    old = MistakeBook.load(path)
    assert old.questions == {"q": {A: 2}} and old.time("q", A) is None


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"version": 1, "questions": {"q": [{"test": "x"}]}}')
    with pytest.raises(MistakeBookError, match=r"b.json: question 'q': entries need fields 'test' and 'frequency'"):
        MistakeBook.load(bad)
    bad.write_text("{")
    with pytest.raises(MistakeBookError, match=r"b.json:1: not JSON"):
        MistakeBook.load(bad)
    with pytest.raises(MistakeBookError, match="no such file|No such file"):
        MistakeBook.load(tmp_path / "missing.json")


def test_only_a_wrong_answer_enters_and_only_a_pass_leaves():
    """Statuses of one candidate: its generated tests a (fail), b (timeout), c (not run), d
    (pass); the book's x (pass), y (timeout), z (not run). a enters with the candidate's pass
    rate on the tests that ran (1 of a, b, d)."""
    book = MistakeBook({"q": {"x": 1, "y": 1, "z": 1}})
    change = book.update_from_statuses("q", [("a", "fail"), ("b", "timeout"), ("c", "not_run"), ("d", "pass")],
                                       [("x", "pass"), ("y", "timeout"), ("z", "not_run")])
    assert change.added == ["a"] and change.removed == ["x"]
    assert book.questions["q"] == {"y": 1, "z": 1, "a": 0.333333}


def test_a_program_that_passes_nothing_adds_nothing_and_a_call_is_one_entry():
    """A candidate that passed none of its generated tests (it raises everywhere) says nothing
    about which tests find bugs; respelled copies of one failed call are one entry, and one
    call in the pass rate (each failure here adds 1/2: call k7 failed, k0 or kx passed)."""
    book = MistakeBook()
    assert book.update_from_statuses("q", [("a", "fail", "call-a", 0.1), ("b", "fail", "call-b", 0.1)], []).added == []
    change = book.update_from_statuses("q", [("add(7, 1) == 9", "fail", "k7", 0.2),
                                             ("add(7.0, 1) == 9", "fail", "k7", 0.2),
                                             ("add(0, 0) == 0", "pass", "k0", 0.0)], [])
    assert change.added == ["add(7, 1) == 9"] and book.questions["q"] == {"add(7, 1) == 9": 0.5}
    book.update_from_statuses("q", [("int(add(7, 1)) == 9", "fail", "k7", 0.2), ("x", "pass", "kx", 0.0)], [])
    assert book.questions["q"] == {"add(7, 1) == 9": 1} and book.time("q", "add(7, 1) == 9") == 0.2


def test_a_failure_weighs_the_failing_programs_pass_rate(tmp_path):
    """A program right on 3 of 4 calls weighs its one failure 0.75; two programs that pass
    only a trivial call (1 of 4) weigh each of theirs 0.25: together, 0.5 on the easy tests
    they fail, below the hard one (with +1 a failure, 2 against 1). A book pass takes 1
    away, and a frequency survives a save and a load as written."""
    book = MistakeBook()
    nearly_right = [("hard", "fail", "h", 0.0)] + [(f"ok{i}", "pass", f"o{i}", 0.0) for i in range(3)]
    broken = [("trivial", "pass", "t", 0.0)] + [(f"easy{i}", "fail", f"e{i}", 0.0) for i in range(3)]
    book.update_from_statuses("q", nearly_right, [])
    book.update_from_statuses("q", broken, [])
    book.update_from_statuses("q", broken, [])
    assert book.questions["q"] == {"hard": 0.75, "easy0": 0.5, "easy1": 0.5, "easy2": 0.5}
    assert book.retrieve("q", 2) == ["hard", "easy0"]
    assert book.update("q", [], ["easy1"]).removed == ["easy1"]
    book.save(tmp_path / "book.json")
    assert MistakeBook.load(tmp_path / "book.json").questions == book.questions


def test_the_book_is_bounded_least_frequent_and_newest_first():
    """A burst of new entries (one program failing many tests) cannot evict what the book holds."""
    book = MistakeBook({"q": {"old": 1, "kept": 3}}, limit=3)
    change = book.update("q", ["new", "newer", "newest"], [])
    assert change.removed == ["newest", "newer"] and list(book.questions["q"]) == ["old", "kept", "new"]
    change = book.update("q", ["newer"], ["old"])  # "old" leaves by a pass, making room
    assert change.removed == ["old"] and list(book.questions["q"]) == ["kept", "new", "newer"]
    with pytest.raises(ValueError):
        MistakeBook(limit=0)
