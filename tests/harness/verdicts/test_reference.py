"""The reference cache's key: equal for equal problems, different whenever anything a
reference run depends on differs."""

from __future__ import annotations

import dataclasses
import json
import marshal
import sys

from codea1.harness.records import Problem
from codea1.harness.records import TestCase as Case  # not "Test...": pytest would collect it
from codea1.harness.verdicts.plaindata import Opaque
from codea1.harness.verdicts.reference import problem_key


def problem(*args, expected=None, **changes) -> Problem:
    tests = [Case(id=f"t{i}", args=[a], has_expected=expected is not None, expected=expected)
             for i, a in enumerate(args)]
    return dataclasses.replace(Problem(task_id="p", prompt="", entry_point="f", reference="def f(x):\n    return x\n",
                                       tests=tests), **changes)


def test_problem_key_tells_apart_what_a_reference_run_depends_on():
    base = problem(1, [2, 3], "a")
    assert problem_key(base) == problem_key(problem(1, [2, 3], "a"))  # built anew: same key
    assert problem_key(dataclasses.replace(base, task_id="q")) == problem_key(base)  # the name is not content
    different = [problem(1.0, [2, 3], "a"), problem(True, [2, 3], "a"), problem(1, (2, 3), "a"), problem(1, [2, 3], "b"),
                 problem(1, [2, 3]), problem(1, [2, 3], "a", expected=1), problem(1, [2, 3], "a", prelude="x = 1"),
                 problem(1, [2, 3], "a", reference="def f(x):\n    return -x\n"),
                 problem(1, [2, 3], "a", entry_point="g")]
    keys = {problem_key(p) for p in different}
    assert len(keys) == len(different) and problem_key(base) not in keys
    call = dataclasses.replace(base, tests=[Case(id="c", call="f(1)", expected=1)])
    assert problem_key(call) != problem_key(dataclasses.replace(call, tests=[Case(id="c", call="f(1)", expected=1,
                                                                                      op="!=")]))



def test_problem_key_is_a_function_of_the_values_alone():
    """Equal inputs give equal keys however they were built (shared or fresh objects, parsed
    from JSON or written out, interned strings or joined ones); a value marshal cannot write
    falls back to its repr, and still gives a stable key."""
    shared = [2, 3]
    built = problem(shared, shared, sys.intern("ab"), {"k": shared})
    parsed = problem(*json.loads('[[2, 3], [2, 3], "ab", {"k": [2, 3]}]'))
    joined = problem([2, 3], [2, 3], "".join(["a", "b"]), {"k": [2, 3]})
    assert problem_key(built) == problem_key(parsed) == problem_key(joined)
    assert problem_key(problem(0.0)) != problem_key(problem(-0.0))
    assert problem_key(problem([1])) != problem_key(problem((1,)))
    opaque = problem(1, expected=Opaque("Widget"))
    assert problem_key(opaque) == problem_key(problem(1, expected=Opaque("Widget")))
    assert problem_key(opaque) != problem_key(problem(1, expected=Opaque("Gadget")))


def test_a_warm_run_reads_the_tests_encoding_saved_beside_the_results(executor, tmp_path, monkeypatch):
    """The first run encodes the tests for the sandbox and saves the encoding beside the
    reference's results; a run that finds both encodes nothing and sends the same text."""
    from codea1.harness.verdicts import execution
    from codea1.harness.verdicts.reference import run_references

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    p = problem(1, [2, 3], "a")
    first = run_references([p], executor, checks_tests=lambda p: False)["p"]
    assert first.values == {0: 1, 1: [2, 3], 2: "a"}
    saved = list((tmp_path / "reference").glob(f"*.tests{execution.TESTS_FORMAT}.json"))
    assert len(saved) == 1 and saved[0].read_text() == execution.encoded_tests(p.tests)[1]

    def no_encoding(test):
        raise AssertionError("encoded again")

    monkeypatch.setattr(execution, "_test_tree", no_encoding)
    again = problem(1, [2, 3], "a")  # a new list: nothing of the first run in memory
    assert run_references([again], executor, checks_tests=lambda p: False)["p"].values == first.values
    assert execution.encoded_tests(again.tests) == execution.encoded_tests(p.tests)


