"""Trainer ``sft``: supervised fine-tuning of one policy on (prompt, target) pairs built from
the benchmark's questions.

* ``role = "tests"`` (the paper's SFT of the Test LLM): the prompt is the paper's SFT prompt
  with the question and a candidate that fails the golden tests ("Buggy Code"); the target
  is the question's golden asserts (its first ``k`` call tests) in a python block. The
  candidates are mutants of the reference (``candidates = "mutants"``: the first mutant, in
  cosmic-ray's order, that a golden test kills) or the programs of a samples file
  (``candidates = PATH``: the first that fails). A question without a failing candidate or
  without golden asserts gives no pair.
* ``role = "code"`` (a warm start): the code prompt to the reference in a python block;
  with ``code_targets = "reference-and-mutant"`` also to the question's failing candidate
  (as above), so the policy writes the right program about half the time and a near miss
  otherwise: a start that reinforcement learning has something to choose from. With
  ``tests_prompt = NAME`` (e.g. test-black-box) the same policy also learns the golden
  asserts from that prompt, as role tests does: one model warm-started for both roles, as
  self-play needs (trained on tests alone it forgets the code).

One step: the pairs of the step's questions, one supervised update (mean token
cross-entropy of the targets).
"""

from __future__ import annotations

from dataclasses import dataclass

from codea1.harness.hookspecs import hookimpl
from codea1.harness.prompts import PromptError, get_prompt
from codea1.harness.records import PASS, ExecJob
from codea1.harness.training import Trainer
from codea1.harness.verdicts.execution import run_jobs
from codea1.harness.verdicts.expected import settle_expected_sources
from codea1.harness.verdicts.judge import judge
from codea1.trainers.method.log_columns import loss
from codea1.trainers.method.rollouts import prompt_messages, update_stats


@dataclass
class SFTOptions:
    role: str = "tests"
    k: int = 8
    prompt: str = ""  # default: test-sft for tests, code for code
    candidates: str = "mutants"
    max_mutants: int = 30
    code_targets: str = "reference"
    tests_prompt: str = ""  # role code: also the golden asserts from this prompt (one policy, both roles)

    def __post_init__(self):
        if self.role not in ("tests", "code"):
            raise ValueError(f"role must be 'tests' or 'code', not {self.role!r}")
        if self.code_targets not in ("reference", "reference-and-mutant"):
            raise ValueError(f"code_targets must be 'reference' or 'reference-and-mutant', not {self.code_targets!r}")
        if self.k < 1 or self.max_mutants < 1:
            raise ValueError("k and max_mutants must be at least 1")
        if self.tests_prompt and self.role != "code":
            raise ValueError("tests_prompt is for role 'code' (role 'tests' takes its prompt from 'prompt')")
        for name in filter(None, (self.prompt, self.tests_prompt)):
            try:  # a misspelt prompt fails with the config, not at the first step
                get_prompt(name)
            except PromptError as exc:
                raise ValueError(str(exc)) from None


class SFTTrainer(Trainer):
    name = "sft"
    description = "supervised fine-tuning: golden asserts for a failing candidate (tests), or the reference (code)"
    Options = SFTOptions
    ablation_keys = {"role": "", "code_targets": "", "tests_prompt": "", "candidates": "", "prompt": "", "k": ""}

    @classmethod
    def roles_for(cls, options):
        return ((options or SFTOptions()).role,)

    @classmethod
    def columns_for(cls, options):
        return (loss((options or SFTOptions()).role),)

    def __init__(self, options=None, *, context):
        super().__init__(options or SFTOptions(), context=context)
        self.candidates: dict[str, str | None] = {}
        self.samples = None

    def step(self, step, questions):
        o, ctx = self.options, self.context
        with ctx.phase("pairs", "pairs_s"):
            pairs = self.pairs(questions)
        if not pairs:
            return {"questions": [q.task_id for q in questions], "pairs": 0}
        with ctx.phase("update", "update_s"):
            stats = ctx.policies[o.role].supervised([p for p, _ in pairs], [t for _, t in pairs])
        return {"questions": [q.task_id for q in questions], "pairs": len(pairs), **update_stats(o.role, stats)}

    def pairs(self, questions) -> list[tuple[list[dict[str, str]], str]]:
        o = self.options
        if o.role == "tests":
            return self.test_pairs(questions, o.prompt or "test-sft")
        out = [(prompt_messages(o.prompt or "code", q), f"```python\n{q.reference.strip()}\n```") for q in questions]
        if o.code_targets == "reference-and-mutant":
            self._find_candidates(questions)
            out += [(prompt_messages(o.prompt or "code", q), f"```python\n{self.candidates[q.task_id].strip()}\n```")
                    for q in questions if self.candidates.get(q.task_id)]
        if o.tests_prompt:
            out += self.test_pairs(questions, o.tests_prompt)
        return out

    def test_pairs(self, questions, prompt: str) -> list[tuple[list[dict[str, str]], str]]:
        """Prompt ``prompt`` with a failing candidate -> the question's first k golden asserts."""
        self._find_candidates(questions)
        out = []
        for q in questions:
            asserts = [t.source for t in q.tests if t.kind == "call" and t.source][:self.options.k]
            candidate = self.candidates.get(q.task_id)
            if asserts and candidate:
                out.append((prompt_messages(prompt, q, k=len(asserts), code=candidate),
                            "```python\n" + "\n".join(asserts) + "\n```"))
        return out

    def _find_candidates(self, questions) -> None:
        """A failing candidate per question, judged against its golden tests in one batch."""
        todo = [q for q in questions if q.task_id not in self.candidates]
        if not todo:
            return
        options = {}
        if self.options.candidates == "mutants":
            from codea1.harness.mutation import generate_mutants

            for q in todo:
                options[q.task_id] = [m.code for m in generate_mutants(q.reference)[0][:self.options.max_mutants]]
        else:
            from codea1.harness.samples import load_samples

            if self.samples is None:
                self.samples = load_samples(self.options.candidates, self.context.run.all_problems,
                                            self.context.run.bench.sample_code)
            for q in todo:
                options[q.task_id] = [s.code for s in self.samples if s.task_id == q.task_id]
        bench = self.context.run.bench
        jobs = {}
        # Expected sides that are expressions: computed in jobs of their own (harness.verdicts.expected).
        todo = settle_expected_sources(self.context.run.executor, todo, memory_mb=bench.memory_mb)
        for q in todo:
            tests = [t for t in q.tests if t.kind == "call" and t.has_expected]
            for i, code in enumerate(options[q.task_id]):
                if tests:
                    jobs[f"{q.task_id}#{i}"] = (q, i, ExecJob(
                        job_id=f"{q.task_id}#{i}", code=code, tests=tests, entry_point=q.entry_point, prelude=q.prelude,
                        time_limits=[2.0] * len(tests), batch_timeout=10.0, memory_mb=bench.memory_mb))
        raws = run_jobs(self.context.run.executor, [j for _, _, j in jobs.values()])
        failing: dict[str, int] = {}
        for job_id, (q, i, job) in jobs.items():
            if judge(q.task_id, i, job, raws[job_id], bench.checker(q)).status != PASS:
                failing[q.task_id] = min(i, failing.get(q.task_id, i))
        for q in todo:
            self.candidates[q.task_id] = options[q.task_id][failing[q.task_id]] if q.task_id in failing else None


@hookimpl
def codea1_register_trainers(registry):
    registry.add(SFTTrainer)
