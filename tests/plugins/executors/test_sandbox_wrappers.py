"""What firejail and bubblewrap add over the subprocess executor: the home directory, /tmp
and data are out of the zygote's view even without Landlock, and a missing binary is a
clear error, never a silent fallback."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from codea1_testkit import run_code

from codea1.harness.records import FAIL, PASS
from codea1.harness.verdicts.execution import ExecutorUnavailable

WRAPPERS = [("firejail", "firejail"), ("bubblewrap", "bwrap")]


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_a_missing_binary_fails_the_selection(plugins, monkeypatch, tmp_path, name, binary):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    with pytest.raises(ExecutorUnavailable, match=f"needs the '{binary}' binary.*apt-get install"):
        plugins.executors.create(name, {})


@pytest.mark.parametrize("landlock", ["true", "false"])
@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_home_tmp_and_data_files_are_hidden_even_without_landlock(plugins, name, binary, landlock):
    """The wrapper's own view holds only the zygote's paths: with Landlock off (or absent)
    a program still cannot read the home directory, /tmp or a data directory; the subprocess
    executor hides them only by Landlock."""
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    data = Path.cwd() / f".codea1-data-{uuid.uuid4().hex[:8]}"  # a data directory beside the checkout's sources
    secrets = [Path.home() / f".codea1-secret-{uuid.uuid4().hex[:8]}",
               Path("/tmp") / f"codea1-secret-{uuid.uuid4().hex[:8]}", data / "problems.jsonl"]
    data.mkdir()
    for path in secrets:
        path.write_text("hunter2")
    code = ("def f(x):\n    seen = []\n"
            f"    for path in {[str(p) for p in secrets]!r}:\n"
            "        try:\n            seen.append(open(path).read())\n        except OSError:\n            seen.append(None)\n"
            "    return seen\n")
    try:
        plain = plugins.executors.create("subprocess", {"landlock": landlock}, workers=1)
        wrapped = plugins.executors.create(name, {"landlock": landlock}, workers=1)
        with plain, wrapped:
            confined = plain.info()["reads"]["guarantees"]["benchmark_data"]
            assert confined == (landlock == "true" and bool(plain.info()["landlock"] != "none"))
            expected = [None] * 3 if confined else ["hunter2"] * 3
            if not confined and plain.info()["privileges"]["directories_opened"]:
                # Run by root, the children's user (run_as) finds the home directory (0700)
                # covered by the zygote's own view of it: only the other two show.
                expected[0] = None
            assert run_code(plain, code, f"assert f(0) == {expected!r}", "f")[0].status == PASS
            verdict, _ = run_code(wrapped, code, "assert f(0) == [None, None, None]", "f")
            assert verdict.status == PASS, verdict.message
            assert wrapped.info()["reads"]["guarantees"]["benchmark_data"]
            assert run_code(wrapped, "def f(x):\n    return x + 1\n", "assert f(1) == 3", "f")[0].status == FAIL
    finally:
        for path in secrets:
            path.unlink()
        data.rmdir()


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_validity_finds_a_hash_order_test_nondeterministic(plugins, name, binary):
    """The seeded second pool (validity's second run) starts inside the wrapper too."""
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    from codea1.harness.records import Problem
    from codea1.harness.verdicts.validity import check_suites

    problem = Problem(task_id="h", prompt="", entry_point="f",
                      reference="def f():\n    return list({'alpha', 'beta', 'gamma', 'delta', 'epsilon'})\n")
    with plugins.executors.create(name, {}, workers=1) as ex:
        check = check_suites(ex, {"s": (problem, ["assert f() == []", "assert sorted(f())[0] == 'alpha'"])},
                             recheck_outputs=True)["s"]
    assert check.valid == [False, True] and check.nondeterministic == {0}
