"""Putting the ground back: ``settle`` compares the interpreter with the ground that
``ground.build`` recorded in the zygote, puts back what differs, and says what differed.

The child calls it before each in-process script test (what the program changed while it
loaded, or in the tests before, is undone and not held against it) and right after the
framework returns (whatever differs then, the program changed during the test:
``ground.tampering`` decides which of it fails the test).

Everything ``settle`` and its helpers call is a default, bound when this module was imported
in the zygote, never looked up through module globals or builtins, which the program can
rebind; they compare by identity (``operator.is_``), so no method of the program's objects
runs. Only the standard library is imported here: it runs in the sandbox.
"""

from __future__ import annotations

import _thread
import builtins
import gc
import itertools
import operator
import os
import re
import signal
import sys
import types

from codea1.harness.sandbox.ground import FRAMEWORK_NAMES, FRAMEWORK_SUBMODULES, PLAIN

_MISSING = object()
_CELL_CONTENTS = types.CellType.__dict__["cell_contents"]
_FUNCTION_DICT = types.FunctionType.__dict__["__dict__"]


def _put_back(obj, name: str, value, label: str, changed, stuck, set_attribute=object.__setattr__,
              append=list.append, add=str.__add__, catch=Exception) -> None:
    """One attribute of an object of the ground's (its class, its dict) put back and named."""
    try:
        set_attribute(obj, name, value)
        append(changed, add(add(label, "."), name))
    except catch:
        append(stuck, add(add(label, "."), name))


def _settle_typed(group, changed, stuck, is_=operator.is_, map_=map, all_=all, zip_=zip, type_=type,
                  put_back=_put_back):
    """The class of each module and held object."""
    objects, kinds, labels = group
    if all_(map_(is_, map_(type_, objects), kinds)):
        return
    for obj, kind, label in zip_(objects, kinds, labels):
        if type_(obj) is not kind:
            put_back(obj, "__class__", kind, label, changed, stuck)


def _exact_str(value, type_=type, str_=str) -> bool:
    return type_(value) is str_


def _settle_dict(d, keys, values, label, owner, heap, rule, modules, changed, stuck, zip_=zip, map_=map,
                 all_=all, tuple_=tuple, type_=type, id_=id, frozenset_=frozenset, str_=str, get=dict.get,
                 put=dict.__setitem__, drop=dict.__delitem__, keys_of=dict.keys, set_attribute=type.__setattr__,
                 delete_attribute=type.__delattr__, append=list.append, add=str.__add__, starts=str.startswith,
                 ends=str.endswith, module_type=types.ModuleType, plain=PLAIN, names=frozenset(builtins.__dict__),
                 filter_=filter, filterfalse=itertools.filterfalse, is_str=_exact_str, missing=_MISSING,
                 repeat=itertools.repeat, compress=itertools.compress, is_=operator.is_, is_not=operator.is_not,
                 len_=len, catch=Exception) -> bool:
    """One dict of the ground put back, as its rule says: (mode, keys left alone, keys put back
    without holding them against the program). Modes (see _Ground): 0 strict, everything put
    back and held against the program; 1 a module's dict and 2 a class's or a function's
    attributes outside the frameworks, where only code counts (a function, class or object
    replaced; a dunder, or in a module a builtin's name, added); 3 a registry outside the
    frameworks, which may grow; 4 put back, never held against the program. True when a
    class's dict was written directly (the type cache must then be cleared)."""
    mode, ignored, quiet = rule
    flush = False
    # replaced or removed: the entries whose value is not the ground's, found at C speed
    now = tuple_(map_(get, repeat(d), keys, repeat(missing)))
    for k, v in compress(zip_(keys, values), map_(is_not, now, values)):
        if type_(k) is str_ and k in ignored:
            continue
        if (mode == 1 or mode == 2) and (type_(v) in plain or (
                type_(v) is tuple_ and all_(map_(plain.__contains__, map_(type_, v))))):
            continue  # data (a setting, a cache made on first use): the program's and the tests' to change
        try:
            if owner is None or not heap:
                raise TypeError
            set_attribute(owner, k, v)
        except catch:
            put(d, k, v)
            flush = flush or owner is not None
        if mode <= 2 and not (type_(k) is str_ and k in quiet):
            append(changed, add(add(label, "."), k) if type_(k) is str_ else add(label, "[...]"))
    if mode == 3:
        return flush  # what was added to a registry (a library's codec, reducer, overload) stays
    # The keys it had: strings by value (hashing an exact str runs no code of anyone's: a
    # different string object of the same text is the same name), others by identity.
    names_then = frozenset_(filter_(is_str, keys))
    others_then = None
    added = tuple_(keys_of(d))
    if len_(added) >= len_(keys) and all_(map_(is_, added, keys)):
        added = added[len_(keys):]  # the ground's keys first, in order: what came after is new
    for k in added:
        if type_(k) is str_:
            if k in names_then or k in ignored:
                continue
        else:
            if others_then is None:
                others_then = frozenset_(map_(id_, filterfalse(is_str, keys)))
            if id_(k) in others_then:
                continue
        # (modes 1, 2) A new name is the module's or the class's own (a global made on first
        # use), unless it is a dunder (__getattr__, __eq__) or, in a module, shadows a builtin.
        if (mode == 1 or mode == 2) and type_(k) is str_ and not (starts(k, "__") and ends(k, "__")) \
                and not (mode == 1 and k in names):
            continue
        v = get(d, k, None)
        if owner is None and type_(k) is str_ and type_(v) is module_type \
                and get(modules, add(add(label, "."), k)) is v:
            continue  # a submodule imported since: its package holds it
        try:
            if owner is None or not heap:
                raise TypeError
            delete_attribute(owner, k)
        except catch:
            try:
                drop(d, k)
                flush = flush or owner is not None
            except catch:
                append(stuck, add(label, "[...]"))
        if mode <= 2 and not (type_(k) is str_ and k in quiet):
            append(changed, add(add(label, "."), k) if type_(k) is str_ else add(label, "[...]"))
    return flush


