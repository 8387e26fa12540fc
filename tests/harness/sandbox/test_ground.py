"""The ground in-process script tests stand on (harness.sandbox.ground and settle): what
``settle`` puts back and holds against a program, what it leaves to the program and the
tests, and what the audit hook refuses. Each check runs in a fresh interpreter (the audit hook
stays for the life of its process); the end-to-end cases, hostile programs against the real
executors, are in tests/adversarial/test_framework_tampering.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from codea1.harness.verdicts.script_tests import script_names

PREAMBLE = """
import json, sys
from codea1.harness.sandbox import child, ground, settle as settling
child.prepare(("unittest",))
def settle():
    changed, stuck, threads = settling.settle(None)
    return {"changed": sorted(changed), "stuck": sorted(stuck), "threads": threads}
out = {}
"""


def run_fresh(body: str) -> dict:
    code = PREAMBLE + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_prepared(body: str):
    """What ``body`` prints (JSON), run in a fresh interpreter after ``child.prepare()``."""
    code = "import json\nfrom codea1.harness.sandbox import child, ground\nchild.prepare()\n" + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_clean_interpreter_settles_to_nothing():
    out = run_fresh("out['first'] = settle(); out['second'] = settle()")
    assert out["first"] == out["second"] == {"changed": [], "stuck": [], "threads": ""}


def test_code_replaced_anywhere_is_put_back_and_named():
    out = run_fresh("""
        import contextlib, functools, unittest, copyreg
        original = contextlib.contextmanager
        contextlib.contextmanager = lambda fn: fn                          # a stdlib function
        del functools.wraps                                                # removed
        unittest.TestCase.assertEqual = lambda *a, **k: None               # a framework method
        unittest.TestCase.maxDiff = 7                                      # framework data: strict too
        contextlib.len = lambda x: 0                                       # shadows a builtin
        copyreg.__getattr__ = lambda name: None                            # a dunder added
        out["found"] = settle()
        out["back"] = contextlib.contextmanager is original and hasattr(functools, "wraps") \\
            and unittest.TestCase.maxDiff == 640 and not hasattr(contextlib, "len")
        out["again"] = settle()
    """)
    assert out["found"]["changed"] == sorted(["contextlib.contextmanager", "functools.wraps", "contextlib.len",
                                              "copyreg.__getattr__", "unittest.case.TestCase.assertEqual",
                                              "unittest.case.TestCase.maxDiff"])
    assert out["back"] and out["again"]["changed"] == []


def test_data_and_caches_outside_the_frameworks_are_the_programs():
    """What any Python process changes as it runs (a setting, a global made on first use, a
    registry a library adds to) is neither put back nor held against the program."""
    out = run_fresh("""
        import copyreg, urllib.parse, weakref, time, sys
        urllib.parse._hostprog = "made on first use"          # None in the zygote: data
        weakref.finalize._dirty = True                         # a class's data
        copyreg.dispatch_table[type("T", (), {})] = print      # a registry grows
        time.new_global = object()                             # a new name of the module's own
        sys.path.append("/nowhere")                            # the import path: put back, quietly
        out["found"] = settle()
        out["kept"] = urllib.parse._hostprog == "made on first use" and hasattr(time, "new_global")
        out["path_back"] = "/nowhere" not in sys.path
    """)
    assert out["found"] == {"changed": [], "stuck": [], "threads": ""}
    assert out["kept"] and out["path_back"]


def test_a_fake_framework_module_and_a_poisoned_pattern_are_caught():
    out = run_fresh("""
        import re, sys, types
        real = sys.modules["unittest"]
        sys.modules["unittest"] = types.ModuleType("unittest")
        re._cache[(str, "^exact$", 0)] = re.compile(".*")
        out["found"] = settle()
        out["back"] = sys.modules["unittest"] is real and (str, "^exact$", 0) not in re._cache
    """)
    assert out["found"]["changed"] == ["re._cache", "sys.modules[unittest]"]
    assert out["back"]


def test_the_audit_hook_keeps_code_and_refuses_tracing_once_armed_for_scripts():
    out = run_fresh("""
        import contextlib, gc, sys
        def refused(action):
            try:
                action()
            except RuntimeError as exc:
                return "refused in the sandbox" in str(exc)
            return False
        swap = lambda: setattr(contextlib.contextmanager, "__code__", (lambda fn: fn).__code__)
        def own():
            pass
        out["code"] = refused(swap)
        out["own_code"] = not refused(lambda: setattr(own, "__code__", (lambda: 1).__code__))
        out["trace_before"] = not refused(lambda: (sys.settrace(lambda *a: None), sys.settrace(None)))
        next(ground.ARMING)                  # every child, before its program
        out["trace_armed"] = not refused(lambda: (sys.settrace(lambda *a: None), sys.settrace(None)))
        out["gc_armed"] = not refused(gc.get_objects)
        next(ground.SCRIPTS)                 # a child whose job has script tests
        out["trace_scripts"] = refused(lambda: sys.settrace(lambda *a: None))
        out["profile_scripts"] = refused(lambda: sys.setprofile(lambda *a: None))
        out["gc_scripts"] = refused(gc.get_objects)
        added = []
        sys.addaudithook(lambda event, args: added.append(event))
        out["hook_added"] = bool(added)
    """)
    assert out == {"code": True, "own_code": True, "trace_before": True, "trace_armed": True, "gc_armed": True,
                   "trace_scripts": True, "profile_scripts": True, "gc_scripts": True, "hook_added": False}


def test_script_names_gives_the_imports_to_share_and_the_test_functions():
    script = textwrap.dedent("""\
        import unittest, os.path as osp
        import numpy as np
        from collections import Counter
        try:
            import pandas as pd
        except ImportError:
            pd = None

        class TestCases(unittest.TestCase):
            def test_a(self):
                pass

            def helper(self):
                pass

        def test_outside():
            pass
        """)
    assert script_names(script, "unittest") == (["unittest", "osp", "np", "Counter", "pd"], ["TestCases.test_a"])
    assert script_names(script, "pytest")[1] == ["TestCases.test_a", "test_outside"]  # pytest collects Test* classes
    assert script_names("def broken(:\n", "pytest") == ([], [])


def test_a_change_fails_a_test_only_on_the_frameworks_ground():
    """During a test, a change to what the frameworks stand on (contextlib, functools,
    traceback...) fails it; one to a module they never reach (mimetypes reading its tables,
    six resolving a lazy attribute) is put back but held against no one: BigCodeBench's
    canonical solutions lost 57 verdicts to such changes."""
    ground, why = run_prepared("""
        after = (("contextlib.contextmanager", "mimetypes.common_types", "six._MovedItems.range"), (), "")
        print(json.dumps([sorted(m for m in ("contextlib", "functools", "traceback", "mimetypes")
                                 if m in ground.FRAMEWORK_GROUND), ground.tampering(after)]))
    """)
    assert ground == ["contextlib", "functools", "traceback"]
    assert why == "the program changed contextlib.contextmanager during the test"


def test_what_libraries_a_test_uses_change_on_the_ground_but_decides_no_verdict_fails_nothing():
    """lxml.etree (Cython) wraps inspect.isgenerator when first imported, pybind11 files its
    internals under a new dunder in builtins, pyfakefs points linecache and tokenize at the real
    disk and reloads tempfile: BigCodeBench's canonical solutions lost 7 verdicts to these.
    A builtin replaced or a module hook added in builtins still fails the test."""
    benign, hostile = run_prepared("""
        benign = ("inspect.isgenerator", "builtins.__pybind11_internals_v4__", "linecache.open",
                  "tokenize._builtin_open", "tempfile.NamedTemporaryFile")
        hostile = ("builtins.__import__", "builtins.__getattr__", "builtins.isinstance", "inspect.signature")
        print(json.dumps([ground.tampering((benign, (), "")),
                          [ground.tampering(((label,) + benign, (), "")) for label in hostile]]))
    """)
    assert benign == ""
    assert hostile == [f"the program changed {label} during the test" for label in
                       ("builtins.__import__", "builtins.__getattr__", "builtins.isinstance", "inspect.signature")]


def test_a_pattern_cached_under_a_str_subclass_is_honest_and_a_forged_one_is_not():
    """lxml's text results are str subclasses that tests compile as patterns: honest. A key
    whose subclass claims to equal another text (so that ``re.search("^exact$", ...)`` finds
    the pattern ".*") is caught without running its methods."""
    out = run_fresh("""
        import re
        armed = []
        class Text(str):
            def __eq__(self, other):
                if armed:
                    raise AssertionError("no method of the program's may run while settling")
                return True
            def __hash__(self):
                return hash("^exact$")
        re.compile(Text(".*"))
        armed.append(1)
        out["honest"] = settle()
        armed.clear()
        re._cache[(str, Text(".*"), 0)] = re.compile(".*")
        out["lookup"] = re.compile("^exact$").pattern                   # the forgery works...
        armed.append(1)
        out["forged"] = settle()                                        # ...until it is found
    """)
    assert out["honest"]["changed"] == []
    assert out["lookup"] == ".*"
    assert out["forged"]["changed"] == ["re._cache"]


FORGE_PATTERN = """
    import re, _sre
    from re import _compiler, _parser
    def forged(text, anything=".*"):
        # a pattern that says it is ``text`` (same source, same flags) but whose code matches anything
        parsed = _parser.parse(anything, 0)
        return _sre.compile(text, parsed.state.flags, _compiler._code(parsed, 0), parsed.state.groups - 1,
                            parsed.state.groupdict, (None,) * parsed.state.groups)
