"""Benchmark ``mbpp+``: MBPP+ through evalplus' loader (base + plus inputs, evalplus' input
deserialisation and special oracles). ``--data PATH`` points at MbppPlus-*.jsonl[.gz]."""

from codea1.benchmarks.evalplus_common import EvalplusBenchmark
from codea1.harness.hookspecs import hookimpl


class MbppPlus(EvalplusBenchmark):
    name = "mbpp+"
    description = "MBPP+ (evalplus loader; base + plus inputs, evalplus oracles)"
    dataset = "mbpp"


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(MbppPlus)
