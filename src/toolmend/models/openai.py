"""``openai/<model>``: any OpenAI-compatible chat-completions server over HTTP.

That covers OpenAI itself and every server speaking its protocol (vLLM, SGLang, Ollama, TGI,
hosted APIs)::

    model = OpenAIModel("Qwen/Qwen3-8B", base_url="http://localhost:8000/v1", max_connections=64)
    model = OpenAIModel("gpt-4o-mini")  # key from $OPENAI_API_KEY, base URL from $OPENAI_BASE_URL

One connection pool per model, sized by ``max_connections``. The API key is read from the
argument, else from the environment variable ``api_key_env``; it is never part of the cache key.
Tools go out natively (``tool_mode="native"``, names made API-safe and mapped back, see
:mod:`toolmend.models.tool_names`) or inside the system prompt (``tool_mode="prompt"``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import ssl
from typing import Any

import certifi
import httpx

from toolmend.errors import ConfigError, ModelError
from toolmend.models.base import Completion, GenerateRequest, Model, ToolMode
from toolmend.models.cache import ResponseCache
from toolmend.models.openai_wire import DEFAULT_TOOL_PROMPT, build_chat_request, parse_chat_response
from toolmend.models.retry import HTTPStatusError, RetryPolicy, parse_retry_after
from toolmend.models.tool_names import ToolNameMap

__all__ = ["OpenAIModel"]

_OPENAI_URL = "https://api.openai.com/v1"
_CONNECTIONS_PER_SHARD = 8


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        timeout: float = 120.0,
        max_connections: int = 16,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"openai/{model}", cache=cache, max_connections=max_connections, retry=retry)
        if tool_mode not in ("native", "prompt"):
            raise ConfigError(f"tool_mode must be 'native' or 'prompt', got {tool_mode!r}")
        if "{tools}" not in tool_prompt:
            raise ConfigError("tool_prompt must contain the placeholder {tools}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if not key and self.base_url == _OPENAI_URL:
            raise ConfigError(f"no API key for {self.base_url}: pass api_key= or set ${api_key_env}")
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers.update(headers or {})
        self._clients: list[httpx.AsyncClient] = []
        self._busy: list[int] = []
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def cache_identity(self) -> dict[str, Any]:
        identity = {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "tool_mode": self.tool_mode,
        }
        if self.tool_mode == "prompt":
            identity["tool_prompt"] = hashlib.sha256(self.tool_prompt.encode()).hexdigest()
        return identity

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if not self._clients or self._client_loop is not loop:
            # httpcore scans every pooled connection on each request (with a readability poll per idle
            # one), so one pool of 64 costs far more CPU per request than 8 pools of 8: measured in
            # docs/benchmarks/harness.md. The shards share one TLS context; the semaphore in Model
            # bounds attempts, so no request ever waits on a pool (pool timeout off).
            per = min(self.max_connections, _CONNECTIONS_PER_SHARD)
            shards = -(-self.max_connections // per)
            tls = ssl.create_default_context(cafile=certifi.where())
            self._clients = [
                httpx.AsyncClient(
                    headers=self._headers,
                    verify=tls,
                    timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 30.0), pool=None),
                    limits=httpx.Limits(max_connections=per, max_keepalive_connections=per),
                )
                for _ in range(shards)
            ]
            self._busy = [0] * shards
            self._client_loop = loop
        return self._clients[self._busy.index(min(self._busy))]

    async def _post(self, url: str, body: dict[str, Any]) -> httpx.Response:
        client = self._http()
        shard = self._clients.index(client)
        self._busy[shard] += 1
        try:
            return await client.post(url, json=body)
        finally:
            self._busy[shard] -= 1

    async def _generate(self, request: GenerateRequest) -> Completion:
        names = ToolNameMap(t.name for t in request.tools)
        body = build_chat_request(
            self.model, request, names=names, mode=self.tool_mode, tool_prompt=self.tool_prompt
        )
        url = f"{self.base_url}/chat/completions"
        try:
            response = await self._post(url, body)
        except httpx.TimeoutException as exc:
            raise ModelError(
                f"{url}: timed out after {self.timeout:g} s ({type(exc).__name__})", retryable=True
            ) from exc
        except httpx.TransportError as exc:
            raise ModelError(
                f"{url}: connection failed ({type(exc).__name__}: {exc})", retryable=True
            ) from exc
        if response.status_code >= 400:
            snippet = response.text[:300].replace("\n", " ")
            raise HTTPStatusError(
                f"{url}: HTTP {response.status_code}: {snippet}",
                status=response.status_code,
                retry_after=parse_retry_after(response.headers),
            )
        try:
            payload = response.json()
        except ValueError as exc:
            # A truncated or garbled body is a transport problem (proxies cut responses), not the model's.
            raise ModelError(f"{url}: response body is not valid JSON", retryable=True, status=200) from exc
        return parse_chat_response(payload, names=names)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        if self._client_loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()
