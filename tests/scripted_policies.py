"""Policies that answer from a script, for real trainer steps in tests: every prompt gets the
given texts (n of them, in order), step after step, and every update is recorded."""

from __future__ import annotations

from types import SimpleNamespace

from codea1.harness.generation import SamplingParams
from codea1.harness.training import PolicyBackend, PolicySample, TrainContext


class ScriptedPolicy(PolicyBackend):
    """Answers every prompt with ``texts`` (or, given a list of lists, with the next list at
    each call: one per step) and records each update's samples and rewards."""

    name = "scripted"

    def __init__(self, texts: list):
        super().__init__()
        self.script = texts if texts and isinstance(texts[0], list) else [texts]
        self.calls = 0
        self.updates: list[tuple[list[str], list[float]]] = []

    @property
    def texts(self) -> list[str]:
        return self.script[min(self.calls, len(self.script) - 1)]

    def generate(self, prompts, n, sampling, seed):
        texts = self.texts
        self.calls += 1
        assert n == len(texts)
        return [[PolicySample(text=t) for t in texts] for _ in prompts]

    def update(self, samples, rewards, advantages):
        self.updates.append(([s.text for s in samples], list(rewards)))
        return {}


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def scripted_context(plugins, bench, executor, code: ScriptedPolicy, tests: ScriptedPolicy, out) -> TrainContext:
    """A trainer's context with the two scripted policies, the benchmark and the executor."""
    return TrainContext(plugins=plugins, run=SimpleNamespace(bench=bench, executor=executor),
                        policies={"code": code, "tests": tests},
                        sampling={"code": SamplingParams(), "tests": SamplingParams()}, seed=0, out=out)
