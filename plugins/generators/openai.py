"""Generator ``openai``: any OpenAI-compatible server (vLLM serve, SGLang, hosted APIs).

Options: ``base_url`` (default $OPENAI_BASE_URL, else http://127.0.0.1:8000/v1),
``api_key_env`` (the environment variable holding the key, default OPENAI_API_KEY; never
written to the run directory), ``mode`` (``chat``: the server applies the model's chat
template; ``completions``: the prompt is rendered here as ChatML, the paper's format),
``concurrency`` (requests in flight), ``n_per_request`` (samples asked for per request; 0 =
all of a prompt's samples at once, through ``n``; a server that returns fewer choices is
asked again for the rest, with another seed), ``retries`` and ``backoff`` (429, 5xx,
connection errors and timeouts are retried with exponential, jittered back-off, honouring
Retry-After; other 4xx fail at once), ``max_backoff``, ``timeout`` (seconds per request).

The ``openai`` client library does the HTTP; its own retries are off so that every retry is
counted here (``info()["retries"]``); tenacity schedules them.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Iterator

from codea1.harness.generation import (
    Generation,
    GenerationError,
    GenerationRequest,
    Generator,
    GeneratorUnavailable,
)
from codea1.harness.hookspecs import hookimpl
from codea1.harness.prompts import render_chatml


@dataclass
class OpenAIOptions:
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    mode: str = "chat"
    concurrency: int = 8
    n_per_request: int = 0
    retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 60.0
    timeout: float = 600.0

    def __post_init__(self):
        if self.mode not in ("chat", "completions"):
            raise ValueError(f"option 'mode' must be chat or completions, not {self.mode!r}")
        if self.concurrency < 1 or self.retries < 0 or self.n_per_request < 0:
            raise ValueError("options 'concurrency' >= 1, 'retries' >= 0 and 'n_per_request' >= 0")


class OpenAIGenerator(Generator):
    name = "openai"
    description = "OpenAI-compatible endpoint (chat or completions): concurrency, retries with back-off"
    Options = OpenAIOptions

    def __init__(self, options: OpenAIOptions | None = None, **kwargs):
        super().__init__(options or OpenAIOptions(), **kwargs)
        try:
            import openai
        except ImportError:
            raise GeneratorUnavailable("generator 'openai' needs the openai client: pip install 'codea1[openai]'") from None
        if not self.model:
            raise GenerationError("generator 'openai' needs --model (the model name the server serves)")
        self.openai = openai
        self.base_url = self.options.base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        # Local servers take any key; hosted APIs need theirs in the named variable.
        key = os.environ.get(self.options.api_key_env) or "EMPTY"
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=self.options.timeout)
        self.lock = threading.Lock()
        self.requests_made = 0
        self.retries = 0
        import tenacity

        self._backoff = tenacity.wait_random_exponential(multiplier=self.options.backoff, max=self.options.max_backoff)

    def identity(self):
        return {"generator": self.name, "base_url": self.base_url, "model": self.model, "mode": self.options.mode}

    def info(self) -> dict:
        return {"name": self.name, "model": self.model, "base_url": self.base_url, "mode": self.options.mode,
                "requests": self.requests_made, "retries": self.retries}

    def _retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, self.openai.APIConnectionError):  # includes timeouts
            return True
        status = getattr(exc, "status_code", None)
        return status == 429 or (isinstance(status, int) and status >= 500)

    def _wait(self, state) -> float:
        """The server's Retry-After when it sends one, else exponential back-off with jitter."""
        response = getattr(state.outcome.exception(), "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        try:
            if after is not None:
                return min(float(after), self.options.max_backoff)
        except ValueError:
            pass
        return self._backoff(state)

    def _counted_retry(self, state) -> None:
        with self.lock:
            self.retries += 1

    def _once(self, req: GenerationRequest, n: int, seed: int) -> list[Generation]:
        s = self.sampling
        common = dict(model=self.model, n=n, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                      seed=seed)
        if self.options.mode == "chat":
            reply = self.client.chat.completions.create(messages=req.messages, **common)
            texts = [(c.message.content or "", c.finish_reason or "") for c in reply.choices]
        else:
            reply = self.client.completions.create(prompt=render_chatml(req.messages), **common)
            texts = [(c.text or "", c.finish_reason or "") for c in reply.choices]
        usage = reply.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion = usage.completion_tokens if usage else 0
        out = []
        for i, (text, reason) in enumerate(texts):  # completion tokens shared out over the choices
            share = completion // len(texts) + (1 if i < completion % len(texts) else 0)
            out.append(Generation(text, prompt_tokens, share, reason))
        return out

    def _request(self, req: GenerationRequest) -> list[Generation]:
        import tenacity

        got: list[Generation] = []
        call = 0
        while len(got) < req.n:
            want = req.n - len(got)
            if self.options.n_per_request:
                want = min(want, self.options.n_per_request)
            retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(self._retryable),
                                         stop=tenacity.stop_after_attempt(self.options.retries + 1),
                                         wait=self._wait, before_sleep=self._counted_retry, reraise=True)
            try:
                answer = retrying(self._counted_once, req, want, req.seed + call)
            except Exception as exc:
                retried = retrying.statistics.get("attempt_number", 1) - 1
                raise GenerationError(f"{self.base_url}: {req.unit}: {type(exc).__name__}: {exc} "
                                      f"(after {retried} retries)") from None
            if not answer:
                raise GenerationError(f"{self.base_url}: {req.unit}: the server returned no choices")
            got.extend(answer[:want])
            call += 1
        return got

    def _counted_once(self, req: GenerationRequest, n: int, seed: int) -> list[Generation]:
        with self.lock:
            self.requests_made += 1
        return self._once(req, n, seed)

    def generate(self, requests: list[GenerationRequest]) -> Iterator[tuple[GenerationRequest, list[Generation]]]:
        pool = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="codea1-openai")
        pending = {}
        try:
            pending = {pool.submit(self._request, r): r for r in requests}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    req = pending.pop(fut)
                    yield req, fut.result()
        finally:
            # Stopped early (Ctrl-C, an error): answers still on their way are not waited for.
            pool.shutdown(wait=not pending, cancel_futures=True)

    def close(self) -> None:
        self.client.close()


@hookimpl
def codea1_register_generators(registry):
    registry.add(OpenAIGenerator)
