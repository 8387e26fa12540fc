"""Warming the test frameworks up in the zygote: sample scripts that make unittest,
unittest.mock and pytest import and build on first use what they would otherwise import in
a child, after the program ran.

``warm_up`` imports the frameworks (into ``observers.PREPARED``) and runs the samples once
through the observers, in a scratch directory, so that what they import is part of the
ground ``ground.build`` records next. Only the standard library and the sandbox's own modules
are imported here: it runs in the sandbox.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import tempfile
import types

from codea1.harness.sandbox.observers import PREPARED, run_pytest, run_unittest
from codea1.harness.sandbox.timing import on_alarm

_WARM_UP_UNITTEST = '''
import logging, os, unittest, warnings


class TestCases(unittest.TestCase):
    def setUp(self):
        self.values = [1, 2]
        self.addCleanup(lambda: None)

    def test_equal(self):
        self.assertEqual({"a": [1, 2]}, {"a": [1, 3]})

    def test_diff(self):
        self.assertEqual("a" * 80 + "b\\nc", "a" * 80 + "c\\nc")

    def test_others(self):
        self.assertCountEqual([1, 2], [2, 1])
        self.assertAlmostEqual(1.0, 1.0000001)
        self.assertIn(1, self.values)
        self.assertIsInstance(1, int)
        self.assertTrue(True)
        self.assertIsNone(None)
        self.assertRegex("abc", "b")
        self.assertGreater(2, 1)
        self.assertSetEqual({1}, {1})
        self.assertSequenceEqual((1,), (1,))
        self.assertListEqual([1], [2])

    def test_raises(self):
        with self.assertRaises(ValueError):
            int("x")
        with self.assertRaisesRegex(ValueError, "invalid"):
            int("x")
        self.assertRaises(KeyError, {}.__getitem__, 1)

    def test_subtests(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertLess(i, 1)

    # mock

    def test_logs_and_warnings(self):
        with self.assertLogs(level="INFO") as logs:
            logging.getLogger("x").info("hello")
        self.assertIn("hello", logs.output[0])
        with self.assertWarns(UserWarning):
            warnings.warn("w")

    def test_error(self):
        raise KeyError("k")

    def test_skip(self):
        self.skipTest("no")
'''

_WARM_UP_MOCK = '''    @unittest.mock.patch("os.getcwd", return_value="/x")
    def test_mock(self, getcwd):
        self.assertEqual(os.getcwd(), "/x")
        getcwd.assert_called_once_with()
        with unittest.mock.patch.object(os, "getpid", return_value=1), unittest.mock.patch("os.listdir") as listdir:
            listdir.return_value = []
            called = unittest.mock.MagicMock()
            called(1)
            called.assert_called_with(2)
'''

_WARM_UP_PYTEST = '''
import unittest
import warnings

import pytest


@pytest.fixture
def numbers():
    yield [1, 2, 3]


def test_equal(numbers):
    assert numbers == [1, 2, 4]


@pytest.mark.parametrize("x, y", [(1, 2), (2, 3)])
def test_parametrized(x, y, tmp_path, capsys, monkeypatch):
    print(x)
    monkeypatch.setenv("X", "1")
    assert x + 1 == y


def test_raises():
    with pytest.raises(ValueError, match="invalid"):
        int("x")


def test_approx_and_warns():
    assert 0.1 + 0.2 == pytest.approx(0.3)
    with pytest.warns(UserWarning):
        warnings.warn("w")


class TestGroup:
    def test_method(self):
        assert "abc" != "abd"

    def test_error(self):
        raise KeyError("k")


class TestUnittest(unittest.TestCase):
    def test_case(self):
        self.assertEqual(1, 2)


def test_skip():
    pytest.skip("no")


@pytest.mark.xfail
def test_xfail():
    assert 0
'''


def warm_up(frameworks: tuple) -> None:
    """Imports the frameworks and runs each once, in a scratch directory, so that what they
    import on first use is part of the ground. (Importing pytest and its first run cost the
    zygote about 0.35 s once; a child then runs a KodCode pytest module in 0.12 s instead of
    0.35 s, the median over KodCode's references.)"""
    import unittest

    PREPARED["unittest"] = unittest
    script = _WARM_UP_UNITTEST
    if "unittest.mock" in frameworks:
        import unittest.mock  # BigCodeBench's tests use it (and check with it)

        script = script.replace("    # mock\n", _WARM_UP_MOCK)
    pytest = None
    if "pytest" in frameworks:
        try:  # (by name: the sandbox side imports the standard library only, pytest where installed)
            pytest = __import__("pytest")
        except Exception:  # noqa: BLE001 - not installed (or broken): KodCode's scripts fail for want of it, as before
            pytest = None
        else:
            PREPARED["pytest"] = pytest
    cwd, path, streams, alarm = os.getcwd(), list(sys.path), (sys.stdout, sys.stderr), signal.getsignal(signal.SIGALRM)
    scratch = tempfile.mkdtemp(prefix="codea1-warm-up-")
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        os.chdir(scratch)
        with open(os.devnull, "w") as quiet:
            sys.stdout = sys.stderr = quiet
            module = types.ModuleType("solution")
            run_unittest({"script": script}, module, 60.0, None)
            if pytest is not None:
                run_pytest({"script": _WARM_UP_PYTEST}, 60.0, None, module)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, alarm)
        sys.stdout, sys.stderr = streams
        os.chdir(cwd)
        sys.path[:] = path
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            sys.__dict__.pop(name, None)
        for name in [n for n in sys.modules if n.startswith("test_solution_") or n == "solution"]:
            del sys.modules[name]
        shutil.rmtree(scratch, ignore_errors=True)
        gc.collect()
