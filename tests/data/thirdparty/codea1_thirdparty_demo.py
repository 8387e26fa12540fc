"""A third-party plugin as an outside package would ship it: one executor, one benchmark."""

from codea1.api import ZygoteExecutor
from codea1.harness.benchmark import Benchmark
from codea1.harness.hookspecs import hookimpl
from codea1.harness.records import Problem
from codea1.harness.verdicts.asserts import parse_asserts


class SingleWorkerExecutor(ZygoteExecutor):
    """Runs every job on one zygote, whatever --workers says."""

    name = "single-worker"
    description = "third-party: the subprocess sandbox on one worker"

    def __init__(self, options=None, workers=None):
        super().__init__(options, workers=1)


class TinyBenchmark(Benchmark):
    name = "tiny"
    description = "third-party: two problems"

    def load(self):
        problems = []
        for task_id, ep, ref, asserts in [
            ("tiny/0", "double", "def double(x):\n    return 2 * x\n", "assert double(2) == 4\nassert double(0) == 0"),
            ("tiny/1", "neg", "def neg(x):\n    return -x\n", "assert neg(1) == -1"),
        ]:
            tests, _ = parse_asserts(asserts, ep)
            problems.append(Problem(task_id=task_id, prompt="", entry_point=ep, reference=ref, tests=tests))
        return problems


@hookimpl
def codea1_register_executors(registry):
    registry.add(SingleWorkerExecutor)


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(TinyBenchmark)
