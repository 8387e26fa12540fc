"""Running a script test's slice (``harness.verdicts.slices``): the job, its values, the
settled test, and the disk cache.

The slice runs twice in one sandbox job with no program in it: the job's code is the
test's context (a BigCodeBench task's imports and constants), its tests the slice script
twice. Each operand must report exactly one value in each run, the same both times; then
the rewritten test gets those values as its expected sides. Otherwise (an operand raised,
was not reached, differed between the runs, the job timed out or the sandbox failed) the
test falls back to its original script, judged in-process, as it would have been without
the rewrite: a slice never fails a program.

Outcomes that are a function of the slice alone (values, or runs that disagree) are cached
under the cache folder's ``slices/``, keyed by the slice, its context and the sandbox's
environment (``reference.sandbox_environment``); timeouts and sandbox errors are not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import marshal

from codea1.harness.records import ExecJob, RawResult, TestCase

CACHE_VERSION = "1"


def slice_job(job_id: str, test: TestCase, *, memory_mb: int, time_limit: float) -> ExecJob:
    table = test.expected
    functions = table["slice"]["functions"]
    sites = [{"op": "==", "expected": None, "tolerance": None, "function": f, "line": 0, "required": False}
             for f in functions]
    probe = TestCase(id=f"{test.id}/slice", kind="script", script=test.expected_source, framework=test.framework,
                     judged="parent", expected={"functions": sorted(set(functions)), "sites": sites})
    tests = [probe, dataclasses.replace(probe, id=f"{test.id}/slice-again")]
    return ExecJob(job_id=job_id, code=table["slice"]["context"], tests=tests, entry_point=None, prelude="",
                   time_limits=[time_limit, time_limit], batch_timeout=2 * time_limit + 10, memory_mb=memory_mb,
                   fail_fast=False)


def slice_values(test: TestCase, raw: RawResult) -> dict:
    """``{"values": [tree per operand]}``, or ``{"why": ...}`` (with ``"cache": False`` when
    the outcome may differ next time: a timeout, a sandbox error); kept in the cache unless
    marked so."""
    values = _values(test, raw)
    if values.get("cache", True):
        _store(test, values)
    return values


def _values(test: TestCase, raw: RawResult) -> dict:
    n = len(test.expected["slice"]["functions"])
    if raw.sandbox_error:
        return {"why": f"sandbox error: {raw.sandbox_error}", "cache": False}
    if raw.load_error:
        return {"why": f"the context did not load: {raw.load_error}"}
    runs = []
    for outcome in raw.outcomes[:2]:
        if outcome.status != "reports":
            return {"why": f"the slice ended {outcome.status}: {outcome.message or raw.exit}"[:300],
                    "cache": outcome.status not in ("timeout", "sandbox_error")}
        values: dict[int, list] = {}
        for entry in outcome.value["r"]:
            values.setdefault(entry[0], []).append(entry)
        runs.append(values)
    if len(runs) != 2:
        return {"why": "the slice did not run twice", "cache": False}
    out = []
    for k in range(n):
        first, second = runs[0].get(k, []), runs[1].get(k, [])
        if len(first) != 1 or len(second) != 1:
            return {"why": f"operand {k} reported {len(first)} and {len(second)} times"}
        if first[0][1] != "v":
            return {"why": f"operand {k}: {first[0][2] if len(first[0]) > 2 else first[0][1]}"[:300]}
        if second[0][1] != "v" or _dump(first[0][2]) != _dump(second[0][2]):
            return {"why": f"operand {k} differs between two runs"}
        if _opaque(first[0][2]):
            return {"why": f"operand {k} is not plain data"}
        out.append(first[0][2])
    return {"values": out}


def _opaque(tree) -> bool:
    """Whether a plaindata tree holds an object that is not plain data (``{"o": ...}``): the
    parent could not compare it as the test would."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            if "o" in node and len(node) == 1:
                return True
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return False


def _dump(tree) -> bytes | None:
    try:
        return marshal.dumps(tree)
    except ValueError:
        return None


def settled(test: TestCase, values: dict) -> TestCase:
    """The test with its computed expected sides filled in, or its fallback (in-process)."""
    if "values" in values:
        table = dict(test.expected)
        table["sites"] = [_filled(site, values["values"]) for site in table["sites"]]
        table["slice"] = {k: v for k, v in table["slice"].items() if k != "fallback"}
        return dataclasses.replace(test, expected=table, expected_source=None)
    return TestCase(id=test.id, kind="script", script=test.expected["slice"]["fallback"], framework=test.framework,
                    source=test.source)


def _filled(site: dict, values: list) -> dict:
    site = dict(site)
    if "computed" in site:
        site["expected"] = values[site["computed"]]
    if site.get("computed_in"):
        site["values"] = list(site["values"])
        for position, k in site["computed_in"]:
            site["values"][position] = values[k]
    return site


def _path(test: TestCase):
    from codea1.harness.verdicts.reference import cache_dir, sandbox_environment

    digest = hashlib.sha256()
    for part in (CACHE_VERSION, sandbox_environment(), test.framework or "", test.expected["slice"]["context"],
                 test.expected_source):
        digest.update(part.encode())
        digest.update(b"\0")
    return cache_dir() / "slices" / f"{digest.hexdigest()}.json"


def cached(test: TestCase) -> dict | None:
    try:
        data = json.loads(_path(test).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and ("values" in data or "why" in data) else None


def _store(test: TestCase, values: dict) -> None:
    from codea1.harness.verdicts.reference import atomic_write

    path = _path(test)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(values))
    except (OSError, ValueError, TypeError):
        pass  # a read-only cache, or a value JSON cannot hold: computed again next time