def _settle_dicts(group, modules, changed, stuck, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple,
                  range_=range, chain=itertools.chain.from_iterable, keys_of=dict.keys, values_of=dict.values,
                  settle_dict=_settle_dict, clear_type_cache=sys._clear_type_cache):
    """Module dicts, class dicts, function attributes, registries that are dicts: compared all
    at once; where they differ, chunk by chunk, then dict by dict."""
    dicts, lens, busy, keys_flat, values_flat, keys_per, values_per, labels, owners, heap, rules, chunks = group
    current = tuple_(map_(len_, dicts))
    if current == lens and all_(map_(is_, chain(map_(keys_of, busy)), keys_flat)) \
            and all_(map_(is_, chain(map_(values_of, busy)), values_flat)):
        return
    flush = False
    for start, end in chunks:
        if current[start:end] == lens[start:end] \
                and all_(map_(is_, chain(map_(keys_of, dicts[start:end])), chain(keys_per[start:end]))) \
                and all_(map_(is_, chain(map_(values_of, dicts[start:end])), chain(values_per[start:end]))):
            continue
        for j in range_(start, end):
            d = dicts[j]
            if current[j] == lens[j] and all_(map_(is_, keys_of(d), keys_per[j])) \
                    and all_(map_(is_, values_of(d), values_per[j])):
                continue
            flush = settle_dict(d, keys_per[j], values_per[j], labels[j], owners[j], heap[j], rules[j], modules,
                                changed, stuck) or flush
    if flush:
        clear_type_cache()


def _settle_containers(lists, sets, changed, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple,
                       zip_=zip, id_=id, frozenset_=frozenset, chain=itertools.chain.from_iterable,
                       assign=list.__setitem__, everything=slice(None), clear=set.clear, update=set.update,
                       append=list.append):
    """Registries that are lists or sets (modes as in _settle_dict: a registry outside the
    frameworks may grow, its first items kept)."""
    objects, lens, flat, per, labels, modes = lists
    if not (tuple_(map_(len_, objects)) == lens and all_(map_(is_, chain(objects), flat))):
        for lst, items, label, mode in zip_(objects, per, labels, modes):
            if len_(lst) == len_(items) and all_(map_(is_, lst, items)):
                continue
            if mode == 3 and len_(lst) > len_(items) and all_(map_(is_, lst, items)):
                continue  # appended to
            assign(lst, everything, items)
            if mode == 0:
                append(changed, label)
    objects, lens, flat, per, labels, modes = sets
    if not (tuple_(map_(len_, objects)) == lens and all_(map_(is_, chain(objects), flat))):
        for s, items, label, mode in zip_(objects, per, labels, modes):
            now, then = frozenset_(map_(id_, s)), frozenset_(map_(id_, items))
            if now == then or (mode == 3 and then <= now):
                continue
            clear(s)
            update(s, items)
            if mode == 0:
                append(changed, label)


