"""The ground in-process script tests stand on: what it is, how it is recorded, what counts.

A script test judged in-process runs its framework (unittest, pytest) in the program's own
process. That framework is the one ``prepare`` imported in the zygote, before any program,
and ran once there (``warmup.warm_up``: what it imports on first use is imported then); never a
copy imported after the program, whose module code would run on what the program patched
(``contextlib.contextmanager``, ``functools.wraps``). ``prepare`` then records the
interpreter state the framework stands on, "the ground" (``build``): every module's
dict, the dict behind every class (heap types, and the builtin types reachable from
modules), the contents of the registries modules and classes hold (lists, dicts and sets
that are not plain data), the callables of the objects modules and classes hold, closure
cells, the framework functions' attributes, classes' bases, the type of every such object,
sys.modules and signal handlers. ``settle.settle`` compares the interpreter with it and puts back
what differs: before each script test (what the program patched while it loaded is undone,
not held against it), and right after the framework returns, before anything is read from
its result: whatever differs then, the program changed during the test, which fails.

``settle.settle`` and its helpers take what they call from their own defaults (bound when that
module was imported, in the zygote), never through module globals or builtins, and compare
by identity (``operator.is_``: no method of the program's objects runs). The audit hook
(``audit``) refuses what no snapshot sees: giving new code to a function whose code the
zygote had, or new defaults to one that has some; once the child is armed (``ARMING``,
just before its program loads), further audit hooks; and in a child whose job has script
tests (``SCRIPTS``), trace and profile functions (a tracer can move the runner's frames
past a line), the gc's walks over objects and other threads' frames (``sys._current_frames``;
the harness counts threads with it, and only counts). (Elsewhere they stay allowed: the coverage
stage runs coverage.py in its job.)

The harness runs each part of each test itself (``observers._ut_part``, ``observers._pt_part``: setUp, the test,
tearDown, cleanups; pytest's setup, call and teardown), checks that the test function is the
script's, and counts how each part ended on counters the program cannot turn back
(``itertools.count``): a part that raised stays counted however the framework's own result
is steered afterwards. A test passes when the counters and the framework both say so.

What still works, and is why these verdicts stay marked in-process: code the test calls that
changes something and changes it back before the test ends, code that walks up the stack
into the runner's frames (or reaches pytest's live run through its objects), and raw memory
(ctypes, /proc/self/mem, a numpy array over any address). The result channel is closed to
the program's pure-Python code: each failing part is sent as it happens, on a channel checked
to be the child's (observers._send_event), and each pass is sealed (child.run).

This module records the ground (``build``), says which changes to it fail a test
(``framework_ground``, ``tampering``) and holds the audit hook; ``settle`` compares and puts
back. Only the standard library is imported here: it runs in the sandbox.
"""

from __future__ import annotations

import _thread
import builtins
import gc
import itertools
import re
import signal
import sys
import types

from codea1.harness.sandbox import timing

PLAIN = (int, float, complex, str, bytes, bool, type(None))
FRAMEWORK_NAMES = frozenset(("unittest", "pytest", "_pytest", "pluggy", "iniconfig"))
FRAMEWORK_SUBMODULES = ("unittest.", "pytest.", "_pytest.", "pluggy.", "iniconfig.")
# What the frameworks, the harness or the fork change in a child: entries left alone (a
# child's own temporary directory, pytest's last exception, the warnings registry a module
# makes at its first warning; registries re-keyed after the fork, caches), and registries put
# back before each test but not held against the program (the import path, caches a program
# could poison: re's compiled patterns). A Flag enum's ``_value2member_map_`` caches each
# combination of its members when first made (``re.I | re.M``): left alone too.
_IGNORED_KEYS = {"sys": frozenset(("last_type", "last_value", "last_traceback", "last_exc")),
                 "tempfile": frozenset(("tempdir", "_name_sequence")),
                 "unittest.mock": frozenset(("file_spec", "open_spec")),  # made by the first mock_open
                 timing.__name__: frozenset(("_armed", "_limit", "_start", "_delay0", "_deferred_now", "_fd"))}
