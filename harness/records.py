"""Records shared by every flow: problems, samples, tests, execution jobs, verdicts, and the
per-task record of a generated test suite (``TaskRecord``).

Plain dataclasses that serialise to JSON (``to_json``/``from_json``); the run store writes
them with ``RECORD_VERSION`` so that files from older runs can be recognised.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

RECORD_VERSION = 1

# Verdict statuses. Only PASS counts as solved; SKIPPED leaves the denominators.
PASS = "pass"
FAIL = "fail"
TIMEOUT = "timeout"
ERROR = "error"  # the program did not load (syntax error, exception at import, crash)
SKIPPED = "skipped"  # cannot be judged here (e.g. a library the task needs is missing)
SANDBOX_ERROR = "sandbox_error"  # the executor failed; trainers give such groups zero advantage
VERDICT_STATUSES = (PASS, FAIL, TIMEOUT, ERROR, SKIPPED, SANDBOX_ERROR)

# Where a test's verdict is decided: by the trusted parent on values, or by a runner inside the
# program's own process (script tests that could not be rewritten to report values).
JUDGED_WHERE = ("parent", "in-process")
# The prefix of a figure computed again over the tasks whose every test is judged "parent"
# (where some tasks have tests judged in-process): "outside:pass@1".
OUTSIDE = "outside:"

# Start of a TestCase.expected_error left by an executor that failed to compute the value
# (harness.verdicts.expected): no verdict can be given on that test, so none is (a sandbox error).
EXPECTED_SANDBOX_ERROR = "sandbox error: "

# Comparison operators a call test may use; the harness applies them to plain data.
COMPARISON_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "contains", "not contains", "is", "is not",
                  "truthy", "falsy")


class _Record:
    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
        return cls(**data)


@dataclass
class TestCase(_Record):
    """One golden or generated test.

    kind "call": the value of ``call`` (a Python expression that invokes the code under test)
    or of ``entry_point(*args, **kwargs)`` (``args`` and ``kwargs`` as plain data) is compared
    by the harness, in the trusted parent, with ``expected`` using ``op``. ``wrap`` (with
    ``args`` only) is a list of steps the sandbox applies, in order, to the real object the
    entry point returned, before the value comes back as plain data (generated tests:
    ``harness.verdicts.asserts``): ``["call", builtin, args, kwargs]`` (the value is the builtin's first
    argument: ``list``, ``next``, ``len``, ``round``...; ``asserts.WRAP_CALLS``),
    ``["attr", name]``, ``["item", key]``, ``["slice", start, stop, step]``,
    ``["method", name, args, kwargs]``, ``["apply", args, kwargs]`` (the value called).
    ``expected_source`` holds the expected side when it
    is an expression rather than data (golden tests parsed by ``asserts.parse_legacy_assert``
    only). It never reaches a job that runs a program: ``harness.verdicts.expected`` computes it
    beforehand, in a sandbox job that loads only the problem's prelude, and replaces the
    test with one whose ``expected`` is the value (``expected_source`` None), or, where the
    expression raised or timed out, whose ``expected_error`` says why: the judge fails such
    a test ("the expected value could not be computed: ..."). An ``expected_error`` that
    starts with ``EXPECTED_SANDBOX_ERROR`` is the executor's failure, not the expression's:
    a verdict that needs it is a sandbox error.

    kind "script": ``script`` is test code (``framework`` "unittest": a TestCases class run in
    the solution's module, as BigCodeBench does; "pytest": a test module that imports from
    ``solution``). Its pass/fail is reported from inside the sandbox.

    ``judged`` says where the verdict is decided: "parent" (the default for call tests: the
    child sends values, the trusted parent compares) or "in-process" (the default for script
    tests: the child's own runner says passed/failed, so the program could steer it). Such
    verdicts are counted per run and refused as training rewards unless a config key allows them.
    """

    __test__ = False  # not a pytest class
    id: str
    kind: str = "call"
    call: str | None = None
    args: list | None = None
    kwargs: dict | None = None
    wrap: list | None = None
    op: str = "=="
    expected: Any = None
    expected_source: str | None = None
    expected_error: str | None = None  # why the expected side could not be computed (harness.verdicts.expected)
    has_expected: bool = True
    source: str | None = None
    script: str | None = None
    framework: str | None = None
    judged: str | None = None  # "parent" | "in-process"; None: from kind (see above)

    def __post_init__(self):
        if self.judged is None:
            self.judged = "in-process" if self.kind == "script" else "parent"
        if self.judged not in JUDGED_WHERE:
            raise ValueError(f"test {self.id}: judged must be one of {JUDGED_WHERE}, not {self.judged!r}")
        if self.kind not in ("call", "script"):
            raise ValueError(f"test {self.id}: kind must be 'call' or 'script', not {self.kind!r}")
        if self.kind == "call" and (self.call is None) == (self.args is None):
            raise ValueError(f"test {self.id}: a call test needs exactly one of 'call' and 'args'")
        if (self.kwargs is not None or self.wrap is not None) and self.args is None:
            raise ValueError(f"test {self.id}: 'kwargs' and 'wrap' go with 'args'")
        if self.op not in COMPARISON_OPS:
            raise ValueError(f"test {self.id}: unsupported operator {self.op!r}")

    @property
    def group(self) -> str:
        """Tests are grouped by the id prefix before '/', e.g. HumanEval+'s 'base' and 'plus'."""
        return self.id.split("/", 1)[0] if "/" in self.id else "tests"


@dataclass
class Problem(_Record):
    task_id: str
    prompt: str
    entry_point: str
    reference: str  # complete, runnable reference solution
    tests: list[TestCase] = field(default_factory=list)
    prelude: str = ""  # imports the tests need besides the solution
    libs: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        data["tests"] = [TestCase.from_json(t) for t in data.get("tests", [])]
        return super().from_json(data)


@dataclass
class CodeSample(_Record):
    task_id: str
    index: int  # position among this task's samples in the samples file
    code: str  # complete program under test
    source: str = ""  # "file:line" it was read from


@dataclass
class ExecJob(_Record):
    """What an executor runs: one program against many tests, with limits."""

    job_id: str
    code: str
    tests: list[TestCase]
    entry_point: str | None = None
    prelude: str = ""
    time_limits: list[float] = field(default_factory=list)  # seconds, one per test
    batch_timeout: float = 60.0  # whole-job wall limit enforced from outside the child
    memory_mb: int = 4096
    fail_fast: bool = True  # stop at the first test that raises or times out
    # Without fail_fast: stop at the first timeout all the same (a hanging program's later tests
    # count as not run, as when one process runs them all under one deadline).
    stop_on_timeout: bool = False
    # How outputs larger than 64 KiB (encoded) come back: "value", "digest" (a SHA-256 only,
    # see sandbox.child.encode_for_channel: the parent compares it with the reference's
    # digest) or "both".
    large_output: str = "value"
    # The interpreter state the job runs under: its PYTHONHASHSEED (fixed at interpreter
    # start, so executors route the job to a zygote started with it) and the seed the child
    # gives random before the program loads. Validation runs a suite under two of each.
    hash_seed: int = 0
    random_seed: int = 0


@dataclass
class RawOutcome(_Record):
    """What came back for one test, before judging. status: ok | exception | timeout | not_run
    | passed | failed (script tests)."""

    status: str
    value: Any = None
    digest: str | None = None  # set instead of value for large outputs (ExecJob.large_output)
    message: str = ""
    time: float = 0.0
    details: dict[str, str] | None = None


class _SharedOutcome(RawOutcome):
    """One outcome object standing for many tests: read-only."""

    def __setattr__(self, name, value):
        if self.__dict__.get("_sealed"):
            raise AttributeError(f"NOT_RUN is shared by every test that did not run: make a RawOutcome to set {name!r}")
        super().__setattr__(name, value)

    def __eq__(self, other):
        return isinstance(other, RawOutcome) and dataclasses.astuple(self) == dataclasses.astuple(other)

    __hash__ = None


# The outcome of a test that did not run. A parser starts every test with it: HumanEval+'s
# jobs have up to 1,000 tests, and a failing program's stop after a few of them.
NOT_RUN = _SharedOutcome("not_run")
object.__setattr__(NOT_RUN, "_sealed", True)


@dataclass
class RawResult(_Record):
    job_id: str
    outcomes: list[RawOutcome]
    load_error: str | None = None
    exit: str = "finished"  # finished | timeout | crashed: ... | protocol: ...
    stdout: str = ""
    stderr: str = ""
    wall_time: float = 0.0
    sandbox_error: str | None = None
    # The time limits are on the program's own time (harness.sandbox.timing): seconds its
    # process waited for a CPU (measured outside it), tests whose wall-clock limit passed while
    # their own time had not (deferred), timeouts the wall cap decided (capped).
    starved: float = 0.0
    deferred: int = 0
    capped: int = 0

    @property
    def own_time(self) -> float:
        """The job's time less its waiting for a CPU: what its budget is charged."""
        return max(self.wall_time - self.starved, 0.0)


@dataclass
class TestVerdict(_Record):
    id: str
    status: str  # pass | fail | timeout | error | not_run
    message: str = ""
    time: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "message": self.message, "time": self.time}


