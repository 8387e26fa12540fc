"""The zygote's own bookkeeping, in process (its jobs, children and limits are exercised
through the executors' suites)."""

from __future__ import annotations

import marshal
import os

import pytest

from codea1.harness.sandbox import confine, zygote


def assert_job_fails_leaving_nothing(z: zygote.Zygote, match: str) -> None:
    """A job on ``z`` raises OSError matching ``match`` before any child exists, and leaves
    no directory in the zygote's root and no descriptor open; ``z`` is closed after."""
    tests_fd = zygote.memfd("tests", marshal.dumps([]))
    try:
        fds = set(os.listdir("/proc/self/fd"))
        with pytest.raises(OSError, match=match):
            z.run_job({"job_id": "j", "code": "x = 1\n", "time_limits": []}, tests_fd)
        assert os.listdir(z.root) == []
        # None left open by the job (a subset: the collector may close another test's meanwhile)
        assert set(os.listdir("/proc/self/fd")) <= fds
    finally:
        z.close()
        os.close(tests_fd)


def test_a_refused_landlock_ruleset_fails_the_job_and_leaves_nothing_behind(monkeypatch):
    """Should the kernel refuse the rules a job's child would be confined by, the job fails
    before any child exists, and its directory and descriptors are gone."""
    def refused(writable, block_tcp, readable):
        raise OSError("landlock_create_ruleset failed")

    monkeypatch.setattr(confine, "landlock_ruleset", refused)  # stands in for the kernel's refusal
    assert_job_fails_leaving_nothing(zygote.Zygote(seccomp=False, file_mb=64, output_cap=1024, landlock=True),
                                     match="landlock_create_ruleset")


@pytest.mark.parametrize("failing", ["fork", "third pipe"])
def test_a_job_whose_child_cannot_be_made_leaves_nothing_behind(monkeypatch, failing):
    """No process or no pipe to be had (EAGAIN, EMFILE): the job fails, and the pipes made
    for it and its directory are gone."""
    if failing == "fork":
        real_fork, zygote_pid = os.fork, os.getpid()

        # The zygote (this process) forks its privilege probe and its forker; the forker's
        # fork of the job's child is refused.
        def fork():
            if os.getpid() != zygote_pid:
                raise BlockingIOError(11, "Resource temporarily unavailable")
            return real_fork()

        monkeypatch.setattr(zygote.os, "fork", fork)  # stands in for the kernel's refusal
    else:
        real_pipe, made = os.pipe, []

        def pipe():
            if len(made) == 2:
                raise OSError(24, "Too many open files")
            made.append(real_pipe())
            return made[-1]

        monkeypatch.setattr(zygote.os, "pipe", pipe)
    assert_job_fails_leaving_nothing(zygote.Zygote(seccomp=False, file_mb=64, output_cap=1024),
                                     match="Resource temporarily|Too many")
