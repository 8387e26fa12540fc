"""The `codea1 generate` flow: generators listed, prompts chosen by role and overridable,
white-box suites per candidate code, replay, tests.jsonl scored by evaluate-tests, and
clear errors. The model side is a real local OpenAI-compatible server or saved responses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT
from openai_server import OpenAIServer

from codea1.benchmarks.demo.problems import PROBLEMS
from codea1.harness.cli import main
from codea1.harness.flows.generate import GenerateConfig, generate
from codea1.harness.verdicts.asserts import AssertParseError, parse_assert

pytest.importorskip("openai", reason="the openai client is not installed (pip install 'codea1[openai]')")
TESTS_OF = {p["entry_point"]: p["tests"] for p in PROBLEMS}


def in_paper_form(source: str, entry_point: str) -> bool:
    try:
        parse_assert(source, entry_point)
        return True
    except AssertParseError:
        return False


def golden_asserts(prompt: str, choice: int, seed) -> str:
    """A test writer that answers with the demo task's golden asserts (choice 1: reversed)."""
    for name, tests in TESTS_OF.items():
        if f"def {name}(" in prompt:
            tests = tests if choice == 0 else tests[::-1]
            return "Tests:\n```python\n" + "\n".join(tests) + "\n```"
    return "no idea"


def test_plugins_lists_the_four_generators():
    out = subprocess.run([sys.executable, "-m", "codea1", "plugins", "--json"], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    names = {r["name"] for r in json.loads(out.stdout) if r["kind"] == "generator"}
    assert {"hf", "vllm", "openai", "replay"} <= names


def cfg(tmp_path, server, **kw):
    base = dict(benchmark="demo", role="tests", generator="openai", out=str(tmp_path / "gen"), model="m", n=1,
                limit=2, cache=False, progress=False,
                generator_options={"base_url": server.base_url, "concurrency": "1"})
    return GenerateConfig(**{**base, **kw})


def test_black_box_tests_use_the_question_only_and_score_in_evaluate_tests(plugins, tmp_path):
    with OpenAIServer(answer=golden_asserts) as srv:
        result = generate(plugins, cfg(tmp_path, srv, n=2, k=3, limit=None))
        user = srv.bodies[0]["messages"][1]["content"]
    assert "Generate 3 assertion-based test cases" in user and "Buggy Code" not in user
    found = 2 * sum(len(t) for t in TESTS_OF.values())  # every golden assert, twice (n=2)
    kept = 2 * sum(min(3, len(t)) for t in TESTS_OF.values())
    # The demo's own asserts are not all in the paper's form (`is True`, `!=`): those are not
    # usable generated tests.
    in_form = sum(in_paper_form(a, name) for name, t in TESTS_OF.items() for a in t[:3])
    in_form += sum(in_paper_form(a, name) for name, t in TESTS_OF.items() for a in t[::-1][:3])
    assert result["parsing"] == {"suites": 24, "requested": 72, "found": found, "kept": kept, "parsed": in_form,
                                 "unique": in_form, "missing": 72 - kept}
    rows = [json.loads(line) for line in (tmp_path / "gen" / "tests.jsonl").open()]
    first = next(r for r in rows if r["task_id"] == "demo/0" and r["index"] == 0)
    assert first["tests"] == TESTS_OF["digit_sum"][:3]
    assert first["parse"]["rejected"][0]["reason"] == "beyond the 3 asserts requested"
    # suite 1 of each task (its golden asserts reversed) through evaluate-tests: all valid
    out = tmp_path / "scored"
    assert main(["evaluate-tests", "--benchmark", "demo", "--tests", str(tmp_path / "gen" / "tests.jsonl"),
                 "--suite", "1", "--k", "1,3", "--no-coverage", "--no-progress", "--out", str(out)]) == 0
    scored = json.loads((out / "results.json").read_text())
    reversed_firsts = [(name, t[::-1][:3]) for name, t in TESTS_OF.items()]
    assert scored["metrics"]["test-pass@1"] == pytest.approx(
        sum(in_paper_form(t[0], name) for name, t in reversed_firsts) / len(reversed_firsts))
    assert scored["metrics"]["test-pass@3"] == pytest.approx(
        sum(in_paper_form(a, name) for name, t in reversed_firsts for a in t) / (3 * len(reversed_firsts)))
    records = {r["task_id"]: r for r in map(json.loads, (out / "tasks.jsonl").open())}
    assert records["demo/0"]["tests"] == TESTS_OF["digit_sum"][::-1][:3]


def test_white_box_prompts_carry_each_candidate_code(plugins, tmp_path):
    samples = tmp_path / "codes.jsonl"
    samples.write_text(json.dumps({"task_id": "demo/0", "solution": "def digit_sum(n):\n    return 42\n"}) + "\n" +
                       json.dumps({"task_id": "demo/0", "solution": "def digit_sum(n):\n    return n % 9\n"}) + "\n")
    with OpenAIServer(answer=golden_asserts) as srv:
        generate(plugins, cfg(tmp_path, srv, white_box_from=str(samples), n=2, k=4))
        users = [b["messages"][1]["content"] for b in srv.bodies]
    assert len(users) == 2  # one request (n=2) per candidate code; demo/1 has no candidate
    assert "Buggy Code:\n```python\ndef digit_sum(n):\n    return 42\n```" in users[0]
    assert "return n % 9" in users[1] and "Generate 4 assertion-based test cases" in users[1]
    rows = [json.loads(line) for line in (tmp_path / "gen" / "tests.jsonl").open()]
    assert sorted((r["code_index"], r["index"]) for r in rows) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_a_prompt_file_overrides_the_paper_text(plugins, tmp_path):
    f = tmp_path / "prompts.toml"
    f.write_text('[code]\nsystem = "Be brief."\nuser = "Implement {entry_point}.\\n\\n{question}"\n')
    with OpenAIServer() as srv:
        result = generate(plugins, cfg(tmp_path, srv, role="code", prompt_file=str(f), limit=1))
        assert srv.bodies[0]["messages"][0] == {"role": "system", "content": "Be brief."}
        assert srv.bodies[0]["messages"][1]["content"].startswith("Implement digit_sum.\n\ndef digit_sum(")
    assert result["prompt"] == "code"
    config = json.loads((tmp_path / "gen" / "config.json").read_text())
    assert config["prompt_text"]["system"] == "Be brief."  # the text used is part of the run's identity


def test_the_generator_example_of_the_plugin_guide_works_as_a_plugin_file(tmp_path):
    """The guide's example, cut out of docs/plugins.md, loaded with --plugin and run."""
    guide = (ROOT / "docs" / "plugins.md").read_text()
    section = guide[guide.index("## Writing a generator"):]
    code = section[section.index("```python\n") + 10:section.index("\n```", section.index("```python\n"))]
    plugin = tmp_path / "echo_plugin.py"
    plugin.write_text(code)
    out = tmp_path / "echo"
    assert main(["--plugin", str(plugin), "generate", "--role", "code", "--benchmark", "demo", "--generator", "echo",
                 "--generator-opt", "prefix=def f(): return 1  # ", "--n", "2", "--limit", "2", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "samples.jsonl").open()]
    assert len(rows) == 4 and all(r["raw"].startswith("def f(): return 1  # ") for r in rows)
    again = tmp_path / "echo2"  # its identity() turns the cache on: a second run is served from it
    assert main(["--plugin", str(plugin), "generate", "--role", "code", "--benchmark", "demo", "--generator", "echo",
                 "--generator-opt", "prefix=def f(): return 1  # ", "--n", "2", "--limit", "2", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(again)]) == 0
    assert json.loads((again / "results.json").read_text())["this_run"]["cache_hits"] == 4


def test_cli_errors_are_clear(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "codea1", "generate", *args, "--out", str(tmp_path / "o")],
                              capture_output=True, text=True, cwd=ROOT)

    r = run("--role", "code", "--benchmark", "demo", "--generator", "hff")
    assert r.returncode == 2 and "unknown generator 'hff'; did you mean 'hf'" in r.stderr
    r = run("--role", "code", "--benchmark", "demo", "--generator", "openai", "--generator-opt", "mode=chatty",
            "--model", "m")
    assert r.returncode == 2 and "option 'mode' must be chat or completions" in r.stderr
    r = run("--role", "code", "--benchmark", "demo", "--generator", "replay", "--tasks", "demo/99")
    assert r.returncode == 2 and "--tasks: 'demo/99' is not a task of demo" in r.stderr
    r = run("--role", "code", "--benchmark", "demo", "--generator", "hf", "--white-box-from", "x.jsonl")
    assert r.returncode == 2 and "--white-box-from is for --role tests" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()  # refused before anything was written
