"""Benchmark ``humaneval+``: HumanEval+ through evalplus' loader (base + plus inputs).

``--data PATH`` points at HumanEvalPlus-*.jsonl[.gz] (the Mini file works too); without it
evalplus downloads its default version. Tests are grouped as ``base`` (original HumanEval
inputs) and ``plus``; results.json reports both (evalplus' "humaneval" and "humaneval+").
"""

from codea1.benchmarks.evalplus_common import EvalplusBenchmark
from codea1.harness.hookspecs import hookimpl


class HumanEvalPlus(EvalplusBenchmark):
    name = "humaneval+"
    description = "HumanEval+ (evalplus loader; base + plus inputs, evalplus oracles)"
    dataset = "humaneval"


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(HumanEvalPlus)