def test_the_tests_are_saved_as_the_zygote_holds_them_and_made_for_older_caches(executor, tmp_path, monkeypatch):
    """Beside the tests' JSON, a blob file holds them as the zygote decodes them; a warm run
    hands its path on (tests_blob), and a cache from before the blobs gets one."""
    from codea1.harness.sandbox.child import decode_tests
    from codea1.harness.verdicts import execution, reference
    from codea1.harness.verdicts.reference import run_references

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    p = problem(1, (2, 3), "a")
    run_references([p], executor, checks_tests=lambda p: False)
    blobs = list((tmp_path / "reference").glob(f"*.tests{execution.TESTS_FORMAT}.blob"))
    assert len(blobs) == 1
    decoded = decode_tests(json.loads(execution.encoded_tests(p.tests)[1]))
    assert marshal.loads(execution.tests_blob(p.tests)) == decoded
    assert decoded[1]["args_value"] == [(2, 3)] and "args" not in decoded[1]
    blobs[0].unlink()  # as a cache written before the blobs
    again = problem(1, (2, 3), "a")
    run_references([again], executor, checks_tests=lambda p: False)
    assert blobs[0].exists() and marshal.loads(execution.tests_blob(again.tests)) == decoded
    # A cache that cannot be written to (root ignores permissions: the refusal is simulated)
    # still serves its results, and the zygotes get the JSON.
    blobs[0].unlink()

    def refused(path, data):
        raise PermissionError(13, "read-only", str(path))

    monkeypatch.setattr(reference, "atomic_write", refused)
    third = problem(1, (2, 3), "a")
    assert run_references([third], executor, checks_tests=lambda p: False)["p"].values == {0: 1, 1: (2, 3), 2: "a"}
    assert execution.tests_blob(third.tests) is None


def test_a_torn_or_foreign_cache_file_is_recomputed(executor, tmp_path, monkeypatch):
    """The cache is read with marshal: a file cut short, garbage, or marshal data of another
    shape is not trusted; the reference runs again and the file is written anew."""
    from codea1.harness.verdicts.reference import ReferenceRun, run_references

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    values = {0: 1, 1: (2, 3), 2: {"a": {4}}, 3: float("inf")}
    p = problem(1, (2, 3), {"a": {4}}, float("inf"))
    assert run_references([p], executor, checks_tests=lambda p: False)["p"].values == values
    [path] = (tmp_path / "reference").glob("*.marshal")
    whole = path.read_bytes()
    for bad in (whole[:len(whole) // 2], b"garbage", marshal.dumps([1, 2]), marshal.dumps({"times": 1})):
        path.write_bytes(bad)
        assert run_references([problem(1, (2, 3), {"a": {4}}, float("inf"))], executor,
                              checks_tests=lambda p: False)["p"].values == values
        assert ReferenceRun.load(path).values == values


def test_the_cache_key_changes_when_what_the_sandbox_can_import_changes(tmp_path):
    """A reference that failed for a missing module is not kept once the module is installed:
    the key holds the installed distributions (here one installed into a folder on the path)."""
    import os
    import subprocess
    import sys

    script = ("from codea1.harness.records import Problem, TestCase\n"
              "from codea1.harness.verdicts.reference import problem_key\n"
              "print(problem_key(Problem(task_id='t', prompt='', entry_point='f', reference='import fakepkg\\n',"
              " tests=[TestCase(id='a', call='f(1)', expected=1)])))\n")

    def key() -> str:
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    before = key()
    assert key() == before  # a function of the environment, not of the process
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg-1.0.dist-info").mkdir()
    installed = key()
    assert installed != before
    (tmp_path / "fakepkg-1.0.dist-info").rename(tmp_path / "fakepkg-1.1.dist-info")
    assert key() not in (before, installed)  # another version
