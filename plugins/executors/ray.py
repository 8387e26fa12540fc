"""Executor ``ray``: batches of jobs spread over Ray actors, each running a local executor.

Every actor holds one local executor (``inner``: subprocess by default, or firejail,
bubblewrap, any registered one) and runs whole batches of ``batch_size`` jobs through it.
The driver keeps at most ``max_in_flight`` batches submitted (back-pressure: a million jobs
never sit in the object store at once) and yields results as batches come back.

A worker that dies (node lost, process killed, out of memory) fails its batch's reference
with an actor error: the actor is replaced and the whole batch goes back to the front of the
queue, up to ``max_retries`` times, after which its jobs get ``sandbox_error`` verdicts. A
batch's results are taken only from the reference that completed, so nothing is lost or
counted twice.

Ray is imported only when this executor is selected. ``address`` empty starts (and later
stops) a local Ray instance; "auto" or "ray://host:port" joins a running cluster, which is
left running. Early stop is not available here: results cross the network a batch at a time.

Options: ``address``, ``inner``, ``inner_options`` ("key=value;key=value"), ``actors`` (0 =
the ``--workers`` count), ``inner_workers`` (zygotes per actor), ``batch_size``,
``max_in_flight`` (0 = one per actor), ``max_retries``, ``num_cpus`` (per actor),
``object_store_mb`` (local instance only; 0 = Ray's default), ``startup_timeout`` (seconds
for the actors to be placed before selecting the executor fails).
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Iterator, Sequence

from codea1.harness.hookspecs import hookimpl
from codea1.harness.records import ExecJob, RawResult
from codea1.harness.verdicts.execution import Executor, ExecutorUnavailable, sandbox_failure


@dataclass
class RayOptions:
    address: str = ""
    inner: str = "subprocess"
    inner_options: str = ""
    actors: int = 0
    inner_workers: int = 1
    batch_size: int = 8
    max_in_flight: int = 0
    max_retries: int = 3
    num_cpus: float = 1.0
    object_store_mb: int = 0
    startup_timeout: float = 120.0

    def __post_init__(self):
        if self.inner == "ray":
            raise ValueError("inner must be a local executor, not 'ray'")
        if self.batch_size < 1 or self.actors < 0 or self.max_retries < 0:
            raise ValueError("batch_size must be >= 1, actors and max_retries >= 0")


def parse_inner_options(text: str) -> dict[str, str]:
    pairs = [p for p in text.split(";") if p.strip()]
    bad = [p for p in pairs if "=" not in p]
    if bad:
        raise ValueError(f"executor 'ray': inner_options {bad[0]!r}: expected key=value;key=value")
    return dict(p.split("=", 1) for p in pairs)


class BatchWorker:
    """Runs inside a Ray actor: one local executor, whole batches at a time."""

    def __init__(self, inner: str, inner_options: dict[str, str], workers: int):
        from codea1.harness.plugin_manager import load_plugins

        self.executor = load_plugins().executors.create(inner, inner_options, workers=workers)
        self.info = self.executor.info()

    def describe(self) -> dict:
        return {**self.info, "pid": os.getpid(), "node": os.uname().nodename}

    def shutdown(self) -> None:
        self.executor.close()

    def run_batch(self, jobs: list[ExecJob]) -> list[RawResult]:
        results = {r.job_id: r for r in self.executor.run(jobs)}
        return [results.get(job.job_id) or sandbox_failure(job, "inner executor returned no result") for job in jobs]


class RayExecutor(Executor):
    name = "ray"
    description = "batches spread over Ray actors, each with a local executor; dead workers' batches retried"
    Options = RayOptions

    def __init__(self, options=None, workers=None):
        super().__init__(options or RayOptions(), workers)
        try:
            import ray
        except ImportError as exc:
            raise ExecutorUnavailable("executor 'ray' needs Ray: pip install 'codea1[ray]'") from exc
        self.ray = ray
        opts = self.options
        self.inner_options = parse_inner_options(opts.inner_options)
        self.started_ray = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False}
            if opts.address:
                kwargs["address"] = opts.address
            else:
                kwargs["num_cpus"] = max(self.workers, int(opts.num_cpus * max(opts.actors, 1)))
                if opts.object_store_mb:
                    kwargs["object_store_memory"] = opts.object_store_mb * 1024 * 1024
            ray.init(**kwargs)
            self.started_ray = True
        self.n_actors = opts.actors or self.workers
        self.max_in_flight = opts.max_in_flight or self.n_actors
        # max_concurrency 2: describe() answers while a batch runs (one batch per actor at a time).
        self._actor_cls = ray.remote(num_cpus=opts.num_cpus, max_restarts=0, max_concurrency=2)(BatchWorker)
        self.actors = [self._new_actor() for _ in range(self.n_actors)]
        try:  # fail clearly, not hang, when the cluster cannot place the actors
            self.described = ray.get([a.describe.remote() for a in self.actors], timeout=opts.startup_timeout)
        except ray.exceptions.GetTimeoutError:
            free = ray.available_resources()
            self.close(graceful=False)
            raise ExecutorUnavailable(
                f"executor 'ray': {self.n_actors} actors needing {opts.num_cpus} CPU each were not placed within "
                f"{opts.startup_timeout:.0f} s (available now: {free}); lower actors/num_cpus or add nodes") from None
        self.worker_deaths = 0
        self.batches_retried = 0
        self.abandoned_batches = 0
        self.peak_in_flight = 0

    def _new_actor(self):
        return self._actor_cls.remote(self.options.inner, self.inner_options, self.options.inner_workers)

    def info(self) -> dict:
        described = self.ray.get([a.describe.remote() for a in self.actors])
        return {"executor": self.name, "ray_address": self.options.address or "local", "actors": self.n_actors,
                "batch_size": self.options.batch_size, "max_in_flight": self.max_in_flight,
                "inner": described[0] if described else {}, "nodes": sorted({d["node"] for d in described})}

    def actor_pids(self) -> list[int]:
        return [d["pid"] for d in self.ray.get([a.describe.remote() for a in self.actors])]

    def run(self, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        size = self.options.batch_size
        queue = deque((0, list(jobs[i:i + size])) for i in range(0, len(jobs), size))
        idle = deque(range(self.n_actors))
        in_flight: dict = {}  # object ref -> (actor slot, attempt, batch)
        try:
            yield from self._dispatch(queue, idle, in_flight)
        finally:
            if in_flight:  # stopped early (Ctrl-C, an error): close() kills the busy actors
                self.abandoned_batches += len(in_flight)

    def _dispatch(self, queue: deque, idle: deque, in_flight: dict) -> Iterator[RawResult]:
        ray = self.ray
        while queue or in_flight:
            while queue and idle and len(in_flight) < self.max_in_flight:
                attempt, batch = queue.popleft()
                slot = idle.popleft()
                in_flight[self.actors[slot].run_batch.remote(batch)] = (slot, attempt, batch)
                self.peak_in_flight = max(self.peak_in_flight, len(in_flight))
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            slot, attempt, batch = in_flight.pop(ref)
            try:
                results = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                # The worker died with the batch: replace it and run the batch again, whole.
                self.worker_deaths += 1
                self.actors[slot] = self._new_actor()
                idle.append(slot)
                if attempt < self.options.max_retries:
                    self.batches_retried += 1
                    queue.appendleft((attempt + 1, batch))
                else:
                    yield from (sandbox_failure(job, f"ray: worker died {attempt + 1} times running this batch: "
                                                     f"{type(exc).__name__}") for job in batch)
                continue
            except ray.exceptions.RayError as exc:
                idle.append(slot)
                yield from (sandbox_failure(job, f"ray: {type(exc).__name__}: {str(exc)[:500]}") for job in batch)
                continue
            idle.append(slot)
            yield from results

    def close(self, graceful: bool = True) -> None:
        # Close each inner executor (its zygotes) before the actor process goes; not when a
        # batch was abandoned: its actor is busy until the batch ends, and is killed.
        try:
            if graceful and not self.abandoned_batches:
                self.ray.get([a.shutdown.remote() for a in self.actors], timeout=30)
        except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
            pass
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False


@hookimpl
def codea1_register_executors(registry):
    registry.add(RayExecutor)
