"""Generator ``replay``: answers from generations saved earlier; no model.

Re-scores saved responses: reparse them with other rules, or write them out for another
role's flow, without loading a model. ``file`` is a samples.jsonl or tests.jsonl that
``codea1 generate`` wrote (or any JSON Lines file with ``task_id`` and the response in
``field``, default ``raw``; rows without it fall back to ``solution``, ``completion`` or a
``tests`` list). Sample i of a task is the task's i-th row (its ``index`` field when rows
carry one); white-box rows are matched on ``code_index`` too. Asking for a sample the file
does not hold is an error naming the file and the task, never a silent gap.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

from codea1.harness.generation import (
    Generation,
    GenerationError,
    GenerationRequest,
    Generator,
)
from codea1.harness.hookspecs import hookimpl
from codea1.harness.jsonl import json_rows


@dataclass
class ReplayOptions:
    file: str = ""
    field: str = "raw"


class ReplayGenerator(Generator):
    name = "replay"
    description = "replays saved generations (samples.jsonl / tests.jsonl): re-score without a model"
    Options = ReplayOptions

    def __init__(self, options: ReplayOptions | None = None, **kwargs):
        super().__init__(options or ReplayOptions(), **kwargs)
        path = self.options.file or self.model
        if not path:
            raise GenerationError("generator 'replay' needs the saved generations: --generator-opt file=PATH "
                                  "(or --model PATH)")
        self.path = path
        self.responses = self._read(path)

    def _read(self, path: str) -> dict[tuple[str, int | None], dict[int, str]]:
        out: dict[tuple[str, int | None], dict[int, str]] = defaultdict(dict)
        for where, row in json_rows(path, GenerationError, label="replay file "):
            if not isinstance(row.get("task_id"), str):
                raise GenerationError(f"{where}: field 'task_id' is missing or not a string")
            text = row.get(self.options.field)
            if text is None:
                text = row.get("solution", row.get("completion"))
            if text is None and isinstance(row.get("tests"), list):
                text = "```python\n" + "\n".join(map(str, row["tests"])) + "\n```"
            if not isinstance(text, str):
                raise GenerationError(f"{where}: no response: field {self.options.field!r} (or solution, "
                                      f"completion, tests) is missing")
            key = (row["task_id"], row.get("code_index"))
            index = row.get("index", len(out[key]))
            if not isinstance(index, int) or index in out[key]:
                raise GenerationError(f"{where}: field 'index': {index!r} is not a new sample number for "
                                      f"{row['task_id']}")
            out[key][index] = text
        return out

    def generate(self, requests: list[GenerationRequest]) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
        for req in requests:
            saved = self.responses.get((req.task_id, req.code_index), {})
            missing = [i for i in req.indices if i not in saved]
            if missing:
                what = req.task_id if req.code_index is None else f"{req.task_id} (code {req.code_index})"
                raise GenerationError(f"replay file {self.path} holds {len(saved)} sample(s) of {what}; "
                                      f"sample {missing[0]} was asked for (lower --n?)")
            yield req, [Generation(saved[i], finish_reason="replayed") for i in req.indices]

    def info(self) -> dict:
        return {"name": self.name, "file": self.path}


@hookimpl
def codea1_register_generators(registry):
    registry.add(ReplayGenerator)
