"""The openai generator against a real local HTTP server speaking the OpenAI chat and
completions API (tests/openai_server.py), with 429/5xx/dropped connections injected."""

from __future__ import annotations

import json

import pytest
from openai_server import OpenAIServer

from codea1.harness.cli import main
from codea1.harness.flows.generate import GenerateConfig, generate
from codea1.harness.generation import GenerationError

pytest.importorskip("openai", reason="the openai client is not installed (pip install 'codea1[openai]')")


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def config(server, tmp_path, **kw):
    opts = {"base_url": server.base_url, "backoff": "0.01", "max_backoff": "0.05", "concurrency": "1",
            **kw.pop("generator_options", {})}
    base = dict(benchmark="demo", role="code", generator="openai", out=str(tmp_path / "gen"), model="served-model",
                n=2, limit=3, generator_options=opts, cache=False, progress=False, temperature=0.5, top_p=0.9,
                max_tokens=200, seed=7)
    return GenerateConfig(**{**base, **kw})


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_chat_requests_carry_the_paper_prompt_and_the_sampling_parameters(plugins, server, tmp_path):
    result = generate(plugins, config(server, tmp_path))
    assert result["rows"] == 6 and set(server.paths) == {"/v1/chat/completions"}
    body = server.bodies[0]
    assert body["model"] == "served-model" and body["n"] == 2
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 200)
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful code completion assistant."}
    assert body["messages"][1]["content"].startswith("Given the following Question, complete the function.")
    assert "def digit_sum(n: int) -> int:" in body["messages"][1]["content"]
    assert len({b["seed"] for b in server.bodies}) == 3  # one seed per prompt
    out = rows(tmp_path / "gen" / "samples.jsonl")
    assert sorted((r["task_id"], r["index"]) for r in out) == [(f"demo/{t}", i) for t in range(3) for i in range(2)]
    first = next(r for r in out if r["task_id"] == "demo/0")
    assert first["solution"].startswith("def digit_sum(n: int) -> int:\n    return sum(")
    assert "Here is the function" in first["raw"]  # the raw response is kept beside the code
    assert first["extraction"]["source"] == "block 1 of 1" and first["prompt_tokens"] > 0
    assert result["this_run"]["completion_tokens"] == sum(r["completion_tokens"] for r in out) > 0


def test_generated_samples_score_through_evaluate(plugins, server, tmp_path):
    generate(plugins, config(server, tmp_path, limit=None, n=1))
    assert main(["evaluate", "--benchmark", "demo", "--samples", str(tmp_path / "gen" / "samples.jsonl"),
                 "--out", str(tmp_path / "eval"), "--no-progress"]) == 0
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["metrics"]["pass@1"] == 1.0 and results["counts"]["samples"] == 12


def test_completions_mode_sends_the_chatml_prompt(plugins, server, tmp_path):
    generate(plugins, config(server, tmp_path, generator_options={"mode": "completions"}, limit=1, n=1))
    assert server.paths == ["/v1/completions"]
    prompt = server.bodies[0]["prompt"]
    assert prompt.startswith("<|im_start|>system\nYou are a helpful code completion assistant.<|im_end|>\n")
    assert prompt.endswith("<|im_start|>assistant\n")


def test_429_5xx_and_dropped_connections_are_retried_and_counted(plugins, server, tmp_path):
    server.faults = ["429", "500", "drop", "503"]
    result = generate(plugins, config(server, tmp_path, limit=1))
    assert result["rows"] == 2
    assert len(server.bodies) == 5  # four failures, then the answer
    env = json.loads((tmp_path / "gen" / "environment.json").read_text())
    assert env["generator"]["retries"] == 4 and env["generator"]["requests"] == 5
    assert "api_key" not in json.dumps(env).lower()


def test_a_client_error_is_not_retried(plugins, server, tmp_path):
    server.faults = ["400"]
    with pytest.raises(GenerationError, match=r"BadRequestError.*after 0 retries"):
        generate(plugins, config(server, tmp_path, limit=1))
    assert len(server.bodies) == 1


def test_retries_run_out_keep_what_was_written_and_the_rerun_resumes(plugins, server, tmp_path):
    server.faults = ["ok", "500", "500", "500"]
    cfg = config(server, tmp_path, generator_options={"retries": "2"})
    with pytest.raises(GenerationError, match=r"127\.0\.0\.1.*demo/1.*InternalServerError.*after 2 retries"):
        generate(plugins, cfg)
    assert [r["task_id"] for r in rows(tmp_path / "gen" / "samples.jsonl")] == ["demo/0", "demo/0"]
    asked = len(server.bodies)
    again = generate(plugins, cfg)
    assert again["rows"] == 6 and again["this_run"]["samples"] == 4
    assert len(server.bodies) - asked == 2  # only demo/1 and demo/2 were asked for
    # through the CLI the same failure is an exit status 2 with the reason, not a traceback
    server.faults = ["500"] * 10
    code = main(["generate", "--role", "code", "--benchmark", "demo", "--generator", "openai", "--model", "m",
                 "--generator-opt", f"base_url={server.base_url}", "--generator-opt", "retries=1",
                 "--generator-opt", "backoff=0.01", "--limit", "1", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "cli")])
    assert code == 2


def test_a_server_that_ignores_n_is_asked_again_with_another_seed(plugins, tmp_path):
    with OpenAIServer(max_n=1) as srv:
        result = generate(plugins, config(srv, tmp_path, n=3, limit=1))
        assert result["rows"] == 3
        assert [b["n"] for b in srv.bodies] == [3, 2, 1]
        assert len({b["seed"] for b in srv.bodies}) == 3


def test_concurrent_requests_all_land_once(plugins, tmp_path):
    with OpenAIServer() as srv:
        result = generate(plugins, config(srv, tmp_path, generator_options={"concurrency": "4"}, limit=None, n=2))
    out = rows(tmp_path / "gen" / "samples.jsonl")
    assert result["rows"] == 24
    assert sorted((r["task_id"], r["index"]) for r in out) == sorted((f"demo/{t}", i) for t in range(12) for i in range(2))
