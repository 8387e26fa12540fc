"""Every byte between the parent, the zygote, its forker and the child: framing and bounded
parsing, in one place.

Parent -> zygote: one job a line (JSON), each with its ``job_id`` and a fresh ``nonce``,
the problem's tests following it as raw bytes where the line says so.

Zygote -> parent: frames. A frame is one header line (JSON, at most ``MAX_HEADER_BYTES``)
naming the job and nonce it answers, then exactly ``result_bytes`` raw bytes: the child's
result records relayed as they stream in (``{"chunk": ...}`` frames), then the job's reply.
``read_frame`` is the parent's reader; ``Reply`` checks that every frame answers the job
that was sent. Anything else (a frame for another job, a header that does not parse, a body
larger than the cap, a stream that ends) raises ``ReplyError``: the pool then ends that
zygote and never reads another job's answer from it (concurrent.futures' process pool
marks a worker that broke the protocol broken, never reuses it).

Zygote <-> forker: datagrams on a SOCK_SEQPACKET socket (``send_message``/``recv_message``),
descriptors attached.

Child -> parent: result records, one JSON object a line (``harness.sandbox.child``), read
by ``harness.verdicts.execution.RecordParser`` through ``loads_record``: bounded in size by the zygote
(``RESULT_CAP``), in nesting and items here, and never by the interpreter's recursion limit
(json's C scanner recurses; a line it gives up on is read again by ``_IterativeDecoder``).

A child whose job has script tests judged in-process first writes ``{"seal": key}``, a key
of its own made before the program loads; each of those tests' passes then carries
``"m": verdict_seal(key, i)``. The program may write records too, but it cannot name the key
(see ``harness.sandbox.child.run``): a pass without the seal is a protocol violation.

Only the standard library: the zygote imports this module.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import socket

RESULT_CAP = 256 * 1024 * 1024  # bytes of result records a job may send
MAX_HEADER_BYTES = 8 * 1024 * 1024  # a header carries up to 2 x 64 KB of output, JSON-escaped
MAX_DEPTH = 10_000  # nesting of a record (plaindata.MAX_DEPTH, plus the record's own levels)
MAX_ITEMS = 50_000_000  # values in one record
MESSAGE_BYTES = 4096  # a forker datagram
# The test frameworks a zygote can prepare (its --frameworks): unittest always, the others
# where its jobs' scripts need them.
FRAMEWORKS = ("unittest", "unittest.mock", "pytest")


class ReplyError(RuntimeError):
    """A zygote's reply broke the protocol: the zygote is ended, the job is the program's
    failure (the zygote relays what the child wrote; a trusted zygote never frames wrong)."""


class StreamEnded(ReplyError):
    """The zygote's stream ended (it exited or was killed) before the reply was whole."""


SEAL_KEY_BYTES = 32


def verdict_seal(key: bytes | None, index: int, _mac=hashlib.blake2b) -> str | None:
    """The seal of "test ``index`` passed" under a child's key; None without a key, which no
    record's seal equals. ``_mac`` is bound here, before any program ran (the child seals
    with it while the program's code is loaded)."""
    if key is None:
        return None
    return _mac(b"%d:passed" % index, key=key, digest_size=16).hexdigest()


# -- zygote -> parent ------------------------------------------------------------------------

def write_all(fd: int, data: bytes, _write=os.write) -> None:
    """All of ``data`` to the descriptor, however many writes it takes (a pipe nearly full
    takes a short write)."""
    written = _write(fd, data)
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[_write(fd, view):]


def write_frame(stream, header: dict, body: bytes = b"") -> None:
    """One header line, then exactly ``result_bytes`` raw bytes."""
    header["result_bytes"] = len(body)
    stream.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
    if body:
        stream.write(body)
    stream.flush()


