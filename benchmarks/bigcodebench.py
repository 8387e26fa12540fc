"""Benchmark ``bigcodebench``: BigCodeBench through bigcodebench' own loader.

Options: ``split`` complete|instruct (which prompt generators see; samples are judged the
same way), ``subset`` full|hard. ``--data PATH`` sets BIGCODEBENCH_OVERRIDE_PATH, and
bigcodebench' loader reads that file as it is, whatever the subset: so the file is checked
against the subset (``check_subset``): ``subset=hard`` needs the Hard file (148 tasks,
BigCodeBench-Hard-*.jsonl), and the Hard file is not scored as the full set. Without a path
bigcodebench downloads the subset's own file.

Each task's unittest ``TestCases`` class runs in the solution's own module namespace, as
bigcodebench does. A task whose libraries are not importable here is "skipped: missing
library X"; so is a task whose reference solution fails in this environment (e.g. it needs to
reach the network). A skipped task counts as a failure in the figures, as bigcodebench counts
it (``evaluate --exclude-skipped`` leaves it out, labelled).
Where every check of the class can be rewritten (harness.verdicts.script_tests), the class reports
values and the parent judges them (``judged="parent"``); otherwise its assertions run inside
the sandbox, next to the code under test (``judged="in-process"``), where a program that
reaches the runner can fake its result (as in bigcodebench itself).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
from dataclasses import dataclass

from codea1.harness.benchmark import Benchmark, BenchmarkError, BenchmarkOptions
from codea1.harness.hookspecs import hookimpl
from codea1.harness.jsonl import first_row
from codea1.harness.records import Problem, TestCase
from codea1.harness.verdicts.script_tests import split_test
from codea1.harness.verdicts.slices import context_of


@dataclass
class BigCodeBenchOptions(BenchmarkOptions):
    split: str = "complete"
    subset: str = "full"

    def __post_init__(self):
        if self.split not in ("complete", "instruct"):
            raise ValueError(f"split must be 'complete' or 'instruct', not {self.split!r}")
        if self.subset not in ("full", "hard"):
            raise ValueError(f"subset must be 'full' or 'hard', not {self.subset!r}")


class BigCodeBench(Benchmark):
    name = "bigcodebench"
    description = "BigCodeBench complete/instruct, full/hard (bigcodebench loader; unittest classes)"
    Options = BigCodeBenchOptions
    min_time_limit = 30.0  # bigcodebench allows minutes per task; its tests import heavy libraries
    time_factor = 4.0
    memory_mb = 8192
    reference_failure_policy = "skip_task"
    frameworks = ("unittest", "unittest.mock")
    # The libraries most of its tasks import (pandas in 426 of 1,140, matplotlib 346,
    # scikit-learn about 150, seaborn 72, ...), imported once per worker: a child that imported
    # them itself spent about a second of CPU on it (measured on 2 cores). 270 MB a worker.
    imports = ("numpy", "pandas", "matplotlib.pyplot", "seaborn", "scipy.stats", "sklearn.preprocessing",
               "sklearn.linear_model", "sklearn.model_selection", "sklearn.decomposition", "sklearn.cluster",
               "sklearn.metrics", "sklearn.feature_extraction.text", "requests", "faker", "pytz", "nltk", "bs4",
               "PIL.Image", "dateutil.parser")

    def load(self) -> list[Problem]:
        data = self.options.data
        if data:
            if not os.path.isfile(data):
                what = "a directory, not a file" if os.path.isdir(data) else "no such file"
                raise BenchmarkError(f"--data {data}: {what} (expected BigCodeBench-*.jsonl[.gz])")
            first = first_row(data, BenchmarkError)
            if not str(first.get("task_id", "")).startswith("BigCodeBench/"):
                raise BenchmarkError(f"--data {data}: not a BigCodeBench file: its first record's field 'task_id' is "
                                     f"{first.get('task_id')!r}, where BigCodeBench task ids start with 'BigCodeBench/'")
            os.environ["BIGCODEBENCH_OVERRIDE_PATH"] = os.path.abspath(data)
        module = import_loader()
        if data:
            module.BIGCODEBENCH_OVERRIDE_PATH = os.path.abspath(data)
        try:
            raw = module.get_bigcodebench(subset=self.options.subset)
        except Exception as exc:
            raise BenchmarkError(f"{data or 'bigcodebench download'}: bigcodebench could not load the data: "
                                 f"{type(exc).__name__}: {exc}") from exc
        if data:
            check_subset(data, len(raw), self.options.subset)
        problems = []
        for task_id, task in raw.items():
            try:
                libs = ast.literal_eval(task["libs"]) if isinstance(task["libs"], str) else list(task["libs"])
            except (ValueError, SyntaxError) as exc:
                raise BenchmarkError(f"{data}: task {task_id}: field 'libs' is not a list: {exc}") from None
            prompt = task["complete_prompt"] if self.options.split == "complete" else task["instruct_prompt"]
            problems.append(Problem(
                task_id=task_id, prompt=prompt, entry_point=task["entry_point"],
                reference=task["complete_prompt"] + "\n" + task["canonical_solution"],
                tests=[TestCase(id="unittest/0", kind="script", script=task["test"], framework="unittest")],
                libs=sorted(set(libs)),
                metadata={"complete_prompt": task["complete_prompt"], "split": self.options.split}))
        return problems

    def prepare(self, problems: list[Problem]) -> list[Problem]:
        """Each task's test script rewritten where the parent can judge it (split_test, cached
        on disk by content), for the tasks a run selected: loading leaves it out (it took a
        minute for the 1,140 tasks on a first run), so listing and selecting tasks are quick."""
        return [dataclasses.replace(p, tests=split_test(p.tests[0], context_of(p.metadata["complete_prompt"])))
                if len(p.tests) == 1 and p.tests[0].kind == "script" and p.tests[0].judged == "in-process" else p
                for p in problems]

    def sample_code(self, problem, record):
        if "solution" in record:
            return record["solution"]
        return problem.metadata["complete_prompt"] + record["completion"]


# BigCodeBench-Hard (v0.1.x): 148 of the full set's 1,140 tasks.
FULL_TASKS, HARD_TASKS = 1140, 148


def check_subset(data: str, tasks: int, subset: str) -> None:
    """The --data file is the subset's: a Hard file is named so (bigcodebench' own name,
    BigCodeBench-Hard-v0.1.4.jsonl) or holds Hard's 148 tasks; the full file holds all 1,140."""
    hard = "hard" in os.path.basename(data).lower() or tasks == HARD_TASKS
    if subset == "hard" and (tasks >= FULL_TASKS or not hard):
        raise BenchmarkError(f"--data {data}: holds {tasks} tasks, not BigCodeBench-Hard ({HARD_TASKS} tasks, "
                             f"BigCodeBench-Hard-*.jsonl): with subset=hard pass the Hard file, or subset=full "
                             f"for this one")
    if subset == "full" and hard and tasks < FULL_TASKS:
        raise BenchmarkError(f"--data {data}: the Hard file ({tasks} tasks), read as the full set: pass "
                             f"--benchmark-opt subset=hard")


# The README's install line: bigcodebench declares vllm as a hard dependency, so it goes in
# without dependencies, followed by what its loader and sandbox really import.
INSTALL = ("pip install --no-deps bigcodebench==0.2.5 && "
           "pip install pqdm gradio-client e2b matplotlib -c constraints.txt")


def import_loader():
    """bigcodebench' data module, or the install line when it (or what it imports) is missing."""
    try:
        return importlib.import_module("bigcodebench.data.bigcodebench")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "bigcodebench").split(".")[0]
        raise BenchmarkError(f"benchmark 'bigcodebench' needs the bigcodebench package (module {missing!r} is "
                             f"not importable): {INSTALL}") from None
    except ImportError as exc:  # installed, but something it imports is broken (e.g. built for another numpy)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise BenchmarkError(f"benchmark 'bigcodebench': bigcodebench's loader does not import here "
                             f"(ImportError: {first}); it installs with: {INSTALL}") from None


@hookimpl
def codea1_register_benchmarks(registry):
    registry.add(BigCodeBench)
