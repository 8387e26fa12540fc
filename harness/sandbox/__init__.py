"""The sandbox: where every generated program and test runs, and the boundary a verdict crosses.

In the parent (trusted):
    executor   the zygote executor behind ``subprocess``, ``firejail`` and ``bubblewrap``
    pool       a pool of zygotes: jobs in, records out, a dead zygote replaced, never reused

On both sides:
    protocol   every byte between parent, zygote and child: framed, bounded, each reply
               naming the job it answers

In the sandbox (standard library only, and each other):
    zygote     one warm interpreter per worker; forks a child per job
    confine    the child's rlimits, seccomp filter, network namespace, Landlock
    privileges a root zygote's children run as another user, without capabilities
    child      the job loop: loads the program, runs its tests, sends values as plain data
    timing     the per-test alarm
    observers  script tests judged in-process (unittest, pytest), and rewritten scripts' reports
    ground     what in-process judging stands on, recorded in the zygote; the audit hook
    settle     that ground compared and put back before and after each script test
    warmup     the frameworks imported and run once in the zygote

What a verdict is made of, and where each part of it is decided, is ``harness.verdicts``.
"""