_QUIET_KEYS = {"sys": frozenset(("path", "path_importer_cache", "stdin", "stdout", "stderr"))}
_EVERY_MODULE_IGNORED = frozenset(("__warningregistry__",))
_IGNORED_CONTAINERS = frozenset((f"{timing.__name__}.counts", "threading._active", "threading._limbo", "threading._shutdown_locks",
                                 "logging._handlerList", "warnings._onceregistry", "inspect._filesbymodname",
                                 "inspect.modulesbyfile"))
_QUIET_CONTAINERS = frozenset(("sys.path", "sys.path_importer_cache", "linecache.cache", "re._cache", "re._cache2",
                               "warnings.filters"))
_STRICT_CONTAINERS = frozenset(("sys.meta_path", "sys.path_hooks", "gc.callbacks"))
_RULES = tuple((mode, frozenset(), frozenset()) for mode in range(5))  # see _settle_dict
_STRICT_RULE = _RULES[0]
ARMING = itertools.count()  # advanced in each child just before its program loads (see audit)
SCRIPTS = itertools.count()  # advanced there too when the job has script tests
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE
NOTHING_FOUND = ((), (), "")  # what settle.settle finds where there is no ground (the warm-up runs)




def _raw_dict(cls) -> dict:
    """The dict behind a class's mappingproxy."""
    return gc.get_referents(cls.__dict__)[0]


def instance_dict(obj):
    try:
        found = object.__getattribute__(obj, "__dict__")
    except Exception:  # noqa: BLE001 - no instance dict
        return None
    return found if type(found) is dict else None


def _plain_container(value) -> bool:
    """A non-empty container of plain data only (an empty one may be a registry to come)."""
    if isinstance(value, dict):
        return bool(value) and all(type(k) in PLAIN and type(v) in PLAIN for k, v in dict.items(value))
    return bool(value) and all(type(v) in PLAIN for v in value)


def _ground_classes(modules: list, objects: list) -> list:
    """Every heap type alive in the zygote and every class reachable from a module's dict or
    a class's (builtin types included), with their bases and metaclasses."""
    found: dict[int, type] = {}
    stack = [o for o in objects if isinstance(o, type)]
    stack += [v for _name, m in modules for v in list(m.__dict__.values()) if isinstance(v, type)]
    while stack:
        cls = stack.pop()
        if id(cls) in found:
            continue
        try:
            raw = _raw_dict(cls)
        except Exception:  # noqa: BLE001 - no dict behind it to put back
            continue
        if type(raw) is not dict:
            continue
        found[id(cls)] = cls
        stack += [*cls.__mro__, type(cls)]
        stack += [v for v in list(raw.values()) if isinstance(v, type)]
    return list(found.values())


def _named(name: str):
    """``sys.modules[module].attribute`` for "module.attribute", or None."""
    module, _, attribute = name.rpartition(".")
    return getattr(sys.modules.get(module), attribute, None)


def _class_label(cls) -> str:
    module = cls.__module__ if type(cls.__module__) is str else "?"
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _framework(module_name) -> bool:
    """A module of the test frameworks' (or the harness'): everything in it is held strictly."""
    return type(module_name) is str and (module_name.split(".")[0] in FRAMEWORK_NAMES
                                         or module_name.split(".")[0] == "codea1")


