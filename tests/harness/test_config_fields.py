"""The Python API's config records refuse a wrong type as the command line would: a
ConfigError naming the record's field, the form it takes, and the command line's spelling
written as the API takes it (harness.config_fields)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codea1.api import Codea1Error, ConfigError
from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig
from codea1.harness.flows.generate import GenerateConfig
from codea1.harness.flows.report import ReportConfig


@pytest.mark.parametrize("make, message", [
    (lambda: EvaluateConfig(benchmark="demo", out="o", k="1,5"),
     "EvaluateConfig.k: expected a list of int, not '1,5' (str): the command line's '1,5' is [1, 5] here"),
    (lambda: EvaluateConfig(benchmark="demo", out="o", workers="2"),
     "EvaluateConfig.workers: expected an int or None, not '2' (str): write 2, not a string"),
    (lambda: EvaluateConfig(benchmark="demo", out="o", benchmark_options="mini=true"),
     "EvaluateConfig.benchmark_options: expected a dict of str to str, not 'mini=true' (str): the command "
     "line's 'mini=true' is {'mini': 'true'} here"),
    (lambda: EvaluateConfig(benchmark="demo", out="o", tasks="HumanEval/0,HumanEval/1"),
     "EvaluateConfig.tasks: expected a list of str or None, not 'HumanEval/0,HumanEval/1' (str): the command "
     "line's 'HumanEval/0,HumanEval/1' is ['HumanEval/0', 'HumanEval/1'] here"),
    (lambda: EvaluateConfig(benchmark="demo", out="o", limit=True),
     "EvaluateConfig.limit: expected an int or None, not True (bool)"),
    (lambda: EvaluateConfig(benchmark="demo", out="o", k=[1, "5"]),
     "EvaluateConfig.k: expected a list of int, not [1, '5'] (list)"),
    (lambda: EvaluateTestsConfig(benchmark="demo", out="o", tests="golden", mutant_timeout="10"),
     "EvaluateTestsConfig.mutant_timeout: expected a number, not '10' (str): write 10.0, not a string"),
    (lambda: GenerateConfig(benchmark="demo", out="o", role="code", generator="echo", n="4"),
     "GenerateConfig.n: expected an int, not '4' (str): write 4, not a string"),
    (lambda: ReportConfig(runs="runs/a", out="r"),
     "ReportConfig.runs: expected a list of str, not 'runs/a' (str): the command line's 'runs/a' is "
     "['runs/a'] here"),
])
def test_a_wrong_type_is_a_config_error_naming_the_field(make, message):
    with pytest.raises(ConfigError) as caught:
        make()
    assert str(caught.value) == message
    assert isinstance(caught.value, Codea1Error)


def test_what_the_api_documents_is_accepted_and_runs(plugins, tmp_path):
    """Tuples for lists, ints for numbers and paths for strings are taken as they are."""
    cfg = EvaluateConfig(benchmark="demo", out=tmp_path / "run", k=(1,), workers=1, min_time_limit=2,
                         progress=False)
    assert isinstance(cfg.out, Path)
    assert evaluate(plugins, cfg)["metrics"]["pass@1"] > 0
