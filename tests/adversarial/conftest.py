"""Fixtures of the adversarial suite: the executor under attack (module-scoped, one per
parameter: subprocess, firejail, bubblewrap) and the decoys hostile code hunts for."""

from __future__ import annotations

import pytest
from adversarial.hostile import (
    EXECUTOR_BINARIES,
    KODCODE_FILE,
    SHARED_DATA,
    bigcodebench_hand_problem,
    call_problem,
    kodcode_hand_problem,
    kodcode_problem,
    make_decoys,
    make_executor,
)


@pytest.fixture(scope="module", params=list(EXECUTOR_BINARIES))
def adv_executor(request, plugins):
    ex = make_executor(plugins, request.param)
    yield ex
    ex.close()


@pytest.fixture(scope="session")
def decoys(tmp_path_factory):
    problems = [call_problem(), kodcode_hand_problem(), bigcodebench_hand_problem()]
    if (SHARED_DATA / KODCODE_FILE).exists():
        problems.append(kodcode_problem())
    found = make_decoys(tmp_path_factory.mktemp("decoys"), problems)
    yield found
    found.close()