class _Ground:
    """The ground as lists, while ``build`` collects it. Each dict has its rule (see
    ``_settle_dict``): the frameworks' modules, classes, functions and registries are held
    strictly (mode 0); elsewhere in the standard library (and what the zygote preloaded) only
    code counts (1, 2): data, caches made on first use and registries that grow (3) are the
    program's and the tests' as in any Python process; the import path and caches a program
    could poison are put back quietly (4)."""

    def __init__(self):
        self.dicts, self.dict_labels, self.dict_owners, self.dict_rules = [], [], [], []
        self.lists, self.list_labels, self.list_modes = [], [], []
        self.sets, self.set_labels, self.set_modes = [], [], []
        self.typed, self.typed_labels = [], []
        self.held, self.held_labels = [], []
        self.cells, self.cell_values, self.cell_labels = [], [], []
        self.functions, self.function_dicts, self.function_labels = [], [], []
        self.seen: set[int] = {id(sys.modules)}
        # by identity: a registry has several names (warnings.filters is _warnings.filters)
        self.quiet = {id(o) for o in map(_named, _QUIET_CONTAINERS) if o is not None}
        self.ignored = {id(o) for o in map(_named, _IGNORED_CONTAINERS) if o is not None}
        self.strict = {id(o) for o in map(_named, _STRICT_CONTAINERS) if o is not None}

    def add_dict(self, d: dict, label: str, owner=None, rule=None) -> None:
        rule = _STRICT_RULE if rule is None else rule
        self.seen.add(id(d))
        self.dicts.append(d), self.dict_labels.append(label), self.dict_owners.append(owner)
        self.dict_rules.append(rule)

    def add_held(self, where: str, value, framework: bool) -> None:
        """A value a module or a class holds: a registry, or an object whose callables count."""
        if type(value) in PLAIN or id(value) in self.seen or isinstance(value, (type, types.ModuleType)):
            return
        self.seen.add(id(value))
        if isinstance(value, (list, dict, set)):
            mode = 4 if id(value) in self.quiet else 0 if framework or id(value) in self.strict else 3
            if id(value) in self.ignored or where.endswith((".__warningregistry__", "._value2member_map_")) \
                    or (_plain_container(value) and mode == 3):
                return
            self.typed.append(value), self.typed_labels.append(where)
            if isinstance(value, dict):
                self.add_dict(value, where, None, _RULES[mode])
            elif isinstance(value, list):
                self.lists.append(value), self.list_labels.append(where), self.list_modes.append(mode)
            else:
                self.sets.append(value), self.set_labels.append(where), self.set_modes.append(mode)
        elif not isinstance(value, (types.FunctionType, types.BuiltinFunctionType, _thread._local)) \
                and instance_dict(value) is not None:  # (a thread-local's dict is its thread's)
            self.typed.append(value), self.typed_labels.append(where)
            self.held.append(value), self.held_labels.append(where)

    def add_function(self, fn) -> None:
        module = fn.__module__ if type(fn.__module__) is str else ""
        where = f"{module}.{fn.__qualname__}"
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # not filled yet
                continue
            if _framework(module) or type(value) not in PLAIN:  # a plain value a closure keeps is its state
                self.cells.append(cell), self.cell_values.append(value)
                self.cell_labels.append(f"{where} (closure)")
        # A framework function's attributes (pluggy reads hook options from them); made now
        # where there were none, so that reading them in a child allocates nothing.
        if _framework(module):
            self.functions.append(fn), self.function_dicts.append(fn.__dict__)
            self.function_labels.append(f"{where} (attributes)")
            self.add_dict(fn.__dict__, f"{where} (attributes)", None, _STRICT_RULE)


def _flat(containers: list, items=tuple) -> tuple:
    """(each container's items, all of them in one tuple, each container's length)."""
    per = tuple(tuple(items(c)) for c in containers)
    return per, tuple(itertools.chain.from_iterable(per)), tuple(map(len, per))


def build() -> tuple[tuple, frozenset]:
    """The ground as it is now, for ``settle.stand_on``, and the code objects of every
    function alive now (for ``install_audit``); ``FRAMEWORK_GROUND`` becomes the modules
    that ``framework_ground`` finds now."""
    global FRAMEWORK_GROUND, _COLLECTED
    FRAMEWORK_GROUND = framework_ground()
    objects = gc.get_objects()
    # (__main__ aside: the zygote's, or the script's that called prepare)
    modules = [(n, m) for n, m in list(sys.modules.items()) if isinstance(m, types.ModuleType) and n != "__main__"]
    classes = _ground_classes(modules, objects)
    functions = [o for o in objects if type(o) is types.FunctionType]
    del objects
    g = _Ground()
    for name, m in modules:
        g.typed.append(m), g.typed_labels.append(name)
        g.add_dict(m.__dict__, name, None, (0 if _framework(name) else 1,
                                            _IGNORED_KEYS.get(name, frozenset()) | _EVERY_MODULE_IGNORED,
                                            _QUIET_KEYS.get(name, frozenset())))
    for cls in classes:
        g.add_dict(_raw_dict(cls), _class_label(cls), cls, _RULES[0 if _framework(cls.__module__) else 2])
    holders = [(label, d, rule[0] == 0) for label, d, rule in zip(g.dict_labels, g.dicts, g.dict_rules)]
    for holder, namespace, framework in holders:
        for key, value in list(namespace.items()):
            if type(key) is str:
                g.add_held(f"{holder}.{key}", value, framework)
    for fn in functions:
        g.add_function(fn)
    _COLLECTED = (g, modules, classes)
    return _record(g, modules, classes), frozenset(f.__code__ for f in functions)