def read_frame(stream) -> tuple[dict, bytes]:
    """The next frame of a zygote's stream: (header, body). Raises ``StreamEnded`` at the end
    of the stream and ``ReplyError`` for a frame that breaks the protocol."""
    line = stream.readline(MAX_HEADER_BYTES + 1)
    if not line:
        raise StreamEnded("the zygote's stream ended")
    if len(line) > MAX_HEADER_BYTES or not line.endswith(b"\n"):
        raise ReplyError("reply header too long or cut short")
    try:
        header = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ReplyError(f"reply header does not parse: {exc}") from None
    if type(header) is not dict:
        raise ReplyError("reply header is not an object")
    size = header.get("result_bytes", 0)
    if type(size) is not int or not 0 <= size <= RESULT_CAP:
        raise ReplyError(f"reply body size {str(size)[:40]} out of bounds")
    body = stream.read(size) if size else b""
    if len(body) != size:
        raise StreamEnded("reply cut short")
    return header, body


class Reply:
    """The frames that answer one job: each must name ``job_id`` and ``nonce``."""

    def __init__(self, job_id: str, nonce: str):
        self.job_id, self.nonce = job_id, nonce

    def check(self, header: dict) -> dict:
        if header.get("job_id") != self.job_id or header.get("nonce") != self.nonce:
            raise ReplyError(f"a reply for job {str(header.get('job_id'))[:80]!r} came while job "
                             f"{self.job_id[:80]!r} ran")
        return header


def job_line(head: str, fields: str, nonce: str) -> bytes:
    """A job's line: ``head`` (a JSON object) with its nonce and ``fields`` (",key:value"...)
    added."""
    return (head[:-1] + f',"nonce":"{nonce}"' + fields + "}\n").encode("utf-8", "surrogatepass")


# -- zygote <-> forker -----------------------------------------------------------------------

def send_message(sock: socket.socket, message: dict, fds=()) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], list(fds))


