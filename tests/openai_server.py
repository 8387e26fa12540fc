"""A real local HTTP server speaking the OpenAI chat and completions API, for tests.

POST /v1/chat/completions and /v1/completions answer with ``n`` choices (at most ``max_n``:
some servers ignore ``n``) and a usage block. What a choice says comes from ``answer(prompt
text, choice number, seed)``; by default the reference solution of the demo task whose
function the prompt names, in a python block, so the pipeline can be checked end to end.
``faults`` injects failures into the next requests, in order: "429" (rate limited, with
Retry-After: 0), "500", "503", "400" (a client error: never to be retried), "drop" (the
connection closed without a reply) and "ok" (a normal reply). Every request body is kept.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def demo_answer(prompt: str, choice: int, seed: int | None) -> str:
    from codea1.benchmarks.demo.problems import PROBLEMS

    for p in PROBLEMS:
        if re.search(rf"\b{re.escape(p['entry_point'])}\b", prompt):
            return f"Here is the function:\n```python\n{p['solution']}```\nIt handles every case."
    return "I do not know."


class OpenAIServer:
    def __init__(self, answer: Callable[[str, int, int | None], str] = demo_answer, max_n: int = 1000):
        self.answer = answer
        self.max_n = max_n
        self.faults: list[str] = []
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, code: int, payload: dict, headers: dict | None = None):
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.bodies.append(body)
                    server.paths.append(self.path)
                    fault = server.faults.pop(0) if server.faults else "ok"
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "429":
                    return self._reply(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                                       {"Retry-After": "0"})
                if fault in ("500", "503", "400"):
                    return self._reply(int(fault), {"error": {"message": f"injected {fault}", "type": "server"}})
                if self.path == "/v1/chat/completions":
                    prompt = "\n".join(m["content"] for m in body["messages"])
                elif self.path == "/v1/completions":
                    prompt = body["prompt"]
                else:
                    return self._reply(404, {"error": {"message": "not found"}})
                n = min(int(body.get("n") or 1), server.max_n)
                texts = [server.answer(prompt, i, body.get("seed")) for i in range(n)]
                if self.path == "/v1/chat/completions":
                    choices = [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                               for i, t in enumerate(texts)]
                    obj = "chat.completion"
                else:
                    choices = [{"index": i, "text": t, "finish_reason": "stop", "logprobs": None}
                               for i, t in enumerate(texts)]
                    obj = "text_completion"
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": sum(len(t.split()) for t in texts)}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                self._reply(200, {"id": "cmpl-test", "object": obj, "created": 0, "model": body.get("model"),
                                  "choices": choices, "usage": usage})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