_COLLECTED: tuple | None = None  # what build found the ground to be: its objects


def record_again() -> tuple:
    """The ground ``build`` found, its objects as they are now: what the zygote's imports
    did to them since (``child.prepare``: registries, caches, re's compiled patterns) is part
    of what ``settle`` puts back to and compares with, and the modules they brought are not
    walked."""
    g, modules, classes = _COLLECTED
    names = {n for n, _m in modules}
    # Their modules' own __builtins__ are left to them in a child, as their other names are
    # (settle walks them on every script test otherwise: a page copied per module and dict).
    libraries = tuple(m for n, m in list(sys.modules.items()) if n not in names and isinstance(m, types.ModuleType))
    for i, cell in enumerate(g.cells):
        try:
            g.cell_values[i] = cell.cell_contents
        except ValueError:  # emptied since: settle puts the value back
            pass
    return _record(g, modules, classes, libraries)


def _record(g: _Ground, modules: list, classes: list, libraries: tuple = ()) -> tuple:
    """The ground tuple ``settle.stand_on`` takes: ``g``'s objects and their contents now."""
    held_dicts = [instance_dict(o) for o in g.held]
    triples = [(d, k, v, f"{label}.{k}") for d, label in zip(held_dicts, g.held_labels) for k, v in d.items()
               if type(k) is str and (callable(v) or isinstance(v, types.ModuleType))]
    heap = [c for c in classes if c.__flags__ & _HEAP_TYPE]
    handlers = [(s, signal.getsignal(s)) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    handlers = [(s, h) for s, h in handlers if h is not None]
    keys_per, _keys, lens = _flat(g.dicts, dict.keys)
    values_per, _values, _lens = _flat(g.dicts, dict.values)
    busy = tuple(d for d in g.dicts if d)  # the empty ones (most functions' attributes): their lengths tell
    _keys_per, keys_flat, _lens = _flat(busy, dict.keys)
    _values_per, values_flat, _lens = _flat(busy, dict.values)
    chunks = tuple((start, min(start + 64, len(g.dicts))) for start in range(0, len(g.dicts), 64))
    lists_per, lists_flat, list_lens = _flat(g.lists)
    sets_per, sets_flat, set_lens = _flat(g.sets)
    # re's caches, and the patterns in them now (compiled before any program): these stay
    # alive in the ground, so their ids name them; any other is checked against its key
    caches = tuple(d for d in (getattr(re, "_cache", None), getattr(re, "_cache2", None)) if type(d) is dict)
    zygote_patterns = tuple(p for cache in caches for p in cache.values())
    ground = (
        (tuple(g.typed), tuple(map(type, g.typed)), tuple(g.typed_labels)),
        (tuple(g.dicts), lens, busy, keys_flat, values_flat, keys_per, values_per, tuple(g.dict_labels),
         tuple(g.dict_owners), tuple(o is not None and bool(o.__flags__ & _HEAP_TYPE) for o in g.dict_owners),
         tuple(g.dict_rules), chunks),
        (tuple(g.lists), list_lens, lists_flat, lists_per, tuple(g.list_labels), tuple(g.list_modes)),
        (tuple(g.sets), set_lens, sets_flat, sets_per, tuple(g.set_labels), tuple(g.set_modes)),
        (tuple(heap), tuple(c.__bases__ for c in heap), tuple(_class_label(c) + ".__bases__" for c in heap)),
        (tuple(g.cells), tuple(g.cell_values), tuple(g.cell_labels)),
        (tuple(g.functions), tuple(g.function_dicts), tuple(g.function_labels)),
        (tuple(g.held), tuple(held_dicts), tuple(map(len, held_dicts)), tuple(frozenset(d) for d in held_dicts),
         tuple(g.held_labels), tuple(t[0] for t in triples), tuple(t[1] for t in triples),
         tuple(t[2] for t in triples), tuple(t[3] for t in triples)),
        (sys.modules, tuple(n for n, _m in modules), tuple(m for _n, m in modules),
         frozenset(n for n, _m in modules), frozenset(map(id, libraries)), libraries),  # (held: ids stay theirs)
        (tuple(s for s, _h in handlers), tuple(h for _s, h in handlers),
         frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ())), tuple(sys.get_asyncgen_hooks())),
        (caches, frozenset(id(p) for p in zygote_patterns), zygote_patterns),
    )
    return ground



