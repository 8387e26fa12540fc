"""Expected sides a script test computes at run time from values no program touched.

``self.assertEqual(result, expected)`` where ``expected = pd.DataFrame(...)`` or
``len(text)``: the expected side is not a literal (``script_tests.known_value`` cannot know
it), but no program is needed to compute it. This module finds such sides in the trusted
parent, by a walk over the test's own statements (``FunctionTaint``: which names hold values
that no program touched, statement by statement), and builds the *slice*: the test module
with every statement that touches the program removed and each such expected side reported
where the test would have computed it. The slice runs in a sandbox job of its own with no
program in it (``harness.verdicts.expected`` settles it, as it settles golden asserts'
expressions), twice in one process; a side that the two runs do not agree on, or that the
slice could not compute, sends its test back to being judged in-process (the rewrite's
fallback script). The rewritten script the program runs with holds none of these sides, nor
the statements that computed only them: the parent compares.

What "touched" means (``FunctionTaint``), so that a slice value is the value the test would
have had next to an honest program:
- a name the test module does not bind itself (the solution's ``task_func``, its constants),
  a parameter (a mock), anything computed from one, is the program's;
- a mutable local or ``self`` attribute the program was given (loaded by a statement that
  touches the program) is the program's from then on: it may have changed it;
- after the first statement that touches the program, reading the world (files, the clock,
  the random generators: ``WORLD_READS``) is the program's too: it may have changed them.
- inside an ``if``/``for``/``with``/``try`` that touches the program, a side counts only when
  none of its names is bound or given to the program within that statement: it is computed
  just before the statement.
``context``: module-level code the script runs on top of that is not the program's (a
BigCodeBench task's imports and constants, from its prompt): the slice runs on it, the names
it binds count as the test's own.

Standard library only: the parent uses it when it rewrites; the child imports it with
``script_tests`` and runs none of it.
"""

from __future__ import annotations

import ast
import builtins
import collections
import contextlib
import dataclasses
import functools

BUILTIN_NAMES = frozenset(dir(builtins))
PROGRAM_MODULES = frozenset({"solution"})
# Calls that read state a program can change (files, the clock, the random generators).
WORLD_READS = frozenset({
    "open", "read", "read_csv", "read_excel", "read_json", "read_table", "read_pickle", "read_parquet", "read_sql",
    "read_text", "read_bytes", "read_html", "load", "listdir", "exists", "isfile", "isdir", "getsize", "glob",
    "iglob", "walk", "scandir", "stat", "getcwd", "getenv", "now", "today", "time", "utcnow", "imread",
    "random", "rand", "randn", "randint", "choice", "choices", "shuffle", "sample", "uniform", "normal",
    "permutation", "gauss", "getrandbits", "iterdir", "rglob", "connect", "get", "urlopen", "environ",
    "readlines", "readline", "fetchall", "fetchone", "execute", "getstate", "get_state", "gca", "gcf",
    "getmtime", "getctime", "getatime", "lstat", "fromtimestamp", "localtime", "gmtime", "monotonic",
    "perf_counter", "process_time", "mkdtemp", "mkstemp", "gettempdir", "TemporaryDirectory", "NamedTemporaryFile",
    "uuid1", "uuid4", "urandom", "token_hex", "token_bytes", "getpid", "cpu_count", "iterdir", "resolve", "absolute",
    "cwd", "home", "expanduser", "realpath", "abspath", "getlogin", "gethostname",
})
# Calls whose answer differs from one process to the next (the clock, temporary names, the
# job's folder, fresh randomness): a name bound from one holds a value the slice cannot repeat.
VOLATILE = frozenset({
    "time", "now", "today", "utcnow", "getmtime", "getctime", "getatime", "stat", "lstat", "localtime", "gmtime",
    "monotonic", "perf_counter", "process_time", "mkdtemp", "mkstemp", "gettempdir", "TemporaryDirectory",
    "NamedTemporaryFile", "uuid1", "uuid4", "urandom", "token_hex", "token_bytes", "token_urlsafe", "getpid",
    "getcwd", "cwd", "abspath", "realpath", "resolve", "absolute", "SystemRandom", "default_rng", "Faker",
})
# Calls a side inside a loop may make: the same answer on every pass
PURE_CALLS = frozenset({"len", "sorted", "list", "tuple", "set", "dict", "str", "int", "float", "abs", "round", "min",
                        "max", "sum", "bool", "frozenset", "range", "enumerate", "zip", "array", "DataFrame",
                        "Series", "asarray", "lower", "upper", "strip", "split", "join", "format", "items", "keys",
                        "values", "copy", "tolist", "to_list"})
