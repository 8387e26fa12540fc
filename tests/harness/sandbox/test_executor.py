"""Zygotes made for a run's jobs (ZygoteExecutor.warm_for): the frameworks they prepare, the
libraries they import once, and jobs whose scripts need more going to zygotes that have it."""

from __future__ import annotations

import json

import pytest

from codea1.harness.records import PASS, ExecJob, TestCase
from codea1.harness.sandbox.executor import ZygoteExecutor
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.judge import judge

PYTEST_MODULE = "from solution import f\n\ndef test_f():\n    assert f(1) == 2\n"


@pytest.fixture
def warmed():
    made = []

    def make(frameworks=None, imports=(), options=None):
        executor = ZygoteExecutor(options, workers=1)
        executor.warm_for(frameworks, imports)
        made.append(executor)
        return executor

    yield make
    for executor in made:
        executor.close()


def verdict(executor, job: ExecJob):
    return judge("task", 0, job, run_jobs(executor, [job])[job.job_id])


def test_zygotes_warmed_for_call_tests_send_a_pytest_module_to_zygotes_that_prepare_pytest(warmed):
    executor = warmed(frameworks=())
    call = ExecJob(job_id="call", code="def f(x):\n    return x + 1\n", entry_point="f", time_limits=[5.0],
                   tests=[TestCase(id="c", call="f(1)", expected=2)])
    script = ExecJob(job_id="script", code="def f(x):\n    return x + 1\n", time_limits=[30.0], batch_timeout=40,
                     tests=[TestCase(id="s", kind="script", script=PYTEST_MODULE, framework="pytest")])
    assert verdict(executor, call).status == PASS
    assert executor.pool.start()["frameworks"] == ["unittest"]
    assert list(executor._other_pools) == []  # call tests run where they were warmed for
    assert verdict(executor, script).status == PASS
    (seed, frameworks), = executor._other_pools
    assert (seed, frameworks) == (0, ("unittest", "pytest"))
    assert executor._other_pools[(seed, frameworks)].start()["frameworks"] == ["unittest", "pytest"]
    # A wrong program fails there as it would anywhere.
    wrong = ExecJob(job_id="wrong", code="def f(x):\n    return x\n", time_limits=[30.0], batch_timeout=40,
                    tests=script.tests)
    assert verdict(executor, wrong).status != PASS


def test_libraries_are_imported_once_in_the_zygote_and_reported(warmed):
    """A program finds the library imported before its own import; one that does not
    import is reported, not fatal; without the hint the program imports it itself."""
    code = "import sys\nFOUND = 'json.tool' in sys.modules\ndef f():\n    return FOUND\n"
    job = ExecJob(job_id="j", code=code, entry_point="f", time_limits=[5.0],
                  tests=[TestCase(id="t", call="f()", expected=True)])
    executor = warmed(imports=["json.tool", "no_such_library_here"])
    ready = executor.pool.start()
    assert ready["imports"] == ["json.tool"]
    assert "ModuleNotFoundError" in ready["imports_failed"]["no_such_library_here"]
    assert verdict(executor, job).status == PASS
    assert verdict(warmed(), job).status != PASS
    # The executor's own option adds to the hint.
    from codea1.harness.sandbox.executor import SubprocessOptions
    optioned = warmed(imports=["json.tool"], options=SubprocessOptions(imports="tabnanny"))
    assert optioned.pool.start()["imports"] == ["tabnanny", "json.tool"]


def test_numpy_imported_in_the_zygote_draws_afresh_in_every_child(warmed):
    """numpy's global generator is seeded where numpy was imported; each job's child draws
    its own state, as a program that imported numpy itself would."""
    pytest.importorskip("numpy")
    executor = warmed(imports=["numpy"])
    code = "import numpy\ndef f():\n    return float(numpy.random.random())\n"
    draws = []
    for i in range(3):
        job = ExecJob(job_id=f"n{i}", code=code, entry_point="f", time_limits=[5.0],
                      tests=[TestCase(id="t", call="f()", has_expected=False)])
        raw = run_jobs(executor, [job])[job.job_id]
        draws.append(json.dumps(raw.outcomes[0].value))
    assert len(set(draws)) == 3, draws
