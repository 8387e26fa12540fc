"""Prompts as data: the paper's texts, overrides from a file, and clear errors."""

from __future__ import annotations

import re

import pytest

from codea1.harness.prompts import PromptError, get_prompt, load_prompts, question_text, render_chatml
from codea1.harness.records import Problem

PAPER = "../shared/seed/code-a1-paper.tex"


def test_the_built_in_prompts_are_the_papers():
    prompts = load_prompts()
    assert set(prompts) == {"code", "test-white-box", "test-black-box", "test-sft"}
    code = prompts["code"].messages(question="Q?")
    assert code == [{"role": "system", "content": "You are a helpful code completion assistant."},
                    {"role": "user", "content": "Given the following Question, complete the function. Output the "
                     "complete function inside ```python ... ``` code block, and do not output anything else.\n"
                     "Question:\nQ?"}]
    white = prompts["test-white-box"].messages(question="Q?", code="def f(): pass", k=8)[1]["content"]
    assert "Generate 8 assertion-based test cases to detect bugs for the function in `Buggy Code`" in white
    assert "Buggy Code:\n```python\ndef f(): pass\n```" in white
    assert white.endswith("Format: assert function_name(parameters) == answer")
    black = prompts["test-black-box"].messages(question="Q?", k=5)[1]["content"]
    assert "Buggy Code" not in black and "Generate 5 assertion-based test cases" in black
    sft = prompts["test-sft"].messages(question="Q?", code="x", k=8)[1]["content"]
    assert "split by \\n." in sft and sft.startswith("Given the following Question, generate 8 assert-based")


def test_the_texts_match_the_paper_source():
    """Every sentence of the built-in code and white-box prompts appears in the paper's LaTeX
    (after undoing its escapes), so an edit that drifts from the paper fails here."""
    from pathlib import Path

    from conftest import ROOT

    tex = (ROOT / PAPER)
    if not tex.exists():
        pytest.skip(f"{tex} not found")
    text = Path(tex).read_text()
    text = re.sub(r"\\verb\|(.*?)\|", r"\1", text)
    for old, new in (("\\newline", ""), ("\\{", "{"), ("\\}", "}"), ("\\_", "_"), ("\\#", "#")):
        text = text.replace(old, new)
    prompts = load_prompts()
    for name in ("code", "test-white-box", "test-sft"):
        for line in prompts[name].user.splitlines():
            line = line.replace("{code}", "").replace("{k}", "8").strip()
            if line and "{" not in line and line not in ("```python", "```"):
                assert line in text, (name, line)


def test_an_override_file_replaces_tables_it_names(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[code]\nsystem = ""\nuser = "Write {entry_point}:\\n{question}"\n')
    prompts = load_prompts(str(f))
    assert prompts["code"].messages(entry_point="f", question="Q") == [{"role": "user", "content": "Write f:\nQ"}]
    assert prompts["test-white-box"].source.endswith("paper.toml")


@pytest.mark.parametrize("body, message", [
    ('[code]\nuser = "{nope}"\n', r"p.toml: \[code\]: field 'user': unknown placeholder\(s\) \{nope\}"),
    ('[code]\nsystem = "x"\n', r"p.toml: \[code\]: field 'user' is missing"),
    ('[code]\nuser = "x"\ncolour = 1\n', r"p.toml: \[code\]: unknown field\(s\) colour"),
    ('[code]\nuser = "a { b"\n', r"p.toml: \[code\]: field 'user': .*literal brace"),
    ('[code\n', r"p.toml: not valid TOML"),
])
def test_bad_prompt_files_name_the_file_the_table_and_the_field(tmp_path, body, message):
    f = tmp_path / "p.toml"
    f.write_text(body)
    with pytest.raises(PromptError, match=message):
        load_prompts(str(f))


def test_unknown_prompt_names_suggest():
    with pytest.raises(PromptError, match=r"unknown prompt 'test-whitebox'; did you mean 'test-white-box'"):
        get_prompt("test-whitebox")


def test_question_gets_the_signature_when_the_prompt_is_prose():
    p = Problem(task_id="t", prompt="Add two numbers.", entry_point="add",
                reference="def add(a: int, b: int = 1) -> int:\n    return a + b\n")
    assert question_text(p) == "Add two numbers.\n\nFunction signature: def add(a: int, b: int=1) -> int:"
    q = Problem(task_id="t", prompt="def add(a, b):\n    '''Add.'''\n", entry_point="add", reference="")
    assert question_text(q) == q.prompt.rstrip()


def test_chatml_is_the_papers_format():
    assert render_chatml([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]) == \
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