def _settle_attributes(bases, cells, functions, changed, stuck, is_=operator.is_, map_=map, all_=all, zip_=zip,
                       get_bases=type.__dict__["__bases__"].__get__, set_attribute=type.__setattr__,
                       get_cell=_CELL_CONTENTS.__get__, set_cell=_CELL_CONTENTS.__set__,
                       get_dict=_FUNCTION_DICT.__get__, set_dict=_FUNCTION_DICT.__set__, append=list.append,
                       missing=_MISSING, catch=Exception):
    """Classes' bases, closure cells, which dict a function's attributes are in."""
    objects, values, labels = bases
    if not all_(map_(is_, map_(get_bases, objects), values)):
        for cls, value, label in zip_(objects, values, labels):
            if get_bases(cls) is not value:
                try:
                    set_attribute(cls, "__bases__", value)
                    append(changed, label)
                except catch:
                    append(stuck, label)
    objects, values, labels = cells
    try:
        same = all_(map_(is_, map_(get_cell, objects), values))
    except catch:  # a cell emptied
        same = False
    if not same:
        for cell, value, label in zip_(objects, values, labels):
            try:
                current = get_cell(cell)
            except catch:
                current = missing
            if current is not value:
                set_cell(cell, value)
                append(changed, label)
    objects, values, labels = functions
    if not all_(map_(is_, map_(get_dict, objects), values)):
        for fn, value, label in zip_(objects, values, labels):
            if get_dict(fn) is not value:
                set_dict(fn, value)
                append(changed, label)


def _settle_held(group, changed, stuck, is_=operator.is_, map_=map, all_=all, len_=len, tuple_=tuple, zip_=zip,
                 type_=type, str_=str, callable_=callable, isinstance_=isinstance, module_type=types.ModuleType,
                 get=dict.get, put=dict.__setitem__, drop=dict.__delitem__, keys_of=dict.keys,
                 dict_of=operator.attrgetter("__dict__"), put_back=_put_back, append=list.append, add=str.__add__):
    """The callables of the objects modules and classes hold (``sys.stdout.write``,
    ``os.environ.encodekey``): which dict their attributes are in, the callables in it, and no
    callable added. Their data (a logger's level) is the program's and the tests' to set."""
    objects, dicts, lens, keysets, labels, triple_dicts, triple_keys, triple_values, triple_labels = group
    if not all_(map_(is_, map_(dict_of, objects), dicts)):
        for obj, d, label in zip_(objects, dicts, labels):
            if dict_of(obj) is not d:
                put_back(obj, "__dict__", d, label, changed, stuck)
    if not all_(map_(is_, map_(get, triple_dicts, triple_keys), triple_values)):
        for d, k, v, label in zip_(triple_dicts, triple_keys, triple_values, triple_labels):
            if get(d, k) is not v:
                put(d, k, v)
                append(changed, label)
    if tuple_(map_(len_, dicts)) != lens:
        for d, n, keyset, label in zip_(dicts, lens, keysets, labels):
            if len_(d) == n:
                continue
            for k in tuple_(keys_of(d)):
                if type_(k) is str_ and k in keyset:
                    continue
                v = get(d, k)
                if callable_(v) or isinstance_(v, module_type):
                    drop(d, k)
                    append(changed, add(add(label, "."), k) if type_(k) is str_ else label)


