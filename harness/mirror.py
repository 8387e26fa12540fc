"""The step log mirrored where people watch training: TensorBoard event files in DIR/tensorboard
and a Weights & Biases offline run in DIR/wandb (``[train] log_to``).

Each row appended to steps.jsonl goes to every sink at the row's own ``step``: its numbers,
nested tables flattened with "/" (``evaluation/code/kodcode/pass@1``). The libraries are
imported when a sink opens; ``check_installed`` names what to install before a run starts.

Resume: a resumed run reruns the steps after its last checkpoint. The TensorBoard sink
starts its event file with a session-start event at the first step it writes, which
TensorBoard's reader takes as "drop what earlier files logged from this step on", so no step
appears twice. Each W&B attempt is its own offline run (grouped by the run directory's
name); steps go up within each.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from codea1.harness.errors import ConfigError

# sink -> (the module it imports, what to install)
SINKS = {"tensorboard": ("tensorboard", "pip install 'codea1[watch]' -c constraints.txt"),
         "wandb": ("wandb", "pip install 'codea1[watch]' -c constraints.txt")}


def scalars(row: dict, prefix: str = "") -> dict[str, float]:
    """Every number of a step-log row by its flattened name; the step itself, true/false,
    None (a metric with no value), text and lists are left out."""
    out: dict[str, float] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(scalars(value, f"{name}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and name != "step":
            out[name] = float(value)
    return out


def check_installed(sinks: list[str], where: str) -> None:
    """A one-line error for a sink whose library is not installed (before any model loads)."""
    for sink in sinks:
        module, install = SINKS[sink]
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"{where}: {sink!r} needs the {module} package, which is not installed: {install}")


class TensorBoardSink:
    """Scalars written with TensorBoard's own event file writer (no torch, no TensorFlow)."""

    def __init__(self, out: Path, config: dict):
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.event_pb2, self.summary_pb2 = event_pb2, summary_pb2
        self.writer = EventFileWriter(str(out / "tensorboard"))
        self.purged = False

    def log(self, step: int, values: dict[str, float]) -> None:
        Event, Summary = self.event_pb2.Event, self.summary_pb2.Summary
        if not self.purged:  # hides what an interrupted attempt logged from this step on
            start = self.event_pb2.SessionLog(status=self.event_pb2.SessionLog.START)
            self.writer.add_event(Event(wall_time=time.time(), step=step, session_log=start))
            self.purged = True
        summary = Summary(value=[Summary.Value(tag=tag, simple_value=v) for tag, v in values.items()])
        self.writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))
        self.writer.flush()  # a TensorBoard watching the directory sees the step now

    def close(self, failed: bool) -> None:
        self.writer.close()


class WandbSink:
    """An offline W&B run in DIR/wandb (``wandb sync`` uploads it later)."""

    def __init__(self, out: Path, config: dict):
        import wandb

        self.run = wandb.init(mode="offline", dir=str(out), project="codea1", name=out.resolve().name,
                              group=out.resolve().name, job_type="train", config=config,
                              settings=wandb.Settings(silent=True, console="off"))

    def log(self, step: int, values: dict[str, float]) -> None:
        self.run.log(values, step=step)

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


class StepMirror:
    """The sinks a run logs to; ``log(row)`` after each row of steps.jsonl."""

    def __init__(self, sinks: list[str], out: Path, config: dict[str, Any]):
        kinds = {"tensorboard": TensorBoardSink, "wandb": WandbSink}
        self.sinks = []
        try:
            for name in dict.fromkeys(sinks):  # a sink named twice opens once
                self.sinks.append(kinds[name](out, config))
        except BaseException:
            self.close(failed=True)
            raise

    def log(self, row: dict) -> None:
        values = scalars(row)
        for sink in self.sinks:
            sink.log(int(row["step"]), values)

    def close(self, failed: bool = False) -> None:
        for sink in self.sinks:
            sink.close(failed)
        self.sinks = []

    def __enter__(self) -> "StepMirror":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(failed=exc_type is not None)
