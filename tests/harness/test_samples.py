"""Bad samples files fail with the file, the line and the field."""

import json

import pytest

from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.samples import SamplesError


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


@pytest.mark.parametrize("lines,message", [
    (['{"task_id": "demo/0", "solution": "x"}', '{"task_id": "demo/0"'], r"s.jsonl:2: invalid JSON"),
    (['{"solution": "x"}'], r"s.jsonl:1: field 'task_id' is missing"),
    (['{"task_id": "demo/00", "solution": "x"}'], r"s.jsonl:1: field 'task_id': 'demo/00' is not a task of this benchmark; did you mean 'demo/0'"),
    (['{"task_id": "demo/0", "answer": "x"}'], r"s.jsonl:1: needs a string field 'solution' or 'completion'"),
    (['[1, 2]'], r"s.jsonl:1: a sample must be a JSON object"),
])
def test_errors_name_file_line_and_field(plugins, tmp_path, lines, message):
    with pytest.raises(SamplesError, match=message):
        evaluate(plugins, EvaluateConfig(benchmark="demo", samples=write(tmp_path / "s.jsonl", lines),
                                         out=str(tmp_path / "out"), progress=False))


def test_completion_continues_the_prompt_and_directories_work(plugins, tmp_path):
    from codea1.benchmarks.demo.problems import PROBLEMS

    body = PROBLEMS[0]["solution"].split("\n", 1)[1]
    jsonl = write(tmp_path / "c.jsonl", [json.dumps({"task_id": "demo/0", "completion": body})])
    res = evaluate(plugins, EvaluateConfig(benchmark="demo", samples=jsonl, out=str(tmp_path / "a"), tasks=["demo/0"],
                                           progress=False))
    assert res["tasks"]["demo/0"]["statuses"] == ["pass"]
    folder = tmp_path / "samples" / "demo_1"
    folder.mkdir(parents=True)
    (folder / "0.py").write_text(PROBLEMS[1]["solution"])
    (folder / "1.py").write_text("def is_palindrome(t):\n    return False\n")
    res = evaluate(plugins, EvaluateConfig(benchmark="demo", samples=str(tmp_path / "samples"), out=str(tmp_path / "b"),
                                           tasks=["demo/1"], progress=False))
    assert res["tasks"]["demo/1"]["statuses"] == ["pass", "fail"]