def _settle_interpreter(module, modules, interpreter, changed, stuck, is_=operator.is_, map_=map, all_=all,
                        len_=len, tuple_=tuple, zip_=zip, type_=type, str_=str, dict_=dict, frozenset_=frozenset,
                        repeat=itertools.repeat, get=dict.get, put=dict.__setitem__, drop=dict.__delitem__,
                        keys_of=dict.keys, values_of=dict.values, starts=str.startswith, add=str.__add__,
                        append=list.append, module_type=types.ModuleType, set_attribute=object.__setattr__,
                        get_attribute=object.__getattribute__, pristine_builtins=builtins.__dict__,
                        builtins_module=builtins, getsignal=signal.getsignal, set_signal=signal.signal,
                        sigmask=signal.pthread_sigmask, block=signal.SIG_BLOCK, setmask=signal.SIG_SETMASK,
                        getitimer=signal.getitimer, setitimer=signal.setitimer,
                        timers=(signal.ITIMER_VIRTUAL, signal.ITIMER_PROF), get_hooks=sys.get_asyncgen_hooks,
                        set_hooks=sys.set_asyncgen_hooks, gettrace=sys.gettrace, getprofile=sys.getprofile,
                        thread_count=_thread._count, current_frames=sys._current_frames, environ=os.environ,
                        framework_names=FRAMEWORK_NAMES, framework_submodules=FRAMEWORK_SUBMODULES,
                        id_=id, catch=Exception) -> str:
    """sys.modules, every module's own ``__builtins__``, signal handlers and timers, the signal
    mask, async generator hooks, pytest's environment variables. Returns why no test can run
    now ("the program left threads running": they could change the test or the runner while
    it runs; native threads that run no Python, such as OpenBLAS' pool, are not counted)."""
    sysmods, names, mods, known, libraries, _held = modules
    if not all_(map_(is_, map_(get, repeat(sysmods), names), mods)):
        for name, m in zip_(names, mods):
            if get(sysmods, name) is not m:
                put(sysmods, name, m)
                append(changed, add(add("sys.modules[", name), "]"))
    for name in tuple_(keys_of(sysmods)):  # a framework module no warm-up imported: imported afresh, from its file
        if type_(name) is str_ and (name in framework_names or starts(name, framework_submodules)) \
                and name not in known:
            drop(sysmods, name)
    if module is not None:
        put(sysmods, "solution", module)
        if type_(module) is not module_type:
            set_attribute(module, "__class__", module_type)
    for m in tuple_(values_of(sysmods)):  # a module's own builtins (its __import__, __build_class__)
        if id_(m) in libraries:  # imported by the zygote after the ground: no more held than a program's import
            continue
        try:
            namespace = get_attribute(m, "__dict__")
            if type_(namespace) is dict_:
                found = get(namespace, "__builtins__", None)
                if found is not None and found is not pristine_builtins and found is not builtins_module:
                    put(namespace, "__builtins__", pristine_builtins)
        except catch:  # an object the program put in sys.modules: nothing to put back
            pass
    signums, handlers, mask, hooks = interpreter
    if not all_(map_(is_, map_(getsignal, signums), handlers)):
        for signum, handler in zip_(signums, handlers):
            if getsignal(signum) is not handler:
                try:
                    set_signal(signum, handler)
                except catch:
                    append(stuck, "a signal handler")
    for timer in timers:
        if getitimer(timer) != (0.0, 0.0):
            setitimer(timer, 0)
    if frozenset_(sigmask(block, ())) != mask:
        sigmask(setmask, mask)
    if not all_(map_(is_, get_hooks(), hooks)):
        set_hooks(*hooks)
    if gettrace() is not None or getprofile() is not None:
        append(stuck, "a trace or profile function")
    for name in tuple_(environ):
        if type_(name) is str_ and starts(name, "PYTEST_"):
            try:
                del environ[name]
            except catch:
                pass
    if thread_count() > 0 or len_(current_frames()) > 1:
        return "the program left threads running"
    return ""


# The code that may list other threads' frames in a child with script tests (to count them:
# ground.audit refuses it to any other caller).
THREAD_COUNTERS = frozenset((_settle_interpreter.__code__,))


