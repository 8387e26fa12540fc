"""Executor ``sandbox-fusion``: one request per candidate program to a Sandbox Fusion service.

Each job (one program with all its tests, the paper's batching) becomes one ``/run_code``
request made with the ``sandbox-fusion`` client. The code sent is a self-contained copy of
the zygote (harness.sandbox: zygote, child and its parts, confine, protocol; harness.verdicts:
plaindata, script_reports, script_tests) and the job travels on stdin, so inside the service
the program runs exactly as it does locally: in a forked child with rlimits, seccomp, Landlock and a private directory where the service's kernel allows them,
its stdout/stderr captured, its results leaving as plain data over a pipe it did not open.
The reply on the service's stdout must frame exactly: the zygote's ready line, one reply
header carrying this request's random nonce, then exactly ``result_bytes`` of records.
Anything else is a protocol violation (a failed verdict), never a pass; the values are
judged here, in the harness.

Flakiness is handled here, not hidden: ``concurrency`` requests in flight at most; a failed
request (connection error, timeout, 5xx, SandboxError) is retried up to ``retries`` times
with exponential back-off from ``backoff`` seconds (the paper: 5 retries, 60 s), and before
each retry the service's ``/v1/ping`` health check must answer (waiting with back-off too).
A job that stays unanswered gets an explicit ``sandbox_error`` verdict (trainers turn it
into a zero-advantage group; evaluation counts it as a failure and says how many). What a
program can cause is never a sandbox error: a driver that started (its ready line came) and
then died, or a reply that breaks the protocol, is sent once more as a new request, and a
second time is the program's failure ("crashed" or "protocol:"), as a zygote that dies twice
under a program is locally. The service's own time limit, which lies ``run_timeout_slack``
seconds beyond the zygote's deadline for the program, is retried once too, then a sandbox
error.

Options: ``endpoint`` (default: $SANDBOX_FUSION_ENDPOINT), ``concurrency``, ``retries``,
``backoff``, ``max_backoff``, ``client_timeout`` (seconds to wait for one reply; 0 = the
job's batch timeout + 30), ``run_timeout_slack`` (seconds the service's run_timeout exceeds the
job's own deadline, so that the zygote inside, not the service, stops a slow program) and
``file_mb``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from codea1.harness.hookspecs import hookimpl
from codea1.harness.records import ExecJob, RawResult
from codea1.harness.verdicts.execution import (
    Executor,
    ExecutorUnavailable,
    PayloadEncoder,
    parse_records,
    sandbox_failure,
)

ENDPOINT_ENV = "SANDBOX_FUSION_ENDPOINT"
# Sent as the program, in this order (each after what it imports; the zygote last: it runs):
# the service has no codea1 installed.
BUNDLED_MODULES = ("codea1.harness.verdicts.plaindata", "codea1.harness.verdicts.script_reports",
                   "codea1.harness.verdicts.check_exprs", "codea1.harness.verdicts.slices",
                   "codea1.harness.verdicts.script_tests", "codea1.harness.sandbox.protocol",
                   "codea1.harness.sandbox.confine", "codea1.harness.sandbox.privileges",
                   "codea1.harness.sandbox.timing", "codea1.harness.sandbox.ground", "codea1.harness.sandbox.settle",
                   "codea1.harness.sandbox.observers", "codea1.harness.sandbox.warmup", "codea1.harness.sandbox.child",
                   "codea1.harness.sandbox.zygote")


@dataclass
class SandboxFusionOptions:
    endpoint: str = ""
    concurrency: int = 8
    retries: int = 5
    backoff: float = 60.0
    max_backoff: float = 600.0
    client_timeout: float = 0.0
    run_timeout_slack: float = 10.0
    file_mb: int = 64

    def __post_init__(self):
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.retries < 0 or self.backoff < 0:
            raise ValueError("retries and backoff must not be negative")


def driver_code(zygote_args: list[str], hash_seed: int = 0) -> str:
    """The program sent to the service: the zygote and its helpers as source, installed as
    modules, then the zygote's main reading its one job from stdin. Python fixes its hash
    seed at start, so the driver first runs itself again (before reading stdin) under
    PYTHONHASHSEED ``hash_seed`` unless it already has it: the service's own seed is
    unknown, and validation asks for two seeds."""
    sources = {name: Path(importlib.util.find_spec(name).origin).read_text() for name in BUNDLED_MODULES}
    packages = sorted({name.rsplit(".", i)[0] for name in BUNDLED_MODULES for i in range(1, name.count(".") + 1)},
                      key=len)
    return (
        "import os, sys, types\n"
        f"if os.environ.get('PYTHONHASHSEED') != {str(int(hash_seed))!r} and os.path.isfile(sys.argv[0]):\n"
        f"    os.environ['PYTHONHASHSEED'] = {str(int(hash_seed))!r}\n"
        "    os.execv(sys.executable, [sys.executable, *sys.argv])\n"
        f"SOURCES = {sources!r}\n"
        f"for pkg in {packages!r}:\n"
        "    mod = types.ModuleType(pkg)\n"
        "    mod.__path__ = []\n"
        "    sys.modules[pkg] = mod\n"
        f"for name in {BUNDLED_MODULES!r}:\n"
        "    mod = types.ModuleType(name)\n"
        "    mod.__file__ = '<codea1:' + name + '>'\n"
        "    sys.modules[name] = mod\n"
        "    exec(compile(SOURCES[name], mod.__file__, 'exec'), mod.__dict__)\n"
        "    parent, _, attr = name.rpartition('.')\n"
        "    setattr(sys.modules[parent], attr, mod)\n"
        "del SOURCES\n"
        f"sys.exit(sys.modules[{BUNDLED_MODULES[-1]!r}].main(sys.argv[1:] or {list(zygote_args)!r}))\n"
    )


class SandboxFusionExecutor(Executor):
    name = "sandbox-fusion"
    description = "one /run_code request per program to a Sandbox Fusion service: retries, back-off, /v1/ping"
    Options = SandboxFusionOptions

    def __init__(self, options=None, workers=None):
        super().__init__(options or SandboxFusionOptions(), workers)
        try:
            import sandbox_fusion  # noqa: F401 - the documented client; imported only when selected
        except ImportError as exc:
            raise ExecutorUnavailable("executor 'sandbox-fusion' needs the sandbox-fusion client: "
                                      "pip install 'codea1[sandbox-fusion]'") from exc
        # Every failed attempt is counted and reported by this executor; the client's own
        # "give up" log lines (one per attempt with max_attempts=1) would only be noise.
        logging.getLogger("sandbox_fusion.client").setLevel(logging.CRITICAL)
        self.endpoint = (self.options.endpoint or os.environ.get(ENDPOINT_ENV, "")).rstrip("/")
        if not self.endpoint:
            raise ExecutorUnavailable(f"executor 'sandbox-fusion' needs an endpoint: --executor-opt endpoint=URL "
                                      f"or ${ENDPOINT_ENV}")
        self._zygote_args = ["--file-mb", str(self.options.file_mb)]
        self._drivers = {0: driver_code(self._zygote_args)}  # hash seed -> the program sent
        self.requests_made = 0
        self.retried = 0
        import tenacity

        self._backoff = tenacity.wait_random_exponential(multiplier=self.options.backoff, max=self.options.max_backoff)

    def info(self) -> dict:
        return {"executor": self.name, "endpoint": self.endpoint, "concurrency": self.options.concurrency,
                "retries": self.options.retries, "backoff": self.options.backoff, "ping": self.ping(),
                "reads": self.read_policy()}

    @staticmethod
    def read_policy() -> dict:
        """What a program can read: decided inside the service, which this harness cannot
        see. The zygote there confines reads with Landlock where the service's kernel has it
        (its interpreter, libraries and system paths, the job's directory), but whether it
        does, and what else the service's container holds, is not known here: no guarantee."""
        from codea1.harness.sandbox.executor import READ_GUARANTEES

        return {"paths": "the service's: Landlock read rules of the zygote inside it, where its kernel has Landlock",
                "own_job_directory": True, "enforced_by": ["the service (not verifiable from the harness)"],
                "guarantees": {name: False for name in READ_GUARANTEES}}

    def ping(self, timeout: float = 5.0) -> bool:
        """The service's health check: GET /v1/ping answers "pong"."""
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.endpoint}/v1/ping", timeout=timeout) as reply:
                return reply.status == 200 and b"pong" in reply.read(64)
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def run(self, jobs: Sequence[ExecJob], early_stop=None) -> Iterator[RawResult]:
        pool = ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="sandbox-fusion")
        left = len(jobs)
        try:
            futures = {pool.submit(self._run_one, job): job for job in jobs}
            for future in as_completed(futures):
                job = futures[future]
                left -= 1
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a bug here must not lose the job
                    yield sandbox_failure(job, f"sandbox-fusion: {type(exc).__name__}: {exc}")
        finally:
            # Stopped early (Ctrl-C, an error): queued jobs are dropped, running ones not waited for.
            pool.shutdown(wait=not left, cancel_futures=True)

    def _run_one(self, job: ExecJob) -> RawResult:
        """The job's result: a second request where the first reply went wrong (``_parse``)."""
        result, again = self._request_once(job)
        if again:
            result, _ = self._request_once(job)
        return result

    def _request_once(self, job: ExecJob) -> tuple[RawResult, bool]:
        """(result, whether to ask again)."""
        import tenacity
        from sandbox_fusion import RunCodeRequest, run_code

        nonce = secrets.token_hex(16)
        head, _key, tests_json, _blob = PayloadEncoder()(job)  # the service reads JSON only
        stdin = head[:-1] + f',"nonce":"{nonce}","tests":{tests_json}}}\n'
        if job.hash_seed not in self._drivers:
            self._drivers[job.hash_seed] = driver_code(self._zygote_args, job.hash_seed)
        request = RunCodeRequest(code=self._drivers[job.hash_seed], language="python", stdin=stdin,
                                 run_timeout=job.batch_timeout + self.options.run_timeout_slack)
        client_timeout = self.options.client_timeout or job.batch_timeout + 30.0

        def attempt():
            self.requests_made += 1
            return run_code(request, endpoint=self.endpoint, max_attempts=1, client_timeout=client_timeout)

        # The client raises plain Exception for 5xx and SandboxError: every failure is retried.
        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.options.retries + 1),
                                     wait=self._backoff, before=self._healthy_before_retry)
        try:
            response = retrying(attempt)
        except tenacity.RetryError as exc:
            error = exc.last_attempt.exception()
            return sandbox_failure(job, f"sandbox-fusion: no answer after {exc.last_attempt.attempt_number} attempts: "
                                        f"{type(error).__name__}: {str(error)[:300]}"), False
        return self._parse(job, response, nonce)

    def _healthy_before_retry(self, state) -> None:
        """Before each retry (after its back-off), wait until /v1/ping answers, backing off
        again, or until this retry's budget is spent; the request is retried either way."""
        if state.attempt_number == 1:
            return
        self.retried += 1
        deadline = time.monotonic() + 4 * min(self.options.max_backoff, self.options.backoff * 2 ** state.attempt_number)
        pause = self._backoff(state)
        while not self.ping() and time.monotonic() < deadline:
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))

    def _parse(self, job: ExecJob, response, nonce: str) -> tuple[RawResult, bool]:
        """(result, whether to ask again): a driver that started and then failed, a reply
        that breaks the protocol, or the service's time limit is asked again once; the
        result given with it is what stands when the second reply fails too."""
        run = response.run_result
        if run is None:
            return sandbox_failure(job, f"sandbox-fusion: no run result ({response.status}: "
                                        f"{response.message[:300]})"), False
        out = (run.stdout or "").encode("utf-8", "surrogateescape")
        ready_line, _, rest = out.partition(b"\n")
        try:
            started = json.loads(ready_line).get("ready") is True
        except (ValueError, AttributeError, RecursionError):
            started = False
        if str(getattr(run.status, "value", run.status)) == "TimeLimitExceeded":
            # The zygote inside stops the program at its own deadline, before the service's:
            # the service killing it means the service was too slow, not the program.
            return sandbox_failure(job, f"sandbox-fusion: the service's run timeout expired "
                                        f"(run_timeout {job.batch_timeout + self.options.run_timeout_slack:.0f} s)"), True
        if not started:  # the driver never ran the program
            return sandbox_failure(job, f"sandbox-fusion: the driver did not start (exit {run.return_code}): "
                                        f"{(run.stderr or '')[-500:]}"), True
        try:
            header_line, body = rest.split(b"\n", 1)
            header = json.loads(header_line)
            if type(header) is not dict or header.get("nonce") != nonce or header.get("job_id") != job.job_id:
                raise ValueError("reply header does not belong to this request")
            size = int(header["result_bytes"])
            if len(body) != size:
                raise ValueError(f"{len(body)} result bytes where the header says {size}")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            if run.return_code not in (0, None):  # the driver died under the program
                return parse_records(job, b"", f"crashed: the sandbox driver exited {run.return_code} running this "
                                               f"program"), True
            return parse_records(job, b"", f"protocol: malformed reply from the service ({exc})"), True
        exit_reason = str(header.get("exit", ""))
        if exit_reason.startswith("sandbox:"):
            return sandbox_failure(job, f"sandbox-fusion: {exit_reason}"), True
        return parse_records(job, body, exit_reason, str(header.get("stdout", "")), str(header.get("stderr", "")),
                             float(header.get("wall", 0.0)), float(header.get("starved", 0.0))), False


@hookimpl
def codea1_register_executors(registry):
    registry.add(SandboxFusionExecutor)
