"""Mutant generation: the same mutation positions as cosmic-ray's own `init`, duplicates once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install 'codea1[mutation]')")

from codea1.harness.mutation import generate_mutants  # noqa: E402

SOURCE = ("import math\n\ndef clamp(x, lo=0, hi=10):\n    if x < lo:\n        return lo\n    if x > hi and not math.isnan(x):\n"
          "        return hi\n    return x * 1 + 0\n")


def test_positions_equal_cosmic_ray_init(tmp_path: Path):
    from cosmic_ray.commands.init import _all_work_items

    module = tmp_path / "mod.py"
    module.write_text(SOURCE)
    theirs = sorted((w.mutations[0].operator_name, w.mutations[0].occurrence) for w in _all_work_items([module], {}))
    mutants, positions = generate_mutants(SOURCE)
    assert positions == len(theirs) > 40
    ours = {(m.operator, m.occurrence) for m in mutants}
    assert ours <= set(theirs)
    # every mutant is a distinct program, and none is the original
    codes = [m.code for m in mutants]
    assert len(set(codes)) == len(codes) and SOURCE not in codes
    assert sum(1 + m.duplicates for m in mutants) <= positions


def test_diff_names_the_change():
    mutants, _ = generate_mutants("def f(x):\n    return x + 1\n")
    add_to_sub = next(m for m in mutants if m.operator.endswith("ReplaceBinaryOperator_Add_Sub"))
    assert "-    return x + 1\n+    return x - 1\n" in add_to_sub.diff("def f(x):\n    return x + 1\n")