class Guarded(tuple):
    """An attribute of unittest's that an observed test class holds as the ground has it (see
    observers._observe_unittest): (value, how), ``how`` 0 a method (bound to the case), 1 a
    mapping given as its items (a fresh dict on each read: what a test or the program writes
    into it is lost; every observed class holds unittest's ``_type_equality_funcs`` so).
    A data descriptor, so an instance's dict cannot shadow it, and a tuple, so its value
    cannot be swapped; ``audit`` refuses moving an instance of a class that holds some to
    another class (``__class__``, which is audited; a class's own attributes are not)."""

    __slots__ = ()

    def __get__(self, instance, owner=None, _item=tuple.__getitem__, _bind=types.MethodType, _dict=dict):
        value = _item(self, 0)
        if instance is None:
            return value
        return _bind(value, instance) if _item(self, 1) == 0 else _dict(value)

    def __set__(self, instance, value, _item=tuple.__getitem__):
        if _item(self, 1) == 0:  # unittest's own __init__ sets the mapping: that is let be (and lost)
            raise AttributeError("refused in the sandbox: a test case's unittest assertions are the ground's")

    def __delete__(self, instance):
        raise AttributeError("refused in the sandbox: a test case's unittest assertions are the ground's")


def audit(event, args, _watched=frozenset(("object.__setattr__", "object.__delattr__", "sys.addaudithook",
                                            "sys.settrace", "sys.setprofile", "sys._settraceallthreads",
                                            "sys._setprofileallthreads", "sys.monitoring.register_callback",
                                            "gc.get_objects", "gc.get_referrers", "gc.get_referents",
                                            "sys._current_frames")),
           _attributes=frozenset(("__code__", "__defaults__", "__kwdefaults__")), _codes=frozenset(),
           _arming=ARMING, _scripts=SCRIPTS, _repr=repr, _type=type, _function=types.FunctionType,
           _error=RuntimeError, _caller=sys._getframe, _guarded=Guarded, _marked="_type_equality_funcs",
           _class_dict=type.__dict__["__dict__"].__get__, _thread_counters=frozenset()):
    """The audit hook ``prepare`` installs (see above). Installed for good, its state in
    counters that only go up: what it refuses, the program cannot make it allow; the harness
    never does it in a child."""
    if event not in _watched:
        return
    if event == "object.__setattr__" or event == "object.__delattr__":
        target = args[0]
        if _type(target) is _function:
            if args[1] in _attributes and target.__code__ in _codes and (
                    args[1] == "__code__"
                    or (target.__defaults__ if args[1] == "__defaults__" else target.__kwdefaults__) is not None):
                raise _error("refused in the sandbox: the harness' and the test frameworks' functions keep their "
                             "code and defaults")
            return
        if args[1] == "__class__" and _type(_class_dict(_type(target)).get(_marked)) is _guarded:
            raise _error("refused in the sandbox: a test case keeps its class")
        return
    if event == "sys._current_frames" and _caller(1).f_code in _thread_counters:
        return  # the harness counting threads (settle): it keeps the frames to itself
    if _repr(_scripts if event != "sys.addaudithook" else _arming) != "count(0)":
        raise _error("refused in the sandbox: " + event)




