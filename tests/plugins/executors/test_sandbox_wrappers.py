"""What firejail and bubblewrap add over the subprocess executor: the home directory and
/tmp are hidden, and a missing binary is a clear error, never a silent fallback."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from codea1_testkit import run_code

from codea1.harness.execution import ExecutorUnavailable
from codea1.harness.records import FAIL, PASS

WRAPPERS = [("firejail", "firejail"), ("bubblewrap", "bwrap")]


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_a_missing_binary_fails_the_selection(plugins, monkeypatch, tmp_path, name, binary):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    with pytest.raises(ExecutorUnavailable, match=f"needs the '{binary}' binary.*apt-get install"):
        plugins.executors.create(name, {})


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_home_and_tmp_files_are_hidden(plugins, name, binary):
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    secrets = [Path.home() / f".codea1-secret-{uuid.uuid4().hex[:8]}", Path("/tmp") / f"codea1-secret-{uuid.uuid4().hex[:8]}"]
    for path in secrets:
        path.write_text("hunter2")
    code = ("def f(x):\n    seen = []\n"
            f"    for path in {[str(p) for p in secrets]!r}:\n"
            "        try:\n            seen.append(open(path).read())\n        except OSError:\n            seen.append(None)\n"
            "    return seen\n")
    try:
        plain = plugins.executors.create("subprocess", {"landlock": "false"}, workers=1)
        wrapped = plugins.executors.create(name, {"landlock": "false"}, workers=1)
        with plain, wrapped:
            # Without Landlock's read rules the subprocess executor reads anything the user
            # can; the wrapper alone must hide home and /tmp.
            assert run_code(plain, code, "assert f(0) == ['hunter2', 'hunter2']", "f")[0].status == PASS
            verdict, _ = run_code(wrapped, code, "assert f(0) == [None, None]", "f")
            assert verdict.status == PASS, verdict.message
            assert run_code(wrapped, "def f(x):\n    return x + 1\n", "assert f(1) == 3", "f")[0].status == FAIL
    finally:
        for path in secrets:
            path.unlink()


@pytest.mark.parametrize("name", ["subprocess", "firejail", "bubblewrap"])
def test_a_program_reads_only_its_own_job(plugins, name, tmp_path):
    """A program may read the interpreter, its libraries and its own directory; not a data
    file holding the answers, the harness's working directory (the checkout), its home and
    caches, /tmp, or any process under /proc (command lines and directories of the harness,
    its zygote or a training run lead to the data)."""
    if name != "subprocess" and shutil.which({"firejail": "firejail", "bubblewrap": "bwrap"}[name]) is None:
        pytest.skip(f"{name} is not installed")
    data = tmp_path / "KodCode_answers.json"
    data.write_text('{"f": "def f(x):\\n    return x + 1\\n"}')
    targets = [str(data), str(tmp_path), os.getcwd(), str(Path.home()), str(Path.home() / ".cache"), "/tmp",
               f"/proc/{os.getpid()}/cmdline", f"/proc/{os.getpid()}/cwd/README.md", "/proc/1/cmdline", "/proc/self/fd"]
    code = ("import os, json\ndef look(path):\n    try:\n        if os.path.isdir(path):\n"
            "            return sorted(os.listdir(path))[:1] and 'listed'\n        open(path, 'rb').read(1)\n"
            "        return 'read'\n    except OSError:\n        return None\n"
            f"def f(x):\n    return [look(p) for p in {targets!r}]\n")
    good = ("import json, re, collections, math, decimal, datetime, zoneinfo, ssl, hashlib, sqlite3, numpy\n"
            "def f(x):\n    open('mine.txt', 'w').write(str(x))\n    datetime.datetime.now(zoneinfo.ZoneInfo('Europe/Paris'))\n"
            "    return int(numpy.array([int(open('mine.txt').read())]).sum()) + 1\n")
    with plugins.executors.create(name, {}, workers=1) as ex:
        if not (ex.info().get("landlock") or {}).get("reads_limited"):
            pytest.skip("Landlock's read rules are not enforced here")
        verdict, raw = run_code(ex, code, f"assert f(0) == {[None] * len(targets)!r}", "f")
        assert verdict.status == PASS, raw.outcomes[0].value
        assert run_code(ex, good, "assert f(1) == 2", "f")[0].status == PASS


@pytest.mark.parametrize("name,binary", WRAPPERS)
def test_validity_finds_a_hash_order_test_nondeterministic(plugins, name, binary):
    """The seeded second pool (validity's second run) starts inside the wrapper too."""
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed (apt-get install {name})")
    from codea1.harness.records import Problem
    from codea1.harness.validity import check_suites

    problem = Problem(task_id="h", prompt="", entry_point="f",
                      reference="def f():\n    return list({'alpha', 'beta', 'gamma', 'delta', 'epsilon'})\n")
    with plugins.executors.create(name, {}, workers=1) as ex:
        check = check_suites(ex, {"s": (problem, ["assert f() == []", "assert sorted(f())[0] == 'alpha'"])},
                             recheck_outputs=True)["s"]
    assert check.valid == [False, True] and check.nondeterministic == {0}