# Modules whose state a program can change (sys.path, os.environ, sys.modules): a side that
# reads one after the program ran is the program's.
WORLD_MODULES = frozenset({"sys", "os", "tempfile", "shutil", "glob", "pathlib", "Path", "time", "random", "socket",
                           "platform", "importlib", "logging", "locale", "gc", "threading", "subprocess", "plt",
                           "matplotlib", "pyplot"})
# Calls a dropped statement must not make (it would change what the test does next).
EFFECTS = frozenset({
    "open", "write", "writelines", "to_csv", "to_json", "to_excel", "to_pickle", "to_parquet", "savefig", "mkdir",
    "makedirs", "remove", "unlink", "rmtree", "rmdir", "system", "run", "Popen", "call", "seed", "dump",
    "write_text", "write_bytes", "touch", "copy", "copyfile", "move", "rename", "chdir", "setattr", "delattr",
    "exec", "eval", "print", "patch", "start", "close", "plot", "figure", "subplots", "hist", "bar", "scatter",
    "show", "set_seed", "manual_seed", "putenv", "create", "insert", "append", "extend", "update", "pop",
    "multiple", "mock_open", "MagicMock", "Mock",
    "add", "clear", "setdefault", "sort", "reverse", "popitem", "discard", "__setitem__", "commit",
})
TEST_CASE_API = frozenset({"subTest", "id", "shortDescription", "addCleanup", "maxDiff", "longMessage"})


_MEMO: dict | None = None


@contextlib.contextmanager
def memo():
    """Within it, the name walks below remember their answers per node (a rewrite walks the
    same statements many times). Entries hold their nodes and arguments, so an identity is
    never reused while the memo lives; the walked trees must not change meanwhile."""
    global _MEMO
    outer = _MEMO
    _MEMO = {} if outer is None else outer
    try:
        yield
    finally:
        _MEMO = outer


@contextlib.contextmanager
def no_memo():
    """Walks that must see trees as they are now (after a rewrite changed them)."""
    global _MEMO
    outer, _MEMO = _MEMO, None
    try:
        yield
    finally:
        _MEMO = outer


def _memoized(fn):
    @functools.wraps(fn)
    def wrapper(node, *args):
        if _MEMO is None:
            return fn(node, *args)
        key = (fn.__name__, id(node), *map(id, args))
        hit = _MEMO.get(key)
        if hit is None:
            hit = _MEMO[key] = (node, args, frozenset(fn(node, *args)))
        return hit[2]
    return wrapper


@_memoized
def stored_names(node: ast.AST) -> set[str]:
    """Names a statement binds or deletes anywhere in it (``bound_names``), and those whose
    objects it changes: ``x`` of ``x[0] = ...`` / ``x.y = ...``, ``self.X`` of ``self.X = ...``
    (and of ``self.X[...] = ...``), and its global and nonlocal names."""
    out = set(bound_names(node))
    for n in ast.walk(node):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            base = n
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self":
                    out.add(f"self.{base.attr}")
                base = base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out |= set(n.names)
    return out - _bound_inside(node) - {"self", "cls"}