def install_audit(codes: frozenset, thread_counters: frozenset = frozenset()) -> None:
    """Installs ``audit`` for good, keeping ``codes`` (``build``'s second value) and the code
    of the harness' functions that may list the threads' frames (they only count them)."""
    audit.__defaults__ = (*audit.__defaults__[:2], codes, *audit.__defaults__[3:-1], thread_counters)
    sys.addaudithook(audit)


def stuck_reason(stuck: list) -> str:
    if not stuck:
        return ""
    return f"the program changed the test framework: {', '.join(sorted(set(stuck))[:4])} (it could not be put back)"


_FRAMEWORK_ROOTS = ("unittest", "pytest", "_pytest", "pluggy", "iniconfig", "codea1")
# What ``tampering`` holds against a program: the roots until ``build`` runs, then
# ``framework_ground()``.
FRAMEWORK_GROUND: tuple = _FRAMEWORK_ROOTS


def framework_ground() -> tuple:
    """The modules a change to which, during a test, fails it: the frameworks' own and the
    standard-library modules they reach through their globals (contextlib, functools,
    traceback...), transitively. A change elsewhere (a library resolving its lazy
    attributes, mimetypes reading its tables, the test's own pyfakefs) is put back before
    the next script test but is no sign of tampering."""
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    found = {name for name in sys.modules if name.split(".")[0] in _FRAMEWORK_ROOTS}
    todo = list(found)
    while todo:
        module = sys.modules.get(todo.pop())
        for value in list(getattr(module, "__dict__", {}).values()):
            name = getattr(value, "__name__", None) if type(value) is types.ModuleType else None
            if type(name) is str and name not in found and name in sys.modules and (
                    name.split(".")[0] in stdlib or name.split(".")[0] in _FRAMEWORK_ROOTS):
                found.add(name)
                todo.append(name)
    return tuple(sorted(found))


# On the frameworks' ground but deciding no verdict (checked against unittest, unittest.mock,
# pytest and pluggy), and changed by libraries that tests use, as they load or run: put back
# before the next test like everything else, never held against the program.
#   linecache, tokenize: source lines for tracebacks (pyfakefs points them at the real disk);
#   tempfile: pyfakefs reloads it, on both sides of every test;
#   inspect.isgenerator: a Cython module (lxml.etree, first imported in a test) wraps it to
#   recognise its generators; no framework calls it.
_NO_VERDICT_MODULES = ("linecache", "tokenize", "tempfile")
_NO_VERDICT_NAMES = frozenset(("inspect.isgenerator",))
# A module attribute the interpreter itself reads (PEP 562); any other new dunder in builtins
# is a name only code that spells it reaches (pybind11 keeps its internals there).
_MODULE_HOOKS = frozenset(("__getattr__", "__dir__"))


def _decides_verdicts(label: str, builtin_names=frozenset(builtins.__dict__)) -> bool:
    if label in _NO_VERDICT_NAMES or label.split(".")[0] in _NO_VERDICT_MODULES:
        return False
    name = label[len("builtins."):] if label.startswith("builtins.") else ""
    return not (name.startswith("__") and name.endswith("__") and name not in builtin_names
                and name not in _MODULE_HOOKS)


def tampering(after: tuple, ground: tuple | None = None) -> str:
    """Why a test whose framework just returned fails, from what ``settle.settle`` found then:
    changes to the frameworks' ground (``framework_ground``) only, less what decides no
    verdict (``_decides_verdicts``)."""
    changed, stuck, threads = after
    if threads:
        return threads
    ground = FRAMEWORK_GROUND if ground is None else ground
    found = sorted(label for label in set(stuck) | set(changed)
                   if any(label == m or label.startswith(m + ".") for m in ground) and _decides_verdicts(label))
    if not found:
        return ""
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    return f"the program changed {', '.join(found[:4])}{more} during the test"
