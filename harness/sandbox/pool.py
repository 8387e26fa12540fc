"""Client side of the zygotes: N long-lived fork servers, one job in flight on each.

Executors that confine a whole Python process (plain subprocess, firejail, bubblewrap) share
this pool and differ only in the command prefix that wraps the zygote.
"""

from __future__ import annotations

import collections
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Hashable, Iterable, Iterator, Sequence

from codea1.harness.sandbox.protocol import FRAMEWORKS, Reply, ReplyError, StreamEnded, job_line, read_frame

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
    """The zygote exited, or would not start: the job is retried once on a fresh one."""


class ZygoteUnavailable(ZygoteDied):
    """No zygote could be started: nothing ran, so no program is to blame (a sandbox error)."""


# A reply ``ReplyError`` rejected (it broke the protocol: protocol.Reply) ends its zygote and
# is the program's failure: the zygote relays what the child wrote, and frames nothing wrong
# of its own accord.


class _Zygote:
    def __init__(self, argv: list[str], env: dict):
        control_r, self.control_w = os.pipe()
        try:
            self.proc = subprocess.Popen([*argv, "--control-fd", str(control_r)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                         start_new_session=True, pass_fds=(control_r,))
        finally:
            os.close(control_r)
        self.held_tests: str | None = None  # the tests_key whose tests this zygote holds
        self.broken = False  # its stream is out of step with its jobs: never asked again
        self.running: str | None = None  # the job whose reply is being read
        self._stderr_tail: list[str] = []
        self._drainer = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drainer.start()
        try:
            self.info, _ = read_frame(self.proc.stdout)
            if self.info.get("ready") is not True:
                raise ReplyError("the first frame is not the ready report")
        except (ReplyError, OSError, ValueError) as exc:
            self.kill()
            self._drainer.join(timeout=10)  # its stdout can end before its last stderr lines are read
            raise ZygoteUnavailable(f"zygote did not start (exit {self.proc.returncode}): {exc}; "
                                    f"{self.stderr_tail()}") from None

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self._stderr_tail = (self._stderr_tail + [line.decode("utf-8", "replace")])[-50:]

    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail)[-2000:]

    def _send(self, data: bytes, reply: Reply, on_chunk) -> tuple[dict, bytes]:
        """Send one job (its line, and its tests' marshal bytes where they follow it); result
        records stream in as chunks (``on_chunk(bytes)`` returns True to cancel the job: the
        zygote then kills the child). Every frame must answer this job (``reply``)."""
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise ZygoteDied(f"zygote pipe broke: {exc}; {self.stderr_tail()}") from exc
        chunks = []
        cancelled = False
        while True:
            try:
                header, body = read_frame(self.proc.stdout)
            except (StreamEnded, OSError) as exc:
                raise ZygoteDied(f"zygote exited: {exc}; {self.stderr_tail()}") from exc
            reply.check(header)
            if not header.get("chunk"):
                return header, b"".join(chunks) + body
            chunks.append(body)
            if on_chunk is not None and not cancelled and on_chunk(body):
                cancelled = True
                self.cancel(reply.job_id)

    def cancel(self, job_id: str) -> None:
        """Have the zygote kill the child running ``job_id`` (ignored once that job ended)."""
        try:
            os.write(self.control_w, f"cancel {job_id}\n".encode())
        except OSError:  # the zygote is gone or closing: nothing runs there any more
            pass

    def request(self, head: str, tests_key: str, tests_json: str, tests_blob: Callable[[], bytes | None] | None = None,
                job_id: str = "", on_chunk=None) -> tuple[dict, bytes]:
        """``head`` is the job as a JSON object without its tests; the tests travel only when
        this zygote does not hold them (it holds the latest it was sent; should it answer
        "need_tests" all the same, they are sent): as the marshal bytes ``tests_blob()``
        returns, or as ``tests_json`` where it returns None.

        Raises ZygoteDied when the zygote exited, and ReplyError for anything else that went
        wrong while the reply was read (a frame for another job or nonce, one that does not
        parse, an error raised by ``on_chunk``): either way the zygote is ``broken`` and must
        be replaced, never asked again (the rest of its reply was not read)."""
        self.running = job_id
        try:
            return self._request(head, tests_key, tests_json, tests_blob, job_id, on_chunk)
        except ZygoteDied:
            self.broken = True
            raise
        except Exception as exc:  # noqa: BLE001 - whatever it was, this zygote's stream is out of step
            self.broken = True
            if isinstance(exc, ReplyError):
                raise
            raise ReplyError(f"{type(exc).__name__} while reading the reply: {exc}") from exc

    def _request(self, head, tests_key, tests_json, tests_blob, job_id, on_chunk) -> tuple[dict, bytes]:
        fields = f',"tests_key":"{tests_key}"'
        if tests_key == self.held_tests:
            reply = Reply(job_id, os.urandom(12).hex())
            header, body = self._send(job_line(head, fields, reply.nonce), reply, on_chunk)
            if not header.get("need_tests"):
                return header, body
        self.held_tests = None  # until the zygote has read them: a broken pipe may lose them
        blob = tests_blob() if tests_blob is not None else None
        reply = Reply(job_id, os.urandom(12).hex())
        if blob is not None:
            data = job_line(head, fields + f',"tests_marshal":{len(blob)}', reply.nonce) + blob
        else:
            data = job_line(head, fields + f',"tests":{tests_json}', reply.nonce)
        answer = self._send(data, reply, on_chunk)
        self.held_tests = tests_key
        return answer

    def kill(self) -> None:
        """End the zygote now (its session: the forker with it)."""
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.close()

    def discard(self) -> None:
        """End a zygote whose reply was not read to its end: its child is cancelled (the
        zygote kills it), its stdin closed, and what it still writes is read and dropped on
        another thread until it exits (killed should it not within 10 s)."""
        if self.running is not None:
            self.cancel(self.running)
        for close in (self.proc.stdin.close, lambda: os.close(self.control_w)):
            try:
                close()
            except OSError:
                pass

        def drain():
            try:
                while self.proc.stdout.read(1 << 16):
                    pass
            except (OSError, ValueError):
                pass

        def reap():
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

        threading.Thread(target=drain, daemon=True).start()
        threading.Thread(target=reap, daemon=True).start()

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