@_memoized
def bound_names(node: ast.AST) -> set[str]:
    """Names a statement binds (not those whose objects it changes: ``x.y = 1`` reads x)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out - _bound_inside(node)


@_memoized
def _bound_inside(node: ast.AST) -> set[str]:
    """Names bound by comprehensions and lambdas within ``node``: local to them."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            out |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
        elif isinstance(n, ast.Lambda):
            out |= {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
    return out


@_memoized
def loaded_names(node: ast.AST, attributes: set[str] | frozenset = frozenset()) -> set[str]:
    """Names an expression or statement reads (those its comprehensions bind aside), and
    ``self.X`` for each ``X`` in ``attributes`` (the class' own) it reads."""
    inner = _bound_inside(node) | {"self", "cls"}  # the test instance: its attributes count, as self.X
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - inner
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                and n.attr in attributes and isinstance(n.ctx, ast.Load):
            out.add(f"self.{n.attr}")
    return out


@_memoized
def called_names(node: ast.AST) -> set[str]:
    """The last name of every call in ``node``: ``f`` of ``f(x)``, ``a.b.f(x)``."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            out.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
        elif isinstance(n, ast.Attribute) and n.attr == "environ":
            out.add("environ")
    return out


def _immutable(value) -> bool:
    if isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    return False


def program_module(node: ast.stmt) -> bool:
    """``from solution import f`` / ``import solution``: the program's names."""
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in PROGRAM_MODULES
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in PROGRAM_MODULES for a in node.names)
    return False


def context_names(context: str) -> set[str]:
    """The names ``context`` binds at module level (see ``context_of``)."""
    try:
        module = ast.parse(context)
    except SyntaxError:
        return set()
    return {name for node in module.body for name in stored_names(node)}


def context_of(code: str) -> str:
    """The module-level imports and constants (assignments of literals) of trusted code,
    e.g. a BigCodeBench prompt: what its tests may use without binding it themselves."""
    from codea1.harness.verdicts.script_tests import Unknown, known_value

    try:
        module = ast.parse(code)
    except SyntaxError:
        return ""
    keep = []
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not program_module(node):
            keep.append(node)
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                known_value(node.value)
            except Unknown:
                continue
            keep.append(node)
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) + "\n" if keep else ""


@dataclasses.dataclass
class ModuleScope:
    """What a test module binds by itself, with no program: ``clean`` module names (its
    imports, definitions whose bodies reach no program name, assignments computed from
    them, the context's names), and per test class the ``self`` attributes its setUp binds
    from clean values only (``attributes``) and its helper methods that reach no program
    name (``methods``)."""
    clean: set[str]
    data: set[str]  # clean module names bound by assignments: values a program may be given
    attributes: dict[str, set[str]]
    methods: dict[str, set[str]]
    all_attributes: dict[str, set[str]]  # every self.X a class binds or defines
    volatile: set[str] = dataclasses.field(default_factory=lambda: set(VOLATILE))  # calls whose answer differs by process

    def taint(self, fn: ast.FunctionDef, cls: str) -> "FunctionTaint":
        """``fn``'s taint, a function of class ``cls`` ("" at module level)."""
        return FunctionTaint(fn, self.clean, self.attributes.get(cls, set()), self.methods.get(cls, set()),
                             self.all_attributes.get(cls, set()), self.data, self.volatile)


