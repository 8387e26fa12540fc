"""Reading samples files in evalplus' formats.

* JSON Lines: one object per line with ``task_id`` and either ``solution`` (a whole
  program) or ``completion`` (continues the task prompt). Several lines per task are
  several samples, numbered in file order.
* A directory as evalplus writes it: ``DIR/<task id, '/' replaced by '_'>/<n>.py``.

Errors name the file, the line and the field.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections import defaultdict
from pathlib import Path
from typing import Callable

from codea1.harness.errors import Codea1Error
from codea1.harness.jsonl import json_rows
from codea1.harness.records import CodeSample, Problem


class SamplesError(Codea1Error):
    pass


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def load_samples(path: str, problems: dict[str, Problem], code_of: Callable[[Problem, dict], str]) -> list[CodeSample]:
    """Samples in file order; ``code_of(problem, record)`` builds the program to run."""
    if not os.path.exists(path):
        raise SamplesError(f"{path}: no such samples file or directory")
    counts: dict[str, int] = defaultdict(int)
    out = []
    for where, record in _records(path):
        task_id = record.get("task_id")
        if not isinstance(task_id, str):
            raise SamplesError(f"{where}: field 'task_id' is missing or not a string")
        if task_id not in problems:
            near = difflib.get_close_matches(task_id, list(problems), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise SamplesError(f"{where}: field 'task_id': {task_id!r} is not a task of this benchmark{hint}")
        if "solution" in record and "completion" in record:
            raise SamplesError(f"{where}: both fields 'solution' and 'completion': keep the one that holds the "
                               f"program (a whole program: solution; what continues the prompt: completion)")
        if not isinstance(record.get("solution", record.get("completion")), str):
            raise SamplesError(f"{where}: needs a string field 'solution' or 'completion'")
        out.append(CodeSample(task_id=task_id, index=counts[task_id], code=code_of(problems[task_id], record),
                              source=where))
        counts[task_id] += 1
    if not out:
        raise SamplesError(f"{path}: no samples")
    return out


def _records(path: str):
    p = Path(path)
    if p.is_dir():
        for task_dir in sorted(x for x in p.iterdir() if x.is_dir()):
            files = sorted(task_dir.glob("*.py"), key=lambda f: (len(f.stem), f.stem))
            for f in files:
                task_id = task_dir.name.replace("_", "/", 1) if "/" not in task_dir.name else task_dir.name
                yield str(f), {"task_id": task_id, "solution": f.read_text()}
        return
    yield from json_rows(path, SamplesError, what="a sample")
