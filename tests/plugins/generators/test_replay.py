"""The replay generator: saved responses re-scored without a model; gaps are errors."""

from __future__ import annotations

import json

import pytest

from codea1.harness.flows.generate import GenerateConfig, generate
from codea1.harness.generation import GenerationError


def test_replay_re_scores_saved_responses_and_refuses_missing_ones(plugins, tmp_path):
    saved = tmp_path / "saved.jsonl"
    saved.write_text("".join(json.dumps({"task_id": "demo/0", "raw": f"```python\n{t}\n```"}) + "\n"
                             for t in ("def digit_sum(n):\n    return 6", "def digit_sum(n):\n    return sum(map(int, str(n)))")))
    result = generate(plugins, GenerateConfig(benchmark="demo", role="code", generator="replay", out=str(tmp_path / "r"),
                                              n=2, tasks=["demo/0"], generator_options={"file": str(saved)},
                                              progress=False))
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").open()]
    assert [r["solution"] for r in rows] == ["def digit_sum(n):\n    return 6\n",
                                             "def digit_sum(n):\n    return sum(map(int, str(n)))\n"]
    assert result["this_run"]["cache_hits"] == 0 and rows[0]["finish_reason"] == "replayed"
    with pytest.raises(GenerationError, match=r"saved.jsonl holds 2 sample\(s\) of demo/0; sample 2 was asked for"):
        generate(plugins, GenerateConfig(benchmark="demo", role="code", generator="replay", out=str(tmp_path / "r"),
                                         n=3, tasks=["demo/0"], generator_options={"file": str(saved)}, progress=False))
    assert len((tmp_path / "r" / "samples.jsonl").read_text().splitlines()) == 2  # nothing lost
    saved.write_text('{"task_id": "demo/0", "raw": "x"}\n{"task_id": 3}\n')
    with pytest.raises(GenerationError, match=r"saved.jsonl:2: field 'task_id' is missing or not a string"):
        generate(plugins, GenerateConfig(benchmark="demo", role="code", generator="replay", out=str(tmp_path / "x"),
                                         n=1, generator_options={"file": str(saved)}, progress=False))
