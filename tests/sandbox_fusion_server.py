"""A real local HTTP server speaking Sandbox Fusion's documented API, for tests.

POST /run_code takes a RunCodeRequest ({code, language, stdin, run_timeout, ...}) and runs
the code with this machine's Python in a subprocess, as the service does in its container;
GET /v1/ping answers "pong". ``faults`` injects the service's known failure modes into the
next requests, in order: "500" (an error reply), "sandbox_error" (200 with status
SandboxError), "drop" (the connection closed without a reply), "slow" (no reply for
as long as the server lives, at most ``slow_seconds``: a client read timeout) and "ping_down" (the health check fails once).
``in_flight`` / ``peak_in_flight`` count /run_code requests being served; with ``gate`` (a
``threading.Barrier``) set, each request waits at it before running, so that exactly that
many must be in flight together.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class SandboxFusionServer:
    def __init__(self):
        self.faults: list[str] = []
        self.ping_faults = 0
        self.slow_seconds = 600.0
        self.closing = threading.Event()  # a "slow" reply waits for this: it never comes in time
        self.requests = 0
        self.pings = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.gate: threading.Barrier | None = None
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, code: int, body: bytes, content_type="application/json"):
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path != "/v1/ping":
                    return self._reply(404, b'{"detail":"Not Found"}')
                with server.lock:
                    server.pings += 1
                    down = server.ping_faults > 0
                    server.ping_faults -= down
                if down:
                    return self._reply(503, b"unavailable", "text/plain")
                self._reply(200, b'"pong"')

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/run_code":
                    return self._reply(404, b'{"detail":"Not Found"}')
                with server.lock:
                    server.requests += 1
                    fault = server.faults.pop(0) if server.faults else None
                if fault == "500":
                    return self._reply(500, b"Internal Server Error", "text/plain")
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                if fault == "slow":
                    server.closing.wait(server.slow_seconds)
                if fault == "sandbox_error":
                    return self._reply(200, json.dumps({"status": "SandboxError", "message": "pod lost",
                                                        "run_result": None}).encode())
                with server.lock:
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    if server.gate is not None:
                        server.gate.wait(timeout=120)
                    reply = server.run_code(json.loads(body))
                finally:
                    with server.lock:
                        server.in_flight -= 1
                self._reply(200, json.dumps(reply).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @staticmethod
    def run_code(request: dict) -> dict:
        if request.get("language") != "python":
            return {"status": "SandboxError", "message": f"unsupported language {request.get('language')}"}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "main.py"
            path.write_text(request["code"])
            start = time.monotonic()
            try:
                proc = subprocess.run([sys.executable, str(path)], input=(request.get("stdin") or "").encode(),
                                      capture_output=True, timeout=float(request.get("run_timeout", 10)), cwd=tmp,
                                      env={"PATH": "/usr/bin:/bin"})
            except subprocess.TimeoutExpired as exc:
                return {"status": "Failed", "message": "", "run_result": {
                    "status": "TimeLimitExceeded", "execution_time": time.monotonic() - start, "return_code": None,
                    "stdout": (exc.stdout or b"").decode("utf-8", "replace"),
                    "stderr": (exc.stderr or b"").decode("utf-8", "replace")}}
        return {"status": "Success" if proc.returncode == 0 else "Failed", "message": "", "run_result": {
            "status": "Finished", "execution_time": time.monotonic() - start, "return_code": proc.returncode,
            "stdout": proc.stdout.decode("utf-8", "replace"), "stderr": proc.stderr.decode("utf-8", "replace")},
            "executor_pod_name": "local", "files": {}}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
