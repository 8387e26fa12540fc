"""The conformance suite (harness.testing.executor_conformance) run against every built-in
executor available here: subprocess, firejail, bubblewrap, ray (a real local Ray instance)
and sandbox-fusion (against a real local HTTP server speaking its API).

Each class is one xdist group, so its executor starts once per test run."""

from __future__ import annotations

import shutil

import pytest
from sandbox_fusion_server import SandboxFusionServer

from codea1.harness.testing.executor_conformance import ExecutorConformance


def make(plugins, name, options=None, workers=2):
    ex = plugins.executors.create(name, options or {}, workers=workers)
    return ex


@pytest.mark.xdist_group("subprocess")
class TestSubprocess(ExecutorConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def executor(cls, plugins):
        ex = make(plugins, "subprocess")
        yield ex
        ex.close()


@pytest.mark.xdist_group("firejail")
@pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed (apt-get install firejail)")
class TestFirejail(ExecutorConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def executor(cls, plugins):
        ex = make(plugins, "firejail")
        yield ex
        ex.close()


@pytest.mark.xdist_group("bubblewrap")
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
class TestBubblewrap(ExecutorConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def executor(cls, plugins):
        ex = make(plugins, "bubblewrap")
        yield ex
        ex.close()


@pytest.mark.xdist_group("ray")
class TestRay(ExecutorConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def executor(cls, plugins):
        pytest.importorskip("ray", reason="ray is not installed (pip install 'codea1[ray]')")
        ex = make(plugins, "ray", {"batch_size": "2", "object_store_mb": "100"})
        yield ex
        ex.close()


@pytest.mark.xdist_group("sandbox-fusion")
class TestSandboxFusion(ExecutorConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def executor(cls, plugins):
        pytest.importorskip("sandbox_fusion", reason="the sandbox-fusion client is not installed")
        with SandboxFusionServer() as server:
            ex = make(plugins, "sandbox-fusion", {"endpoint": server.endpoint, "backoff": "0.05"})
            yield ex
            ex.close()
