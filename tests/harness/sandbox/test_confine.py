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
