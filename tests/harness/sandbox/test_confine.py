"""Landlock in two steps, as the zygote uses it: the ruleset is built before the fork and
only enforced in the child."""

from __future__ import annotations

import os

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