_NO_GROUP = object()


class _Groups:
    """Pending items by group, in the order groups first appear, and how many workers are
    on each group."""

    def __init__(self, items: Iterable, group: Callable[[object], Hashable]):
        self.pending: dict[Hashable, collections.deque] = {}
        for item in items:
            self.pending.setdefault(group(item), collections.deque()).append(item)
        self.working: collections.Counter = collections.Counter()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return sum(map(len, self.pending.values()))

    def take(self, current: Hashable):
        """The next item of ``current``'s group; else of the first group no worker is on;
        else of the first group; None when none is left."""
        with self.lock:
            if not self.pending:
                return None
            key = current
            if key not in self.pending:
                key = next((g for g in self.pending if not self.working[g]), next(iter(self.pending)))
            queue_ = self.pending[key]
            item = queue_.popleft()
            if not queue_:
                del self.pending[key]
            if key != current:
                self.working[current] -= 1
                self.working[key] += 1
            return item

    def leave(self, current: Hashable) -> None:
        with self.lock:
            self.working[current] -= 1


class ZygotePool:
    """Runs JSON job payloads on ``workers`` zygotes; ``prefix`` wraps each zygote's command
    (e.g. ``["firejail", "--quiet", ...]``)."""

    def __init__(self, workers: int, prefix: Sequence[str] = (), preload: Sequence[str] = DEFAULT_PRELOAD,
                 zygote_args: Sequence[str] = (), python: str = sys.executable, hash_seed: int = 0,
                 frameworks: Sequence[str] = FRAMEWORKS, imports: Sequence[str] = ()):
        self.workers = max(1, int(workers))
        self.hash_seed = hash_seed
        self.frameworks = tuple(frameworks)
        # A minimal environment: the initial environment block stays readable in
        # /proc/self/environ of every child, so secrets must never reach the zygote at all.
        env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
        # Set iteration order, hence output digests, alike in every zygote of the pool (the
        # seed is fixed when the interpreter starts: another seed needs another pool).
        env["PYTHONHASHSEED"] = str(int(hash_seed))
        env["PYTHONPATH"] = os.pathsep.join([*package_roots(), *sys.path[1:]])
        # -P (Python 3.11+): the working directory does not go first on the zygote's sys.path, so
        # a checkout's bare codea1/ folder cannot shadow the installed package.
        safe_path = ["-P"] if sys.version_info >= (3, 11) else []
        self._argv = [*prefix, python, *safe_path, "-m", "codea1.harness.sandbox.zygote", "--preload",
                      ",".join(preload), "--frameworks", ",".join(frameworks), "--imports", ",".join(imports),
                      *zygote_args]
        self._env = env
        self._free: queue.Queue[_Zygote] = queue.Queue()
        self._all: list[_Zygote] = []
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()  # held while zygotes start, on whichever thread
        self._started = False
        self._background: threading.Thread | None = None

    def start(self) -> dict:
        """Start the zygotes, once (a start already under way on another thread is waited
        for); returns the first one's ready report."""
        with self._start_lock:
            if not self._started:
                with ThreadPoolExecutor(self.workers) as ex:
                    starts = [ex.submit(_Zygote, self._argv, self._env) for _ in range(self.workers)]
                failed = [s.exception() for s in starts if s.exception() is not None]
                zygotes = [s.result() for s in starts if s.exception() is None]
                if failed:  # those that did start are closed: nothing holds them once this raises
                    for z in zygotes:
                        z.close()
                    raise failed[0]
                for z in zygotes:
                    self._all.append(z)
                    self._free.put(z)
                self._started = True
        return self._all[0].info

    def start_in_background(self) -> None:
        """Start the zygotes on another thread, so that they import while the caller loads
        its data; ``start`` (which every request calls) waits for them. Should they fail to
        start there, ``start`` tries again and raises to the caller that needs them."""
        def start_quietly():
            try:
                self.start()
            except Exception:  # noqa: BLE001 - raised again by the start that needs the zygotes
                pass

        if self._started or self._background is not None:
            return
        self._background = threading.Thread(target=start_quietly, name="zygote-start", daemon=True)
        self._background.start()

    def _replace(self, dead: _Zygote) -> None:
        dead.discard()
        with self._lock:
            self._all.remove(dead)
            fresh = _Zygote(self._argv, self._env)
            self._all.append(fresh)
        self._free.put(fresh)

    def _respawn(self, dead: _Zygote) -> tuple[_Zygote | None, Exception | None]:
        """Replace a dead or broken zygote; (a free zygote, None), or (None, why) when none
        starts."""
        try:
            self._replace(dead)
        except ZygoteDied as exc:
            return None, exc
        return self._free.get(), None

    def request(self, parts: tuple, job_id: str = "", on_chunk=None) -> tuple[dict, bytes]:
        """Run one job (``PayloadEncoder``'s parts: head, tests_key, tests_json and optionally
        tests_blob); a zygote that dies or breaks the protocol is replaced and the error is
        raised (ZygoteDied, ReplyError)."""
        self.start()
        zygote = self._free.get()
        try:
            answer = zygote.request(*parts, job_id=job_id, on_chunk=on_chunk)
        except (ZygoteDied, ReplyError):
            self._replace(zygote)
            raise
        self._free.put(zygote)
        return answer

    def map_unordered(self, items: Iterable, make_payload: Callable[[object], tuple],
                      on_error: Callable[[object, Exception], tuple[dict, bytes]],
                      job_id: Callable[[object], str] = str,
                      make_on_chunk: Callable[[object], Callable[[bytes], bool] | None] = lambda item: None,
                      group: Callable[[object], Hashable] = lambda item: None,
                      ) -> Iterator[tuple[object, tuple[dict, bytes]]]:
        """Yield (item, answer) as jobs finish, with at most ``workers`` jobs in flight.

        Items of one ``group`` (jobs that share their tests) go to the same zygote while it
        has work there, and a zygote that runs out starts on a group that no other zygote
        works on: each zygote then decodes and holds the tests of fewer problems, and every
        fork copies the page tables of what it holds. Only the last groups are shared."""
        self.start()
        answers: queue.Queue = queue.Queue()
        todo = _Groups(items, group)
        total = len(todo)
        # When the caller stops early (Ctrl-C, an error, a generator closed), the workers take
        # no more items and the jobs in flight are cancelled: the caller waits for a kill,
        # not for the rest of the list.
        stopping = threading.Event()
        running: dict[_Zygote, str] = {}

        def worker():
            zygote, mine, why = self._free.get(), _NO_GROUP, None
            try:
                while not stopping.is_set() and (item := todo.take(mine)) is not None:
                    mine = group(item)
                    answer = None
                    for attempt in range(2):
                        sent_to = None
                        try:
                            if zygote is None:
                                raise ZygoteUnavailable(f"no zygote could be started: {why}")
                            sent_to = zygote
                            running[sent_to] = job_id(item)
                            if stopping.is_set():  # stopped between take and here: cancel() missed it
                                break
                            answer = zygote.request(*make_payload(item), job_id=job_id(item),
                                                    on_chunk=make_on_chunk(item))
                            if attempt == 1 or not str(answer[0].get("exit", "")).startswith("sandbox:"):
                                break
                            # The zygote's own failure ("sandbox: ..."), never the program's:
                            # once more on a fresh zygote, then a sandbox error.
                            zygote, why = self._respawn(zygote)
                        except ZygoteUnavailable as exc:  # nothing ran: the machine's fault
                            answer = on_error(item, exc)
                            break
                        except ReplyError as exc:
                            # The reply broke the protocol: the zygote is ended unread, and the
                            # program fails (protocol.Reply); a fresh zygote takes its place.
                            zygote, why = self._respawn(zygote)
                            answer = ({"exit": f"protocol: {exc}"}, b"")
                            break
                        except ZygoteDied as exc:
                            zygote, why = self._respawn(zygote)
                            if attempt == 1:
                                # The worker died under this program twice: the program's doing
                                # (a sandbox error would take it out of the rewards).
                                answer = ({"exit": f"crashed: the sandbox worker died twice running this "
                                                   f"program ({exc})"}, b"")
                        except Exception as exc:  # noqa: BLE001 - the job could not be sent: a sandbox error
                            answer = on_error(item, exc)
                            break
                        finally:
                            running.pop(sent_to, None)
                    answers.put((item, answer))
            finally:
                todo.leave(mine)
                if zygote is not None:
                    self._free.put(zygote)

        ex = ThreadPoolExecutor(self.workers)
        try:
            for _ in range(min(self.workers, total)):
                ex.submit(worker)
            for _ in range(total):
                yield answers.get()
        finally:
            stopping.set()
            for zygote, job in list(running.items()):
                zygote.cancel(job)
            ex.shutdown(wait=True)

    def close(self) -> None:
        if self._background is not None:  # a start under way finishes first: its zygotes are closed too
            self._background.join()
            self._background = None
        with self._start_lock:
            for z in self._all:
                z.close()
            self._all.clear()
            self._started = False