@dataclass
class Verdict(_Record):
    task_id: str
    sample_index: int
    status: str
    tests: list[TestVerdict] = field(default_factory=list)
    first_failure: dict[str, str] | None = None
    groups: dict[str, str] = field(default_factory=dict)
    message: str = ""
    wall_time: float = 0.0
    code_hash: str = ""  # identifies the judged program, so a resumed run never reuses a stale verdict
    n_tests: int = 0
    n_passed: int = 0
    # How the time limits went (set only when something happened, see RawResult): "deferred"
    # tests a wall clock alone would have timed out under load, "capped" timeouts the wall cap
    # decided, "killed" a timeout the zygote's clock decided from outside the process.
    clock: dict[str, int] | None = None
    # "in-process" when any test that ran was judged by a runner inside the program's own
    # process (TestCase.judged): such a verdict is the program's word, counted apart in
    # results.json and refused as a training reward unless a config key allows it.
    judged: str = "parent"

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def compact(self, keep: int = 64) -> "Verdict":
        """For storage: with more than ``keep`` tests (HumanEval+ has up to 1,000 inputs a task),
        keep only the tests that did not pass (up to ``keep``); counts stay exact."""
        if len(self.tests) > keep:
            self.tests = [t for t in self.tests if t.status != "pass"][:keep]
        return self

    def to_json(self) -> dict[str, Any]:
        """As dataclasses.asdict, field by field (a verdict is written for every sample:
        asdict's generic deep copy was a visible share of judging)."""
        return {"task_id": self.task_id, "sample_index": self.sample_index, "status": self.status,
                "tests": [t.to_json() for t in self.tests],
                "first_failure": dict(self.first_failure) if self.first_failure is not None else None,
                "groups": dict(self.groups), "message": self.message, "wall_time": self.wall_time,
                "code_hash": self.code_hash, "n_tests": self.n_tests, "n_passed": self.n_passed,
                "judged": self.judged, **({"clock": dict(self.clock)} if self.clock else {})}

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        data["tests"] = [TestVerdict.from_json(t) for t in data.get("tests", [])]
        return super().from_json(data)


@dataclass
class TaskRecord(_Record):
    """One task's tests and what they did; the metric plugins read only this."""

    __test__ = False
    task_id: str
    tests: list[str]  # the first max(k) tests, as given
    valid: list[bool]  # per test position
    reasons: list[str]  # why each invalid test is invalid ("" when valid)
    mutants_total: int = 0  # mutation positions before dedupe
    # {id, first_fail (None: no test failed), first_timeout (the test that timed out before any failed), status, diff}
    mutants: list[dict] = field(default_factory=list)
    mutated_with: int = 0  # how many leading tests the mutants ran against
    coverage: dict[str, dict] = field(default_factory=dict)  # str(k) -> {"line": f, "branch": f or None}
    tests_hash: str = ""
    # Positions of call tests outside the paper's form, run in the program's process
    # (evaluate-tests --allow-other-forms only).
    in_process: list[int] = field(default_factory=list)

    def leading_valid(self) -> int:
        n = 0
        for ok in self.valid:
            if not ok:
                break
            n += 1
        return n
