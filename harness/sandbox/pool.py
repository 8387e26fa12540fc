"""Client side of the zygotes: N long-lived fork servers, one job in flight on each.

Executors that confine a whole Python process (plain subprocess, firejail, bubblewrap) share
this pool and differ only in the command prefix that wraps the zygote.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

DEFAULT_PRELOAD = ("math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string",
                   "typing", "json", "fractions", "decimal", "statistics", "random", "copy", "operator",
                   "hashlib", "datetime", "unittest", "cmath", "array", "numbers", "dataclasses", "enum")


def package_roots() -> list[str]:
    """The directories that hold codea1's code: site-packages for an installed wheel; the
    checkout for an editable install, where ``codea1`` and its subpackages live in separate
    top-level folders of the repository."""
    import codea1
    import codea1.harness

    return sorted({str(Path(codea1.__file__).resolve().parents[1]),
                   str(Path(codea1.harness.__file__).resolve().parents[1])})


class ZygoteDied(RuntimeError):
    pass


class _Zygote:
    def __init__(self, argv: list[str], env: dict):
        control_r, self.control_w = os.pipe()
        try:
            self.proc = subprocess.Popen([*argv, "--control-fd", str(control_r)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                         start_new_session=True, pass_fds=(control_r,))
        finally:
            os.close(control_r)
        self.known_tests: set[str] = set()  # tests_keys this zygote holds (it may forget some)
        self._stderr_tail: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        try:
            self.info, _ = self._read()
        except ZygoteDied:
            self.proc.wait(timeout=10)
            raise ZygoteDied(f"zygote did not start (exit {self.proc.returncode}): {self.stderr_tail()}") from None

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self._stderr_tail = (self._stderr_tail + [line.decode("utf-8", "replace")])[-50:]

    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail)[-2000:]

    def _read(self) -> tuple[dict, bytes]:
        line = self.proc.stdout.readline()
        if not line:
            raise ZygoteDied(f"zygote exited: {self.stderr_tail()}")
        header = json.loads(line)
        size = int(header.get("result_bytes", 0))
        body = self.proc.stdout.read(size) if size else b""
        if len(body) != size:
            raise ZygoteDied(f"zygote reply cut short: {self.stderr_tail()}")
        return header, body

    def _send(self, text: str, job_id: str, on_chunk) -> tuple[dict, bytes]:
        """Send one job; result records stream in as chunks (``on_chunk(bytes)`` returns True
        to cancel the job: the zygote then kills the child)."""
        try:
            self.proc.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
            self.proc.stdin.flush()
            chunks = []
            cancelled = False
            while True:
                header, body = self._read()
                if "chunk" not in header:
                    return header, b"".join(chunks) + body
                chunks.append(body)
                if on_chunk is not None and not cancelled and on_chunk(body):
                    cancelled = True
                    os.write(self.control_w, f"cancel {job_id}\n".encode())
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ZygoteDied(f"zygote pipe broke: {exc}; {self.stderr_tail()}") from exc

    def request(self, head: str, tests_key: str, tests_json: str, job_id: str = "", on_chunk=None) -> tuple[dict, bytes]:
        """``head`` is the job as a JSON object without its tests; the tests travel only when
        this zygote does not hold ``tests_key`` yet."""
        if tests_key in self.known_tests:
            header, body = self._send(head[:-1] + f',"tests_key":"{tests_key}"}}', job_id, on_chunk)
            if not header.get("need_tests"):
                return header, body
        self.known_tests.add(tests_key)
        return self._send(head[:-1] + f',"tests_key":"{tests_key}","tests":{tests_json}}}', job_id, on_chunk)

    def close(self):
        for close in (self.proc.stdin.close, lambda: os.close(self.control_w)):
            try:
                close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ZygotePool:
    """Runs JSON job payloads on ``workers`` zygotes; ``prefix`` wraps each zygote's command
    (e.g. ``["firejail", "--quiet", ...]``)."""

    def __init__(self, workers: int, prefix: Sequence[str] = (), preload: Sequence[str] = DEFAULT_PRELOAD,
                 zygote_args: Sequence[str] = (), python: str = sys.executable):
        self.workers = max(1, int(workers))
        # A minimal environment: the initial environment block stays readable in
        # /proc/self/environ of every child, so secrets must never reach the zygote at all.
        env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
        env["PYTHONHASHSEED"] = "0"  # set iteration order, hence output digests, alike in every zygote
        env["PYTHONPATH"] = os.pathsep.join([*package_roots(), *sys.path[1:]])
        self._argv = [*prefix, python, "-m", "codea1.harness.sandbox.zygote", "--preload", ",".join(preload), *zygote_args]
        self._env = env
        self._free: queue.Queue[_Zygote] = queue.Queue()
        self._all: list[_Zygote] = []
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> dict:
        if not self._started:
            with ThreadPoolExecutor(self.workers) as ex:
                zygotes = list(ex.map(lambda _: _Zygote(self._argv, self._env), range(self.workers)))
            for z in zygotes:
                self._all.append(z)
                self._free.put(z)
            self._started = True
        return self._all[0].info

    def _replace(self, dead: _Zygote) -> None:
        dead.close()
        with self._lock:
            self._all.remove(dead)
            fresh = _Zygote(self._argv, self._env)
            self._all.append(fresh)
        self._free.put(fresh)

    def request(self, parts: tuple[str, str, str], job_id: str = "", on_chunk=None) -> tuple[dict, bytes]:
        """Run one job (head, tests_key, tests_json); a zygote that dies is replaced and the
        error is raised."""
        self.start()
        zygote = self._free.get()
        try:
            answer = zygote.request(*parts, job_id=job_id, on_chunk=on_chunk)
        except ZygoteDied:
            self._replace(zygote)
            raise
        self._free.put(zygote)
        return answer

    def map_unordered(self, items: Iterable, make_payload: Callable[[object], tuple[str, str, str]],
                      on_error: Callable[[object, Exception], tuple[dict, bytes]],
                      job_id: Callable[[object], str] = str,
                      make_on_chunk: Callable[[object], Callable[[bytes], bool] | None] = lambda item: None,
                      ) -> Iterator[tuple[object, tuple[dict, bytes]]]:
        """Yield (item, answer) as jobs finish, with at most ``workers`` jobs in flight."""
        self.start()
        pending: queue.Queue = queue.Queue()
        items = list(items)

        def work(item):
            try:
                pending.put((item, self.request(make_payload(item), job_id(item), make_on_chunk(item))))
            except Exception as exc:  # noqa: BLE001 - turned into a sandbox error for that job
                pending.put((item, on_error(item, exc)))

        with ThreadPoolExecutor(self.workers) as ex:
            for item in items:
                ex.submit(work, item)
            for _ in items:
                yield pending.get()

    def close(self) -> None:
        for z in self._all:
            z.close()
        self._all.clear()
        self._started = False