def _free_of_program(node: ast.AST, clean: set[str], attributes: set[str] = frozenset()) -> bool:
    """A definition whose body reads only clean names, its own locals and builtins."""
    own = stored_names(node) | {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    names = loaded_names(node) - own - BUILTIN_NAMES - clean - {"self", "cls"}
    if names:
        return False
    for n in ast.walk(node):  # self.X read but not a clean attribute or method (TestCase's own API aside)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                and isinstance(n.ctx, ast.Load) and not n.attr.startswith(("assert", "fail")) \
                and n.attr not in TEST_CASE_API and n.attr not in attributes:
            return False
    return True


def module_scope(module: ast.Module, context: str, framework: str) -> ModuleScope:
    clean = set(context_names(context))
    data: set[str] = set()
    for node in module.body:
        if program_module(node):
            clean -= stored_names(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            clean |= stored_names(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            (clean.add if _free_of_program(node, clean | {node.name}) else clean.discard)(node.name)
        elif isinstance(node, ast.ClassDef):
            clean.discard(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            names = stored_names(node)
            if not (loaded_names(node.value) - clean - BUILTIN_NAMES) and not called_names(node) & EFFECTS:
                clean |= names
                data |= names
            else:
                clean -= names
        else:
            clean -= stored_names(node)
    volatile = set(VOLATILE)
    changed = True
    while changed:  # a helper of the test's that reads the clock or makes a temporary folder is volatile too
        changed = False
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in volatile \
                    and called_names(node) & volatile:
                volatile.add(node.name)
                changed = True
    attributes, methods, every = {}, {}, {}
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            attributes[node.name], methods[node.name], every[node.name] = _class_scope(node, clean, volatile)
            if not node.decorator_list and not (loaded_names(ast.Tuple(node.bases, ast.Load())) - clean - BUILTIN_NAMES):
                clean.add(node.name)  # a helper class of the test's own (test classes are not called)
                if any(not _free_of_program(m, clean, attributes[node.name] | methods[node.name])
                       for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    clean.discard(node.name)
    return ModuleScope(clean, data, attributes, methods, every, volatile)


SETUP_METHODS = ("setUp", "setUpClass")


def _class_scope(cls: ast.ClassDef, clean: set[str], volatile: set[str] = VOLATILE) -> tuple[set[str], set[str], set[str]]:
    """(clean ``self`` attributes, clean helper methods, every attribute and method) of a test
    class: an attribute is clean when every statement that binds it is in setUp (or
    setUpClass, or the class body), computed from clean values, and no other method binds
    or changes it."""
    functions = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    every = {m.name for m in functions}
    bound_elsewhere: set[str] = set()
    for m in functions:
        names = {n[5:] for n in stored_names(m) if n.startswith("self.")}
        every |= names
        if m.name not in SETUP_METHODS:
            bound_elsewhere |= names
    for node in cls.body:
        if isinstance(node, ast.Assign):
            every |= {n for n in stored_names(node) if "." not in n}
    good: set[str] = set()
    for node in cls.body:  # class attributes: self.X reads them too
        if isinstance(node, ast.Assign) and not (loaded_names(node.value) - clean - BUILTIN_NAMES) \
                and not called_names(node) & EFFECTS:
            good |= {n for n in stored_names(node) if "." not in n}
    for m in functions:
        if m.name in SETUP_METHODS:
            taint = FunctionTaint(m, clean, good, set(), every, volatile=volatile)
            good |= {n[5:] for n in taint.clean_after if n.startswith("self.")}
            good -= {n[5:] for n in taint.dirty_after if n.startswith("self.")}
    good -= bound_elsewhere
    methods: set[str] = set()
    changed = True
    while changed:  # helpers that call helpers
        changed = False
        for m in functions:
            if m.name not in methods and m.name not in SETUP_METHODS and not m.name.startswith("test") \
                    and not m.decorator_list and _free_of_program(m, clean, good | methods | {m.name}):
                methods.add(m.name)
                changed = True
    return good, methods, every


class FunctionTaint:
    """Which names of one test function hold values no program touched, before each of its
    top-level statements (see the module's docstring)."""

    def __init__(self, fn: ast.FunctionDef, clean_globals: set[str], attributes: set[str], methods: set[str],
                 every_attribute: set[str], data: set[str] = frozenset(), volatile: set[str] = VOLATILE):
        self.every_attribute, self.volatile = every_attribute, volatile
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} - {"self", "cls"}
        # pytest's parametrize arguments are the test's own data, not the program's
        self.parametrized = {n for d in getattr(fn, "decorator_list", ()) if "parametrize" in ast.unparse(d)
                             for n in params}
        self.locals = {n for s in fn.body for n in bound_names(s)} | params
        self.given_before: list[frozenset[str]] = []  # names handed to the program before each statement
        given_so_far: set[str] = set()
        clean = (set(clean_globals) - params) | {f"self.{a}" for a in attributes | methods}
        mutable = set(data) | {f"self.{a}" for a in attributes}  # values the program could change when given them
        self.before: list[frozenset[str]] = []
        self.touches: list[bool] = []
        self.mutable_before: list[frozenset[str]] = []
        self.first_touch: int | None = None
        dirty: set[str] = set()
        for i, statement in enumerate(fn.body):
            self.before.append(frozenset(clean))
            self.mutable_before.append(frozenset(mutable))
            self.given_before.append(frozenset(given_so_far))
            touches = self.touches_program(statement, clean, self.first_touch is not None)
            stored = stored_names(statement)
            given = (loaded_names(statement, every_attribute) & mutable & clean) if touches else set()
            if touches:
                given_so_far |= loaded_names(statement, every_attribute)
                if self.first_touch is None:
                    self.first_touch = i
                clean -= stored | given
                dirty |= stored | given
            else:
                clean |= stored
                dirty -= stored
                mutable |= {n for n in stored if not self._immutable_binding(statement, n)}
            self.touches.append(touches)
        self.statements = list(fn.body)  # as written: a rewrite changes its own copies
        self.clean_after, self.dirty_after = clean, dirty
        self.derived = _derived(fn, self.locals, clean_globals - params, every_attribute, self.parametrized)

    def touches_program(self, node: ast.AST, clean: set[str], program_ran: bool) -> bool:
        """Whether ``node`` reads a name that is not clean (the program's, or computed from
        it), or reads the world after the program ran."""
        names = loaded_names(node, self.every_attribute) - BUILTIN_NAMES - bound_names(node)
        if names - clean:
            return True
        if called_names(node) & self.volatile:  # its value differs in the slice's process: not clean
            return True
        # a name the statement binds and then reads (a for-loop's variable) is as clean as what it is bound from
        if self._reads_not_clean_own(node, clean):
            return True
        return program_ran and bool(called_names(node) & WORLD_READS or names & WORLD_MODULES)

    @staticmethod
    def _reads_not_clean_own(node: ast.AST, clean: set[str]) -> bool:
        inner = bound_names(node)
        if not inner:
            return False
        loads = loaded_names(node) - BUILTIN_NAMES
        # names read before any binding of them inside the statement: taken as bound from clean sides
        # only when every binding's value reads clean names or the statement's own bindings
        for n in ast.walk(node):
            value = None
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                value = n.value
            elif isinstance(n, (ast.For, ast.AsyncFor)):
                value = n.iter
            elif isinstance(n, ast.withitem):
                value = n.context_expr
            if value is not None and loaded_names(value) - BUILTIN_NAMES - clean - inner:
                return True
        return bool(loads - clean - inner - BUILTIN_NAMES)

    @staticmethod
    def _immutable_binding(statement: ast.stmt, name: str) -> bool:
        from codea1.harness.verdicts.script_tests import Unknown, known_value

        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name:
            try:
                return _immutable(known_value(statement.value))
            except Unknown:
                return False
        return False

    def revealed(self, node: ast.expr, top: int, statement: ast.stmt, data: set[str] = frozenset()) -> set[str]:
        """The test's own values (its parametrize arguments, locals, ``self`` attributes and
        module data that no program computed and the program was not given) that reporting
        ``node`` from the program's process would put there: none when ``node`` reads the
        program (its value is the program's answer, whatever inputs it takes)."""
        names = loaded_names(node, self.every_attribute) - BUILTIN_NAMES
        if names - self.before[top] - self.locals - self.parametrized or names & self.derived:
            return set()  # the program's names, or values computed from them
        given = set(self.given_before[top])
        if self.touches[top]:
            elsewhere = _load_counts(self.statements[top], self.every_attribute) \
                - _load_counts(node, self.every_attribute)
            given |= set(elsewhere)
        own = {n for n in names if n in self.locals or n.startswith("self.") or n in data or n in self.parametrized}
        return own - given

    def computable(self, node: ast.expr, top: int, statement: ast.stmt) -> bool:
        """Whether ``node``, inside top-level statement ``top`` (``statement``), can be computed
        without the program just before that statement, with the value it has in the test."""
        names = loaded_names(node, self.every_attribute) - BUILTIN_NAMES
        if names - self.before[top]:
            return False
        calls = called_names(node)
        if calls & EFFECTS:
            return False
        if (calls & WORLD_READS or names & WORLD_MODULES) and self.first_touch is not None and self.first_touch <= top:
            return False
        if names & stored_names(self.statements[top]):  # bound again before the side is reached
            return False
        if calls & self.volatile:
            return False
        if calls - PURE_CALLS and any(isinstance(n, (ast.For, ast.While, ast.AsyncFor)) and _count_node(n, node)
                                      for n in ast.walk(statement)):
            return False  # computed once before the loop: only a side that is the same on every pass
        for n in ast.walk(statement):  # inside `with patch(...)`: the patch may change the side's value
            if isinstance(n, (ast.With, ast.AsyncWith)) and _count_node(n, node) \
                    and any(called_names(item.context_expr) & EFFECTS or "patch" in ast.unparse(item.context_expr)
                            for item in n.items):
                return False
        if self.touches[top]:  # given to the program elsewhere in the statement, maybe before the side
            elsewhere = _load_counts(self.statements[top], self.every_attribute) \
                - _load_counts(node, self.every_attribute)
            if names & set(elsewhere) & self.mutable_before[top]:
                return False
        return True


def _derived(fn: ast.FunctionDef, local: set[str], clean_globals: set[str], attributes: set[str],
             parametrized: set[str]) -> set[str]:
    """Locals and ``self`` attributes that some binding computes from the program's names (or
    from such locals), anywhere in the function: a fixpoint, flow-insensitive."""
    own = local | parametrized | {f"self.{a}" for a in attributes}
    bindings: list[tuple[set[str], set[str]]] = []
    for n in ast.walk(fn):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            bindings.append(({k for t in targets for k in stored_names(t)}, loaded_names(n.value, attributes)))
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            bindings.append((stored_names(n.target), loaded_names(n.iter, attributes)))
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            bindings.append((stored_names(n.optional_vars), loaded_names(n.context_expr, attributes)))
        elif isinstance(n, ast.NamedExpr):
            bindings.append(({n.target.id}, loaded_names(n.value, attributes)))
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bindings.append(({n.name}, {"<program>"}))  # what the program raised
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} - {"self", "cls"} - parametrized
    derived = set(params)  # mocks and fixtures: objects the program works on
    program = lambda reads: bool(reads - clean_globals - own - BUILTIN_NAMES) or bool(reads & derived)
    changed = True
    while changed:
        changed = False
        for targets, reads in bindings:
            if program(reads) and not targets <= derived:
                derived |= targets
                changed = True
    return derived


def _count_node(tree: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(tree))


def _load_counts(node: ast.AST, attributes: set[str]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            counts[n.id] += 1
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                and n.attr in attributes:
            counts[f"self.{n.attr}"] += 1
    return counts


# ---------------------------------------------------------------------------------------------
# What the program's process no longer needs, and the slice.


def _effect_receivers(statement: ast.AST) -> tuple[set[str], bool]:
    """(names whose methods with effects the statement calls, whether it makes any other call
    with effects)."""
    receivers, other = set(), False
    for n in ast.walk(statement):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == "self":
            other = True  # a helper of the test's: it may write files, patch, ...
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in EFFECTS:
                continue
            base = func.value if isinstance(func, ast.Attribute) else None
            key = _key(base)
            if key is None:
                other = True
            else:
                receivers.add(key)
    return receivers, other


def _key(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _changes(statement: ast.stmt) -> tuple[set[str], bool]:
    receivers, other = _effect_receivers(statement)
    return stored_names(statement) | receivers, other


def drop_expected_only(body: list[ast.stmt], names: set[str], attributes: set[str],
                       local: set[str] = frozenset()) -> tuple[list[ast.stmt], set[str]]:
    """``body`` without the statements that only compute ``names`` (the expected sides' own
    names: the parent has their values from the slice), and the ``local`` names only those
    statements read, where nothing left reads them; and the names the body still binds
    without reading them (their values would sit in the program's process)."""
    drop = set(names)
    grown = True
    while grown:  # what the dropped statements read, if nothing else reads it, goes too
        before = len(drop)
        for s in body:
            if _droppable(s, drop):
                drop |= set(_load_counts(s, attributes)) & set(local)
        grown = len(drop) > before
    names = set(names) | (drop & set(local))
    while True:
        gone = [s for s in body if _droppable(s, drop)]
        reads = collections.Counter()
        for s in body:
            if not any(s is g for g in gone):
                reads += _load_counts(s, attributes)
        still = {n for n in drop if reads[n]}
        if not still:
            break
        drop -= still
    kept = [s for s in body if not _droppable(s, drop)]
    bound, read = set(), collections.Counter()
    for s in kept:
        bound |= stored_names(s)
        read += _load_counts(s, attributes)
    return kept or [ast.Pass()], {n for n in names if n in bound and not read[n]}


def _droppable(statement: ast.stmt, drop: set[str]) -> bool:
    if not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
        return False
    changed, other = _changes(statement)
    return bool(changed) and changed <= drop and not other


@dataclasses.dataclass
class Operand:
    """An expected side the slice computes: in test function ``function``, before its
    top-level statement ``top``."""
    function: str
    top: int
    source: str
    line: int


CHECK_PREFIXES = ("assert", "fail")


def _has_check(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, (ast.Assert, ast.Raise)):
            return True
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith(CHECK_PREFIXES) or name in ("raises", "approx", "skipTest", "skip"):
                return True
    return False


def slice_script(module: ast.Module, framework: str, scope: ModuleScope, taints: dict[str, FunctionTaint],
                 operands: list[Operand], report: str, import_line: str) -> str:
    """The test module as the slice runs it: no program names, no checks, each test function
    that has operands cut to its statements that touch no program, with a report of each
    operand before the statement it belongs to; other test functions left out."""
    by_function: dict[str, list[tuple[int, Operand]]] = collections.defaultdict(list)
    for k, op in enumerate(operands):
        by_function[op.function].append((k, op))

    def cut(fn: ast.FunctionDef, qualname: str) -> None:
        taint = taints[qualname]
        body: list[ast.stmt] = []
        for i, statement in enumerate(fn.body):
            for k, op in by_function[qualname]:
                if op.top == i:
                    call = ast.Call(ast.Name(report, ast.Load()), [ast.Constant(k), ast.parse(op.source, mode="eval").body], [])
                    body.append(ast.Expr(call))
            if not taint.touches[i] and not _has_check(statement):
                body.append(statement)
        fn.body = body or [ast.Pass()]
        # decorators stay (a patch changes what clean statements compute, in the slice as in the
        # test; one that cannot apply without the program fails the slice, and the test falls back)

    def clean_method(fn: ast.FunctionDef, cls: str) -> None:
        taint = scope.taint(fn, cls)
        fn.body = [s for i, s in enumerate(fn.body) if not taint.touches[i] and not _has_check(s)] or [ast.Pass()]

    body: list[ast.stmt] = []
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            members = []
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qualname = f"{node.name}.{m.name}"
                    if m.name.startswith("test"):
                        if qualname in by_function:
                            cut(m, qualname)
                            members.append(m)
                        continue
                    if m.name in ("setUp", "tearDown", "setUpClass", "tearDownClass"):
                        clean_method(m, node.name)
                members.append(m)
            node.body = members or [ast.Pass()]
            body.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if node.name in by_function:
                cut(node, node.name)
                body.append(node)
        elif program_module(node) or (isinstance(node, ast.If) and "__name__" in loaded_names(node.test)):
            continue
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) or not (loaded_names(node) - scope.clean - BUILTIN_NAMES - stored_names(node)):
            body.append(node)
    return import_line + ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))) + "\n"