def recv_message(sock: socket.socket, max_fds: int = 8) -> tuple[dict | None, list[int]]:
    """(message, descriptors); (None, []) when the peer closed the socket."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE_BYTES, max_fds)
    if not data:
        return None, fds
    message = json.loads(data)
    if type(message) is not dict:
        for fd in fds:
            socket.close(fd)
        raise ValueError("a forker message is not an object")
    return message, fds


# -- child -> parent: records -----------------------------------------------------------------

MAX_INT_DIGITS = 4300  # Python's own default: str -> int costs the square of the digits


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(digits)


_SCAN = json.JSONDecoder().scan_once  # json.loads' own C scanner (strict: no raw control characters)
_SCAN_BOUNDED = json.JSONDecoder(parse_int=_bounded_int).scan_once
_LONG_DIGITS = re.compile(r"\d{%d}" % (MAX_INT_DIGITS + 1))


def scan_record(text: str, pos: int, end: int | None = None) -> tuple[object, int]:
    """One JSON value of ``text`` at ``pos`` (a line that ends before ``end``): (value, end).
    Raises ValueError where json would. A value nested deeper than json's C scanner goes (it
    recurses, and stops at the interpreter's recursion limit) is read by the iterative
    decoder, which stops at ``MAX_DEPTH`` levels whatever the recursion limit; an integer
    of more than ``MAX_INT_DIGITS`` digits is refused (the parent allows ints of any size
    in the data it loads; the child writes larger ones in hex). Linear in the line."""
    long_digits = _LONG_DIGITS.search(text, pos, len(text) if end is None else end) is not None
    try:
        return (_SCAN_BOUNDED if long_digits else _SCAN)(text, pos)
    except RecursionError:
        return _IterativeDecoder(text, pos).value()
    except StopIteration as exc:  # the C scanner's way of saying so
        raise ValueError(f"expecting a value at {exc.value}") from None


def loads_record(line: bytes | str) -> object:
    """One record line as json.loads reads it, bounded in depth and items (ValueError)."""
    text = line.decode() if isinstance(line, (bytes, bytearray)) else line
    start = _WS.match(text).end()
    value, end = scan_record(text, start, len(text))
    if _WS.match(text, end).end() != len(text):
        raise ValueError(f"extra data at {end}")
    return value


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS = {"null": None, "true": True, "false": False, "NaN": float("nan"), "Infinity": float("inf"),
              "-Infinity": float("-inf")}
_scanstring = json.decoder.scanstring


class _IterativeDecoder:
    """JSON as json.loads reads it (NaN and Infinity included), with an explicit stack."""

    def __init__(self, text: str, pos: int):
        self.text, self.pos = text, pos

    def _ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def _scalar(self):
        text, pos = self.text, self.pos
        c = text[pos:pos + 1]
        if c == '"':
            value, self.pos = _scanstring(text, pos + 1, True)
            return value
        for word in ("null", "true", "false", "NaN", "Infinity", "-Infinity"):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return _CONSTANTS[word]
        m = _NUMBER.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"expecting a value at {pos}")
        self.pos = m.end()
        integer, frac, exp = m.groups()
        return float(integer + (frac or "") + (exp or "")) if frac or exp else _bounded_int(integer)

    def value(self) -> tuple[object, int]:
        text = self.text
        stack: list = []  # open containers: [container, key awaiting its value or None]
        items = 0
        while True:
            self._ws()
            c = text[self.pos:self.pos + 1]
            if c in ("[", "{"):
                if len(stack) >= MAX_DEPTH:
                    raise ValueError(f"record nested deeper than {MAX_DEPTH}")
                self.pos += 1
                self._ws()
                close = "]" if c == "[" else "}"
                if text.startswith(close, self.pos):
                    self.pos += 1
                    value = [] if c == "[" else {}
                else:
                    stack.append([[] if c == "[" else {}, None])
                    if c == "{":
                        stack[-1][1] = self._key()
                    continue
            else:
                value = self._scalar()
            items += 1
            if items > MAX_ITEMS:
                raise ValueError(f"record holds more than {MAX_ITEMS} values")
            # Attach the value, then close every container that ends here.
            while True:
                if not stack:
                    return value, self.pos
                container, key = stack[-1]
                if type(container) is list:
                    container.append(value)
                else:
                    container[key] = value
                self._ws()
                c = text[self.pos:self.pos + 1]
                self.pos += 1
                if c == ",":
                    if type(container) is dict:
                        self._ws()
                        stack[-1][1] = self._key()
                    break
                if c != ("]" if type(container) is list else "}"):
                    raise ValueError(f"expecting ',' or a closing bracket at {self.pos - 1}")
                stack.pop()
                value = container

    def _key(self) -> str:
        self._ws()
        if not self.text.startswith('"', self.pos):
            raise ValueError(f"expecting a property name at {self.pos}")
        key, self.pos = _scanstring(self.text, self.pos + 1, True)
        self._ws()
        if not self.text.startswith(":", self.pos):
            raise ValueError(f"expecting ':' at {self.pos}")
        self.pos += 1
        return key


def dumps_tree(tree) -> str:
    """JSON text of a plain-data tree (JSON's types only) as json.dumps writes it with
    separators (",", ":"), for trees nested deeper than json's C encoder goes: an explicit
    stack, no recursion."""
    try:
        return json.dumps(tree, separators=(",", ":"))
    except RecursionError:
        return _dumps_iterative(tree)


def _dumps_iterative(tree) -> str:
    out: list[str] = []
    encode_str = json.encoder.encode_basestring_ascii
    scalar = json.JSONEncoder(separators=(",", ":")).encode
    stack = [iter((tree,))]
    closers = [""]
    while stack:
        for v in stack[-1]:
            t = type(v)
            if t is list:
                out.append("[")
                stack.append(iter(v))
                closers.append("]")
                break
            if t is dict:
                out.append("{")
                stack.append(itertools.chain.from_iterable((_Key(k), x) for k, x in v.items()))
                closers.append("}")
                break
            if t is _Key:
                out.append(encode_str(v.key) + ":")
                continue
            out.append(scalar(v))
        else:
            stack.pop()
            out.append(closers.pop())
    return _join(out)  # the commas between items, in one pass


class _Key:
    __slots__ = ("key",)

    def __init__(self, key):
        if type(key) is not str:
            raise TypeError(f"keys must be str, not {type(key).__name__}")
        self.key = key


def _join(tokens: list[str]) -> str:
    """Tokens of ``dumps_tree`` with the commas json puts between items."""
    parts: list[str] = []
    need_comma = False
    for tok in tokens:
        if tok in ("]", "}", ""):
            parts.append(tok)
            need_comma = True
            continue
        if need_comma:
            parts.append(",")
        parts.append(tok)
        need_comma = not (tok in ("[", "{") or tok.endswith(":"))
    return "".join(parts)