"""


def test_a_cached_pattern_whose_code_is_not_its_texts_is_found():
    """``_sre.compile`` takes a pattern's text and its compiled code apart: a cached pattern
    whose text and flags equal its key's but whose code matches anything would make
    ``assertRaisesRegex`` / ``pytest.raises(match=...)`` accept any message. The cached
    pattern is compiled again from its key and compared, code included; an honest one
    compiled during the test passes."""
    out = run_fresh(textwrap.dedent(FORGE_PATTERN) + textwrap.dedent("""
        re.compile("^honest [a-z]+$")
        out["honest"] = settle()
        fake = forged("^exact$")
        out["same text"] = fake.pattern == "^exact$" and fake.flags == re.compile("^other$").flags
        re._cache[(str, "^exact$", 0)] = fake
        out["lookup"] = bool(re.search("^exact$", "any message at all"))   # the forgery works...
        out["forged"] = settle()                                             # ...until it is found
    """))
    assert out["honest"]["changed"] == []
    assert out["same text"] and out["lookup"]
    assert out["forged"]["changed"] == ["re._cache"]


def test_what_the_zygotes_imports_change_on_the_ground_is_recorded_with_it():
    """prepare's ``imports`` (a benchmark's libraries) are imported after the ground is built,
    and what they did to it (here: the patterns http.cookiejar compiles into re's cache) is
    recorded with it: settle keeps it. The same import after prepare, as a program's own,
    is put back (its patterns leave the cache); a library that does not import is reported."""
    def cache_sizes(prepare: str) -> dict:
        code = ("import json, re, sys\nfrom codea1.harness.sandbox import child, settle\n" + prepare +
                "\nbefore = len(re._cache)\nsettle.settle(None)\n"
                "print(json.dumps({'before': before, 'after': len(re._cache), 'result': result}))\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    imported = cache_sizes("result = child.prepare(('unittest',), ['http.cookiejar', 'no_such_module_here'])")
    assert imported["result"][0] == ["http.cookiejar"]
    assert list(imported["result"][1]) == ["no_such_module_here"]
    assert "ModuleNotFoundError" in imported["result"][1]["no_such_module_here"]
    assert imported["after"] == imported["before"]
    by_program = cache_sizes("child.prepare(('unittest',))\nimport http.cookiejar\nresult = None")
    assert by_program["after"] < by_program["before"] == imported["before"]