def _same_source(key, pattern, type_=type, issubclass_=issubclass, str_=str, bytes_=bytes, str_eq=str.__eq__,
                 bytes_eq=bytes.__eq__) -> bool:
    """The text a cached pattern was compiled from is its key's. Keys may be subclasses of str
    (lxml's _ElementUnicodeResult): compared as str, by the type's slot, so no method of the
    program's runs; a subclass key is filed under its own type, never found by a plain str."""
    if issubclass_(type_(key), str_) and issubclass_(type_(pattern), str_):
        return str_eq(key, pattern) is True
    if issubclass_(type_(key), bytes_) and issubclass_(type_(pattern), bytes_):
        return bytes_eq(key, pattern) is True
    return False


def _inline_flags(key, issubclass_=issubclass, type_=type, str_=str, str_has=str.__contains__,
                  bytes_has=bytes.__contains__) -> bool:
    return str_has(key, "(?") if issubclass_(type_(key), str_) else bytes_has(key, b"(?")


def _settle_patterns(g_patterns, changed, tuple_=tuple, type_=type, len_=len, items=dict.items, id_=id,
                     pattern_type=re.Pattern, unicode=int(re.UNICODE), append=list.append, same_source=_same_source,
                     inline_flags=_inline_flags, str_=str, bytes_=bytes, compile_=re._compiler.compile,
                     pattern_eq=re.Pattern.__eq__, catch=Exception):
    """re's caches of compiled patterns (put back quietly: tests fill them) hold no pattern
    but the one its key compiles to: a program that slipped one in (so that a ``match=``
    check matches anything) changed the test framework. The text and flags a pattern says it
    has are not enough (``_sre.compile`` takes text and code apart): each pattern not in the
    caches as the zygote recorded them is compiled again from its key, bypassing the cache,
    and compared with the cached one as re compares patterns (flags, text and compiled code)."""
    caches, recorded, _alive = g_patterns  # _alive: the recorded patterns, held so their ids stay theirs
    for cache in caches:
        for key, value in tuple_(items(cache)):
            if id_(value) in recorded:
                continue
            if not (type_(key) is tuple_ and len_(key) == 3 and type_(value) is pattern_type
                    and type_(key[2]) is int and key[0] is type_(key[1]) and same_source(key[1], value.pattern)
                    and (not (value.flags & ~(key[2] | unicode)) or inline_flags(key[1]))):
                append(changed, "re._cache")
                return
            if type_(key[1]) is not str_ and type_(key[1]) is not bytes_:
                # a str subclass's key (lxml's text) is found only by a lookup with that same
                # type, never by a test's literal pattern: its source and flags suffice, and
                # comparing patterns would call the subclass's __eq__
                continue
            if type_(value.pattern) is not type_(key[1]):
                append(changed, "re._cache")
                return
            try:
                fresh = compile_(key[1], key[2])
            except catch:
                append(changed, "re._cache")
                return
            if pattern_eq(fresh, value) is not True:
                append(changed, "re._cache")
                return


def settle(module, after=False, _ground=None, typed=_settle_typed, dicts=_settle_dicts,
            containers=_settle_containers, attributes=_settle_attributes, held=_settle_held,
            interpreter=_settle_interpreter, patterns=_settle_patterns, gc_off=gc.disable):
    """Puts the ground back (see above). Returns (changed, stuck, threads): what differed from
    it (the volatile aside), what could not be put back, and why no test can run now. With
    ``after`` (right after a framework returned) the gc stays off until the caller has sent its
    record: no finalizer of the program runs between the check and the record."""
    if after:
        gc_off()
    changed, stuck = [], []
    (g_typed, g_dicts, g_lists, g_sets, g_bases, g_cells, g_functions, g_held, g_modules, g_interpreter,
     g_patterns) = _ground
    patterns(g_patterns, changed)  # first: putting the registries back empties them quietly
    typed(g_typed, changed, stuck)
    dicts(g_dicts, g_modules[0], changed, stuck)
    containers(g_lists, g_sets, changed)
    attributes(g_bases, g_cells, g_functions, changed, stuck)
    held(g_held, changed, stuck)
    threads = interpreter(module, g_modules, g_interpreter, changed, stuck)
    return changed, stuck, threads


def stand_on(recorded: tuple) -> None:
    """Makes ``recorded`` (``ground.build``'s first value) the ground ``settle`` puts back."""
    settle.__defaults__ = (False, recorded, *settle.__defaults__[2:])
