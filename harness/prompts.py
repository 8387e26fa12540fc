"""Prompts as data: the paper's texts live in ``harness/prompts/paper.toml``.

A prompt is a system and a user message with named placeholders ({question}, {code}, {k},
{entry_point}). ``load_prompts(override)`` reads the built-in table and, table by table, the
user's TOML file over it; ``Prompt.messages(...)`` fills one in. Chat templates are the
backend's business (the tokenizer's own template for hf and vllm, the server's for the
OpenAI chat API); ``render_chatml`` is the fallback for backends without one, and is the
format the paper prints.
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass
from pathlib import Path

import tomllib

from codea1.harness.errors import Codea1Error
from codea1.harness.records import Problem
from codea1.harness.verdicts.syntax import parse_untrusted

BUILTIN = Path(__file__).parent / "prompts" / "paper.toml"
PLACEHOLDERS = ("question", "code", "k", "entry_point")
# Which prompt a role uses unless --prompt names another.
DEFAULT_PROMPT = {"code": "code", "tests": "test-black-box", "tests-white-box": "test-white-box"}


class PromptError(Codea1Error):
    """A bad prompt file: the message names the file, the table and the field."""


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    description: str = ""
    source: str = ""  # the file it came from

    def fields(self) -> set[str]:
        return {f for text in (self.system, self.user) for _, f, _, _ in string.Formatter().parse(text) if f}

    def messages(self, **values) -> list[dict[str, str]]:
        missing = self.fields() - set(values)
        if missing:
            raise PromptError(f"prompt {self.name!r} ({self.source}) needs {', '.join(sorted(missing))}")
        out = []
        if self.system:
            out.append({"role": "system", "content": self.system.format(**values)})
        out.append({"role": "user", "content": self.user.format(**values)})
        return out


def _read(path: Path) -> dict[str, Prompt]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PromptError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"{path}: not valid TOML ({exc})") from None
    prompts = {}
    for name, table in data.items():
        where = f"{path}: [{name}]"
        if not isinstance(table, dict):
            raise PromptError(f"{where}: expected a table with 'system' and 'user'")
        unknown = set(table) - {"system", "user", "description"}
        if unknown:
            raise PromptError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (known: system, user, description)")
        if not isinstance(table.get("user"), str):
            raise PromptError(f"{where}: field 'user' is missing or not a string")
        for key in ("system", "user"):
            try:
                fields = {f for _, f, _, _ in string.Formatter().parse(table.get(key, "")) if f is not None}
            except ValueError as exc:
                raise PromptError(f"{where}: field {key!r}: {exc} (write a literal brace as {{{{ or }}}})") from None
            bad = fields - set(PLACEHOLDERS)
            if bad:
                raise PromptError(f"{where}: field {key!r}: unknown placeholder(s) "
                                  f"{', '.join('{' + b + '}' for b in sorted(bad))} (known: {', '.join(PLACEHOLDERS)})")
        prompts[name] = Prompt(name, table.get("system", ""), table["user"], table.get("description", ""), str(path))
    return prompts


def load_prompts(override: str | None = None) -> dict[str, Prompt]:
    prompts = _read(BUILTIN)
    if override:
        prompts.update(_read(Path(override)))
    return prompts


def get_prompt(name: str, override: str | None = None) -> Prompt:
    from codea1.harness.registry import did_you_mean

    prompts = load_prompts(override)
    if name not in prompts:
        raise PromptError(f"unknown prompt {name!r}{did_you_mean(name, prompts)}")
    return prompts[name]


def question_messages(prompt: Prompt | str, problem: Problem, k: int = 8, code: str | None = "") -> list[dict[str, str]]:
    """The chat messages of ``prompt`` (a Prompt or a name) for one question: its fields
    filled from the question, the number of asserts asked (``k``) and the code under test
    (white-box prompts). Generation, training and the evaluation during training share it."""
    prompt = get_prompt(prompt) if isinstance(prompt, str) else prompt
    values = {"question": question_text(problem), "k": k, "entry_point": problem.entry_point,
              "code": (code or "").strip("\n")}
    return prompt.messages(**{f: values[f] for f in prompt.fields()})


def question_text(problem: Problem) -> str:
    """The question as the model sees it: the benchmark's prompt, plus the function's
    signature when the prompt does not show it (UnLeakedTestBench and KodCode state the
    task in prose), so a model can name the function it writes or tests."""
    text = problem.prompt.rstrip()
    if f"def {problem.entry_point}(" in text:
        return text
    signature = signature_of(problem.reference, problem.entry_point)
    return f"{text}\n\nFunction signature: {signature}" if signature else text


def signature_of(source: str, name: str) -> str:
    try:
        tree = parse_untrusted(source)
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            args = ast.unparse(node.args)
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            return f"def {name}({args}){returns}:"
    return ""


def render_chatml(messages: list[dict[str, str]]) -> str:
    """The ChatML text the paper prints, ending with the assistant's turn opened."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n"


def chat_template_source(tokenizer) -> str:
    """Where a tokenizer's prompts get their chat format (for environment.json)."""
    return "tokenizer" if getattr(tokenizer, "chat_template", None) else "chatml (fallback)"


def chat_prompt(tokenizer, messages: list[dict[str, str]]) -> str:
    """The prompt text a local model sees: its tokenizer's chat template, ChatML without one."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return render_chatml(messages)
