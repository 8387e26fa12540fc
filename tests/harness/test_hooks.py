"""One test per hook (datasette's ``test_hook_<name>``): each hook exercised by a real plugin,
in process or as a --plugin file, through the flows and the command line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from codea1.api import (
    CodeMetric,
    Generation,
    Generator,
    MetricValue,
    PolicyBackend,
    Reporter,
    TestMetric,
    Trainer,
    ZygoteExecutor,
    hookimpl,
)
from codea1.harness.cli import main
from codea1.harness.flows.evaluate import EvaluateConfig, evaluate
from codea1.harness.flows.evaluate_tests import EvaluateTestsConfig, evaluate_tests
from codea1.harness.flows.generate import GenerateConfig, generate
from codea1.harness.flows.tts import TTSConfig, best_of_n
from codea1.harness.plugin_manager import load_plugins
from codea1.harness.registry import PluginLoadError


def plugins_with(*objects):
    return load_plugins(autoload=False, extra=objects)


def single(hook_name: str, cls):
    """An in-process plugin whose one registration hook adds ``cls``."""
    class Plugin:
        pass

    def register(self, registry):
        registry.add(cls)

    setattr(Plugin, hook_name, hookimpl(register))
    return Plugin()


class OneWorker(ZygoteExecutor):
    name = "one-worker"
    description = "the zygote sandbox on one worker"

    def __init__(self, options=None, workers=None):
        super().__init__(options, workers=1)


class EchoGenerator(Generator):
    name = "echo"
    description = "answers with the reference-like solution of the demo's first task"

    def generate(self, requests):
        for req in requests:
            yield req, [Generation("```python\ndef digit_sum(n):\n    return sum(map(int, str(n)))\n```",
                                   finish_reason="stop") for _ in req.indices]


class FirstSamplePasses(CodeMetric):
    name = "first@k"
    description = "fraction of tasks whose first sample passes (k ignored)"

    def compute(self, outcomes, k):
        per_task = {t: float(o[0]) for t, o in outcomes.items() if o}
        return MetricValue(sum(per_task.values()) / len(per_task), per_task)


class TestsWritten(TestMetric):
    name = "written@k"
    description = "tests present among the first k"

    def compute(self, records, k, task_set="per-k", largest_k=None):
        return MetricValue(sum(min(len(r.tests), k) for r in records.values()) / (k * len(records)))


def test_hook_codea1_register_executors(tmp_path):
    plugins = plugins_with(single("codea1_register_executors", OneWorker))
    assert plugins.executors.get("one-worker").distribution == "registered in-process"
    results = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path), executor="one-worker",
                                               progress=False))
    assert results["counts"]["pass"] == 12 and results["executor"] == "one-worker"
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["executor"]["workers"] == 1


def test_hook_codea1_register_generators(tmp_path):
    plugins = plugins_with(single("codea1_register_generators", EchoGenerator))
    r = generate(plugins, GenerateConfig(benchmark="demo", role="code", generator="echo", out=str(tmp_path),
                                         tasks=["demo/0"], n=2, cache=False, progress=False))
    assert r["rows"] == 2
    rows = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert rows[0]["solution"].startswith("def digit_sum")


def test_hook_codea1_register_metrics(tmp_path):
    class Both:
        @hookimpl
        def codea1_register_metrics(self, registry):
            registry.add(FirstSamplePasses)
            registry.add(TestsWritten)

    plugins = plugins_with(Both())
    assert set(plugins.metrics.of_type(CodeMetric)) >= {"first@k", "pass@k"}
    assert "written@k" in plugins.metrics.of_type(TestMetric) and "written@k" not in plugins.metrics.of_type(CodeMetric)
    code = evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(tmp_path / "code"), progress=False))
    assert code["metrics"]["first@1"] == 1.0 and "written@1" not in code["metrics"]
    tests = evaluate_tests(plugins, EvaluateTestsConfig(benchmark="demo", tests="golden", k=[1], tasks=["demo/0"],
                                                        coverage=False, out=str(tmp_path / "tests"), progress=False))
    assert tests["metrics"]["written@1"] == 1.0 and "first@1" not in tests["metrics"]


def test_hook_codea1_register_benchmarks(tmp_path):
    from codea1.api import Benchmark, Problem, parse_asserts

    class Tiny(Benchmark):
        name = "tiny"
        description = "one problem"

        def load(self):
            tests, _ = parse_asserts("assert double(2) == 4", "double")
            return [Problem(task_id="tiny/0", prompt="", entry_point="double", reference="def double(x):\n    return 2 * x\n",
                            tests=tests)]

    plugins = plugins_with(single("codea1_register_benchmarks", Tiny))
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "tiny/0", "solution": "def double(x):\n    return x + x\n"}) + "\n")
    r = evaluate(plugins, EvaluateConfig(benchmark="tiny", samples=str(samples), out=str(tmp_path / "r"), progress=False))
    assert r["metrics"]["pass@1"] == 1.0


def _registers_only_subclasses(hook, kind, base):
    good = type("Good", (base,), {"name": f"good-{kind}", "description": "a test plugin"})
    plugins = plugins_with(single(hook, good))
    entry = getattr(plugins, kind).get(f"good-{kind}")
    assert entry.cls is good and entry.kind == kind
    listed = {(r["kind"], r["name"]) for r in plugins.listing()}
    assert (kind[:-1], f"good-{kind}") in listed
    bad = type("Bad", (), {"name": "bad", "description": "not a subclass"})
    with pytest.raises(PluginLoadError, match=rf"plugin Plugin \(registered in-process\) registered .*Bad.* as a "
                                              rf"{kind[:-1]}, but a {kind[:-1]} must be a subclass of "
                                              rf"{base.__module__}.{base.__qualname__}"):
        plugins_with(single(hook, bad))


def test_hook_codea1_register_trainers():
    _registers_only_subclasses("codea1_register_trainers", "trainers", Trainer)


def test_hook_codea1_register_backends():
    _registers_only_subclasses("codea1_register_backends", "backends", PolicyBackend)


def test_hook_codea1_register_reporters():
    _registers_only_subclasses("codea1_register_reporters", "reporters", Reporter)


def test_hook_codea1_register_commands(tmp_path, capsys):
    plugin = tmp_path / "hello_plugin.py"
    plugin.write_text(textwrap.dedent('''
        from codea1.api import Codea1Error, Command, hookimpl

        class Hello(Command):
            name = "hello"
            description = "greets"

            def add_arguments(self, parser):
                parser.add_argument("--who", required=True)

            def run(self, plugins, args):
                if args.who == "nobody":
                    raise Codea1Error("nobody to greet")
                print(f"hello {args.who}, {len(plugins.benchmarks.names())} benchmarks here")
                return 0

        @hookimpl
        def codea1_register_commands(registry):
            registry.add(Hello)
    '''))
    assert main(["--plugin", str(plugin), "hello", "--who", "world"]) == 0
    assert capsys.readouterr().out.startswith("hello world, ")
    assert main(["--plugin", str(plugin), "hello", "--who", "nobody"]) == 2
    assert capsys.readouterr().err.strip() == "codea1: error: nobody to greet"
    with pytest.raises(SystemExit):  # without the plugin the command does not exist
        main(["hello", "--who", "world"])
    assert "invalid choice: 'hello'" in capsys.readouterr().err


class Recorder:
    """Records the run lifecycle notifications."""

    def __init__(self):
        self.events = []

    @hookimpl
    def codea1_run_started(self, config, out_dir):
        self.events.append(("started", config["command"], out_dir))

    @hookimpl
    def codea1_verdict_recorded(self, verdict):
        self.events.append(("verdict", verdict.task_id, verdict.sample_index, verdict.status))

    @hookimpl
    def codea1_run_finished(self, results, out_dir):
        written = json.loads((Path(out_dir) / "results.json").read_text())
        self.events.append(("finished", out_dir, written == results))


@pytest.fixture(scope="module")
def every_flow(tmp_path_factory):
    """One run of each flow on the demo set, with the recorder plugged in."""
    rec = Recorder()
    plugins = plugins_with(rec, single("codea1_register_generators", EchoGenerator))
    root = tmp_path_factory.mktemp("flows")
    tests = root / "tests.jsonl"
    tests.write_text(json.dumps({"task_id": "demo/0", "tests": ["assert digit_sum(12) == 3"]}) + "\n")
    evaluate(plugins, EvaluateConfig(benchmark="demo", out=str(root / "evaluate"), progress=False))
    evaluate_tests(plugins, EvaluateTestsConfig(benchmark="demo", tests=str(tests), k=[1], coverage=False,
                                                allow_partial=True, out=str(root / "evaluate-tests"), progress=False))
    generate(plugins, GenerateConfig(benchmark="demo", role="code", generator="echo", tasks=["demo/0"], cache=False,
                                     out=str(root / "generate"), progress=False))
    best_of_n(plugins, TTSConfig(benchmark="demo", codes=str(root / "generate" / "samples.jsonl"), tests=str(tests),
                                 tasks=["demo/0"], out=str(root / "tts"), progress=False))
    return rec.events, root


def test_hook_codea1_run_started(every_flow):
    events, root = every_flow
    started = [(e[1], e[2]) for e in events if e[0] == "started"]
    assert started == [("evaluate", str(root / "evaluate")), ("evaluate-tests", str(root / "evaluate-tests")),
                       ("generate", str(root / "generate")), ("tts", str(root / "tts")),
                       ("evaluate", str(root / "tts" / "golden"))]


def test_hook_codea1_run_finished(every_flow):
    events, root = every_flow
    finished = [e for e in events if e[0] == "finished"]
    assert [e[1] for e in finished] == [str(root / d) for d in ("evaluate", "evaluate-tests", "generate",
                                                                "tts/golden", "tts")]
    assert all(e[2] for e in finished)  # results.json written, and equal to what the hook saw


def test_hook_codea1_verdict_recorded(every_flow, tmp_path):
    events, _ = every_flow
    first_run = [e for e in events if e[0] == "verdict"]
    assert len(first_run) == 19 + 1  # the demo's 19 samples, then the tts golden run's one
    assert ("verdict", "demo/9", 1, "timeout") in first_run
    rec = Recorder()
    plugins = plugins_with(rec)
    cfg = EvaluateConfig(benchmark="demo", out=str(tmp_path), progress=False)
    evaluate(plugins, cfg)
    lines = (tmp_path / "verdicts.jsonl").read_text().splitlines()
    (tmp_path / "verdicts.jsonl").write_text("\n".join(lines[:15]) + "\n")
    rec.events.clear()
    evaluate(plugins, cfg)  # resumed verdicts are not announced again
    assert len([e for e in rec.events if e[0] == "verdict"]) == 4
