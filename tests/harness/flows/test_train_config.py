"""`codea1 train`'s config, read once into typed settings: what config.json records of it
(the shape and the run identity of every earlier run, so those runs still resume), and one
converter for the values a TOML file and ``--set`` give. Training itself:
tests/trainers/test_train.py."""

from __future__ import annotations

import json
import re

import pytest

from codea1.harness.errors import ConfigError
from codea1.harness.flows.train import CodeEvaluation, PolicySection, load_config

CONFIG = """\
[train]
trainer = "code-a1"
steps = 2
batch_size = 2

[benchmark]
name = "demo"

[trainer]
alpha = 1
m = 4

[policies.code]
model = "code-model"
temperature = 1
lr = 1

[policies.tests]
model = "tests-model"
max_tokens = 96

[[evaluation.code]]
benchmark = "demo"
temperature = 1
limit = 2
"""


def test_the_config_is_typed_once_and_config_json_keeps_its_shape(plugins, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    cfg = load_config(plugins, str(path), ["trainer.n=2"], str(tmp_path / "out"))
    settings = cfg.settings
    assert isinstance(settings.trainer, plugins.trainers.get("code-a1").cls.Options)
    assert (settings.trainer.m, settings.trainer.n, settings.trainer.alpha) == (4, 2, 1.0)
    code = settings.policies["code"]
    assert isinstance(code, PolicySection) and isinstance(code.options, plugins.backends.get("torch").cls.Options)
    assert (code.backend, code.temperature, code.options.model, code.options.lr) == ("torch", 1, "code-model", 1.0)
    assert settings.evaluation.code == [CodeEvaluation(benchmark="demo", limit=2, temperature=1)]
    assert settings.evaluation.tests is None

    record = json.loads(json.dumps(cfg.record()))
    assert list(record) == ["command", "config_file", "sets", "train", "benchmark", "executor", "trainer", "policies",
                            "evaluation", "identity"]
    assert list(record["policies"]["code"])[:5] == ["backend", "temperature", "top_p", "max_tokens", "model"]
    # a config table keeps an integer as written, a plugin option becomes a float: as recorded before
    assert repr(record["policies"]["code"]["temperature"]) == "1" and repr(record["trainer"]["alpha"]) == "1.0"
    assert repr(record["policies"]["code"]["lr"]) == "1.0"
    assert list(record["evaluation"]) == ["code"]  # no [[evaluation.tests]]: none recorded
    # changed since: the torch backend's rollout options (and its samples), then its master_weights
    # (bfloat16 runs step float32 masters), then the trainers' book_size and book_history (the
    # Mistake Book's bound and step files kept): older runs are refused
    assert record["identity"] == "3fd8d3e4ecf82342", (
        "the run identity of this config changed: runs started before no longer resume (a trainer or backend "
        "option added or renamed does this too; update the hash when that is meant)")


@pytest.mark.parametrize("sets, error", [
    (["train.steps=four"], "[train] key 'steps': expected an integer, got 'four'"),
    (["train.steps=2.5"], "[train] key 'steps': expected an integer, got 2.5"),
    (["policies.code.temperature=hot"], "[policies.code] key 'temperature': expected a number, got 'hot'"),
    (["trainer.m=four"], "[trainer] trainer 'code-a1': option 'm': expected an integer, got 'four'"),
    (["trainer.mistake_book=maybe"],
     "[trainer] trainer 'code-a1': option 'mistake_book': expected true or false, got 'maybe'"),
    (["policies.tests.lr=[1]"], "[policies.tests] backend 'torch': option 'lr': expected a number, got [1]"),
    (['evaluation.code=[{benchmark = "demo", n = "x"}]'],
     "[evaluation.code][0] key 'n': expected an integer, got 'x'"),
    (["train.stpes=3"], "[train] unknown key 'stpes'; did you mean 'steps'?"),
    (["evaluation.tests=5"], "[evaluation] tests must be a list of tables ([[evaluation.tests]])"),
])
def test_set_values_and_toml_values_meet_one_converter(plugins, tmp_path, sets, error):
    """--set text that is not TOML arrives as text, the rest as TOML values: each fails
    naming the file, the table, the key, what it expected and what it got."""
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {error}")):
        load_config(plugins, str(path), sets, str(tmp_path / "out"))


def test_text_for_a_plugin_option_is_read_as_its_type(plugins, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    cfg = load_config(plugins, str(path), ["trainer.mistake_book=no", "policies.code.dtype=bfloat16"],
                      str(tmp_path / "out"))
    assert cfg.settings.trainer.mistake_book is False and cfg.settings.policies["code"].options.dtype == "bfloat16"
