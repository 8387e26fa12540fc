"""Landlock in two steps, as the zygote uses it: the ruleset is built before the fork and
only enforced in the child."""

from __future__ import annotations

import os
import sys

import pytest

from codea1.harness.sandbox import confine

pytestmark = pytest.mark.skipif(not confine.probe_landlock(), reason="this kernel refuses Landlock")


def test_a_ruleset_built_before_the_fork_confines_the_child_that_enforces_it(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    ruleset, report = confine.landlock_ruleset(str(inside), block_tcp=True)
    try:
        assert report["landlock_abi"] >= 1

        def confined():
            confine.enforce_ruleset(ruleset)
            (inside / "ok.txt").write_text("written")
            try:
                (outside / "escaped.txt").write_text("escaped")
            except PermissionError:
                return "refused: " + (inside / "ok.txt").read_text()
            return "escaped"

        assert confine.in_child(confined) == "refused: written"
        assert not (outside / "escaped.txt").exists()
        # Built is not enforced: a child that does not enforce it, and this process, write freely.
        assert confine.in_child(lambda: (outside / "free.txt").write_text("x") and "free") == "free"
        (outside / "mine.txt").write_text("still mine")
    finally:
        os.close(ruleset)


def test_read_paths_hold_no_forbidden_path_and_split_a_system_one(tmp_path):
    checkout = "/usr/share/doc"  # stands in for a checkout in a system directory
    paths = confine.read_paths([checkout, str(tmp_path)])
    assert "/usr" not in paths and checkout not in paths
    assert not any(confine._is_within(checkout, p) or confine._is_within(p, checkout) for p in paths)
    assert "/usr/lib" in paths or any(confine._is_within("/usr/lib", p) for p in paths)
    assert all(not confine._is_within(str(tmp_path), p) for p in paths)
    # The interpreter's own files stay readable; the current directory does not.
    assert any(confine._is_within(os.__file__, p) for p in paths)
    assert all(not confine._is_within(os.getcwd(), p) for p in confine.read_paths([os.getcwd()]))


def test_a_confined_child_reads_only_its_paths(tmp_path):
    inside, allowed, outside = tmp_path / "inside", tmp_path / "allowed", tmp_path / "outside"
    for d in (inside, allowed, outside):
        d.mkdir()
        (d / "f.txt").write_text(d.name)
    rules = confine.read_rules([str(allowed)])
    ruleset, report = confine.landlock_ruleset(str(inside), block_tcp=True, readable=rules)
    try:
        assert report["reads_confined"]

        def confined():
            confine.enforce_ruleset(ruleset)
            seen = []
            others = ("/dev/null", f"/proc/{os.getppid()}/cmdline")
            for path in (inside / "f.txt", allowed / "f.txt", outside / "f.txt", *others):
                try:
                    with open(path, "rb") as h:
                        seen.append(h.read(20).decode() or "empty")
                except OSError:
                    seen.append("refused")
            try:
                os.listdir(tmp_path)
                seen.append("listed")
            except OSError:
                seen.append("refused")
            return ",".join(seen)

        assert confine.in_child(confined) == "inside,allowed,refused,empty,refused,refused"
    finally:
        os.close(ruleset)
        for _path, fd, _rights in rules:
            os.close(fd)


def _reads(paths) -> str:
    seen = []
    for path in paths:
        try:
            with open(path, "rb") as h:
                seen.append("read" if h.read(64) else "empty")
        except OSError:
            seen.append("refused")
    return ",".join(seen)


def test_a_child_reads_its_own_proc_entries_and_no_other_process(tmp_path):
    """allow_own_proc: the child's own /proc/<pid> (what /proc/self names in it: maps as
    threadpoolctl reads them, status, stat, statm, a thread's entries) becomes readable, not
    writable; its parent's and pid 1's entries stay refused, and a path through its own magic
    links (root, cwd) is judged where it leads. Without the rule, its own entries are refused
    too."""
    import threading

    inside, allowed, outside = tmp_path / "inside", tmp_path / "allowed", tmp_path / "outside"
    for d in (inside, allowed, outside):
        d.mkdir()
        (d / "f.txt").write_text(d.name)
    rules = confine.read_rules([str(allowed)])
    try:
        def confined(own: bool):
            os.chdir(inside)
            ruleset = confine.landlock_ruleset(str(inside), block_tcp=True, readable=rules)[0]
            pin = confine.allow_own_proc(ruleset) if own else None
            confine.enforce_ruleset(ruleset)
            os.close(ruleset)
            mine = ("/proc/self/maps", "/proc/self/status", "/proc/self/stat", f"/proc/{os.getpid()}/statm")
            others = (f"/proc/{os.getppid()}/status", f"/proc/{os.getppid()}/maps", "/proc/1/status",
                      "/proc/1/environ")
            links = (f"/proc/self/root{outside}/f.txt", f"/proc/self/cwd/../outside/f.txt",
                     f"/proc/self/cwd/{'../' * 30}{str(outside).lstrip('/')}/f.txt", f"/proc/self/root{allowed}/f.txt")
            result = [_reads(mine), _reads(others), _reads(links)]
            in_thread = []
            thread = threading.Thread(target=lambda: in_thread.append(_reads(["/proc/thread-self/status",
                                                                              "/proc/self/task"])))
            thread.start()
            thread.join()
            result += in_thread
            try:
                os.listdir(f"/proc/{os.getpid()}/task")
                result.append("listed")
            except OSError:
                result.append("refused")
            try:
                with open("/proc/self/comm", "w") as h:
                    h.write("renamed")
                result.append("written")
            except OSError:
                result.append("refused")
            if pin is not None:
                result.append("pinned" if os.readlink(f"/proc/self/fd/{pin}") == f"/proc/{os.getpid()}" else "?")
            return " ".join(result)

        expected = "read,read,read,read refused,refused,refused,refused refused,refused,refused,read"
        assert confine.in_child(lambda: confined(True)) == expected + " read,refused listed refused pinned"
        # /proc/self/task is a directory: open() refuses it whatever the rules; listing it is allowed.
        refused = "refused,refused,refused,refused refused,refused,refused,refused refused,refused,refused,read"
        assert confine.in_child(lambda: confined(False)) == refused + " refused,refused refused refused"
    finally:
        for _path, fd, _rights in rules:
            os.close(fd)


def test_the_data_under_the_interpreters_prefixes_is_readable_unless_it_holds_a_forbidden_path(tmp_path):
    """read_paths holds each prefix's share/ (packages' data files: xyzservices' providers.json),
    not the prefix itself, and leaves out one that holds a forbidden path."""
    data = confine.python_data_paths()
    assert all(os.path.basename(p) == "share" for p in data)
    paths = confine.read_paths([str(tmp_path)])
    for share in data:
        assert any(confine._is_within(os.path.realpath(share), p) for p in paths), share
    assert sys.prefix not in paths or sys.prefix in ("/usr", "/usr/local")
    for share in data:
        inner = os.path.join(share, "codea1-forbidden")
        assert not any(confine._is_within(inner, p) for p in confine.read_paths([inner]))
