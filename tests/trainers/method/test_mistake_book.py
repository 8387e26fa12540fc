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
    assert data == {"version": 1, "questions": {"q1": [{"test": A, "frequency": 1}, {"test": B, "frequency": 1}],
                                                "q2": [{"test": C, "frequency": 1}]}}
    again = MistakeBook.load(path)
    assert again.questions == book.questions and again.retrieve("q1") == [A, B]


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
    """Statuses of one candidate: its generated tests a (fail), b (timeout), c (not run); the
    book's x (pass), y (timeout), z (not run)."""
    book = MistakeBook({"q": {"x": 1, "y": 1, "z": 1}})
    change = book.update_from_statuses("q", [("a", "fail"), ("b", "timeout"), ("c", "not_run")],
                                       [("x", "pass"), ("y", "timeout"), ("z", "not_run")])
    assert change.added == ["a"] and change.removed == ["x"]
    assert book.questions["q"] == {"y": 1, "z": 1, "a": 1}
