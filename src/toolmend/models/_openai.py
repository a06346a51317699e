"""``openai/<model>``: any OpenAI-compatible chat-completions server over HTTP.

That covers OpenAI itself and every server speaking its protocol (vLLM, SGLang, Ollama, TGI,
hosted APIs)::

    model = OpenAIModel("Qwen/Qwen3-8B", base_url="http://localhost:8000/v1", max_connections=64)
    model = OpenAIModel("gpt-4o-mini")  # key from $OPENAI_API_KEY, base URL from $OPENAI_BASE_URL

One connection pool per model, sized by ``max_connections`` (default 16, or 4 when the base URL
is on this machine, where servers often generate one answer at a time: see
:data:`LOCAL_CONNECTIONS`); a time-out from a local server says how to send fewer at once. A
server that answered and then refuses :data:`BREAKER_THRESHOLD` connections in a row stops every
request with an :class:`~toolmend.EndpointError` naming it, instead of each being retried.
``$HTTPS_PROXY``/``$HTTP_PROXY`` and
``$NO_PROXY`` are honoured (read when the pool opens). The API key is read from the
argument, else from the environment variable ``api_key_env``; it is never part of the cache key.
Credentials in the base URL (``http://user:pass@host/v1``, a proxy with basic auth) are sent as
basic auth instead of a key from the default ``$OPENAI_API_KEY`` and kept out of every message,
cache key and manifest; together with a key given on purpose they are a ``ConfigError``.
Tools go out natively (``tool_mode="native"``, names made API-safe and mapped back, see
:mod:`toolmend.models._tool_names`) or inside the system prompt (``tool_mode="prompt"``).

Request defaults. A request that leaves them unset is sent with ``max_tokens``
(:data:`DEFAULT_MAX_TOKENS`) and ``temperature`` (:data:`DEFAULT_TEMPERATURE`, greedy), because
a server's own defaults are neither stated nor alike (llama-cpp-python samples at 0.8 and
generates to the end of its context without a ``max_tokens``). ``tool_choice="auto"`` is sent
with every request that has tools when asked for (some servers, such as llama-cpp-python's
``chatml-function-calling``, drop the tools without one). ``None`` sends nothing for that field
(``-M max_tokens=null`` for a server that refuses ``max_tokens``). These values are part of the
cache key and of a run's record (:meth:`OpenAIModel.request_defaults`)::

    model = OpenAIModel("smollm2", base_url="http://127.0.0.1:8080/v1", max_tokens=256, tool_choice="auto")

Several replicas of one model (``base_url=[url1, url2, ...]``, ``--base-url`` given several
times) share the load: each request goes to the replica with the fewest requests outstanding,
each replica has its own pool of ``max_connections`` (so the model sends up to that many times
the number of replicas at once), and a replica that refuses connections, drops them or answers
a gateway 5xx is taken out with a doubling backoff while its requests go to the others at once
(:class:`~toolmend._http.Replicas`); the run stops only when every replica is gone. Which
replica answered is nowhere in a run's identity: the cache key and the manifest hold the URLs
sorted, so their order does not matter either::

    model = OpenAIModel("Qwen/Qwen3-8B", base_url=["http://gpu1:8000/v1", "http://gpu2:8000/v1"],
                        max_connections=64)

``context_length`` (or the server's own figure from ``/models``: llama.cpp's ``n_ctx_train``,
vLLM's ``max_model_len``) lets a prompt that cannot fit fail before it is sent (see
:func:`~toolmend.models._openai_wire.estimate_prompt_tokens`).
"""

from __future__ import annotations

import asyncio
import base64
import errno
import hashlib
import os
import socket
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from toolmend._errors import ConfigError, EndpointError, ModelError
from toolmend._http import (
    Breaker,
    ConnectError,
    HTTPStatusError,
    Replica,
    Replicas,
    RetryPolicy,
    client_session,
    client_timeout,
    is_loopback,
    is_replica_failure,
    parse_retry_after,
    timeout_hint,
)
from toolmend._jsontext import dumpb, loads
from toolmend.models._base import Completion, GenerateRequest, Model, ToolMode
from toolmend.models._cache import ResponseCache
from toolmend.models._openai_wire import (
    DEFAULT_TOOL_PROMPT,
    build_chat_request,
    estimate_prompt_tokens,
    parse_chat_response,
    prompt_text,
    request_rejection,
)
from toolmend.models._tool_names import ToolNameMap

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_TEMPERATURE", "OpenAIModel"]

DEFAULT_MAX_TOKENS = 1024
"""``max_tokens`` sent when a request sets none: room for several calls, and a bound on a runaway
generation."""
DEFAULT_TEMPERATURE = 0.0
"""``temperature`` sent when a request sets none: greedy, so that a run can be repeated."""

_OPENAI_URL = "https://api.openai.com/v1"

REMOTE_CONNECTIONS = 16
"""Requests in flight by default against a server on another machine."""
LOCAL_CONNECTIONS = 4
"""Requests in flight by default against a server on this machine (a loopback base URL): local
servers often run one generation (llama-cpp-python) or a few slots (llama.cpp, Ollama) and queue
the rest, and a queued request can wait past the timeout while the server still generates for it.
Pass ``max_connections`` (``--max-connections``) to use more, for vLLM or SGLang say."""
BREAKER_THRESHOLD = 4
"""Connections refused in a row, over all requests, after which a server that had answered counts
as gone and the run stops (:class:`~toolmend._http.Breaker`)."""
_JSON = {"Content-Type": "application/json"}


def _env_proxy(url: str) -> str | None:
    # $HTTP(S)_PROXY / $NO_PROXY, as httpx honoured them; resolved once per session rather than
    # per request as aiohttp's trust_env would (it re-reads the environment every time).
    host = urllib.parse.urlsplit(url).hostname or ""
    if not host or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(urllib.parse.urlsplit(url).scheme)


def _url_login(parts: urllib.parse.SplitResult) -> tuple[str, str] | None:
    if "@" not in parts.netloc:
        return None
    return urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")


def _redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``."""
    head, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if not sep or "@" not in netloc:
        return url
    return f"{head}://***@{netloc.rpartition('@')[2]}{slash}{path}"


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        tool_mode: ToolMode = "native",
        tool_prompt: str = DEFAULT_TOOL_PROMPT,
        timeout: float = 120.0,
        max_connections: int | None = None,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        headers: dict[str, str] | None = None,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        temperature: float | None = DEFAULT_TEMPERATURE,
        tool_choice: str | None = None,
        context_length: int | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigError("openai/ needs a model name, as in openai/gpt-4o-mini")
        if api_key is None and api_key_env is not None and not os.environ.get(api_key_env):
            raise ConfigError(f"--api-key-env {api_key_env}: that environment variable is not set")
        explicit_env = api_key_env is not None
        api_key_env = api_key_env or "OPENAI_API_KEY"
        given = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
        if not given:
            raise ConfigError("base_url is an empty list: give at least one server URL")
        urls = [(u or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL).rstrip("/") for u in given]
        base = urls[0]
        if max_connections is None:
            local = all(is_loopback(u) for u in urls)
            max_connections = LOCAL_CONNECTIONS if local else REMOTE_CONNECTIONS
        per_replica = max_connections
        super().__init__(
            f"openai/{model}", cache=cache, max_connections=max_connections * len(urls), retry=retry
        )
        if tool_mode not in ("native", "prompt"):
            raise ConfigError(f"tool_mode must be 'native' or 'prompt', got {tool_mode!r}")
        if "{tools}" not in tool_prompt:
            raise ConfigError("tool_prompt must contain the placeholder {tools}")
        self.model = model
        self.base_url = base
        parsed = [_parse_url(u) for u in urls]
        if len(set(urls)) != len(urls):
            twice = next(_redact_url(u) for u in urls if urls.count(u) > 1)
            raise ConfigError(f"--base-url {twice} is given twice; each replica once")
        logins = {_url_login(p) for p in parsed}
        if len(logins) > 1:
            raise ConfigError("the replicas' URLs carry different credentials; give every one the same")
        parts = parsed[0]
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        # Credentials in the URL (a proxy with basic auth in front of the server) are sent as
        # basic auth and taken out of the URL, so that no message, cache key or manifest holds
        # them. They take the place of a key read from the default $OPENAI_API_KEY, as httpx and
        # the openai SDK let them; a key asked for (api_key=, api_key_env=) as well is ambiguous.
        login = _url_login(parts)
        if login is not None:
            urls = [urllib.parse.urlunsplit(p._replace(netloc=p.netloc.rpartition("@")[2])) for p in parsed]
            self.base_url = urls[0]
            if api_key is not None or explicit_env:
                source = "api_key=" if api_key is not None else f"${api_key_env}"
                raise ConfigError(
                    f"{_redact_url(parts.geturl())}: credentials in the URL and an API key ({source}) "
                    "would both be the Authorization header; give one of them"
                )
            key = None
        if not key and self.base_url == _OPENAI_URL:
            raise ConfigError(f"no API key for {self.base_url}: pass api_key= or set ${api_key_env}")
        self.tool_mode: ToolMode = tool_mode
        self.tool_prompt = tool_prompt
        self.timeout = timeout
        self.max_tokens = _positive_int("max_tokens", max_tokens)
        self.context_length = _positive_int("context_length", context_length)
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0
        ):
            raise ConfigError(
                f"temperature must be a number >= 0 (or null to send none), got {temperature!r}"
            )
        self.temperature = None if temperature is None else float(temperature)
        if tool_choice not in (None, "auto"):
            raise ConfigError(
                f"tool_choice must be auto (sent with every request that has tools) or null, got {tool_choice!r}"
            )
        self.tool_choice = tool_choice
        self._server_context: int | None = None
        self._context_asked = False
        self._context_pending: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        if login is not None:
            token = base64.b64encode(":".join(login).encode()).decode()
            self._headers = {"Authorization": f"Basic {token}"}
        else:
            self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._headers.update(headers or {})
        self.base_urls = urls
        """Every server of the model (one, or several replicas), as given."""
        self.replicas: Replicas | None = (
            Replicas(urls, limit=per_replica, threshold=BREAKER_THRESHOLD) if len(urls) > 1 else None
        )
        """The replica pool when there are several servers (see the module docstring)."""
        self.replica_count = len(urls)
        self._http: dict[str, aiohttp.ClientSession] = {}
        self._http_loop: asyncio.AbstractEventLoop | None = None
        self._proxy: dict[str, str | None] = {}
        # Until the server has answered once, a refused connection or a 404 means a wrong
        # --base-url rather than a passing outage: the run stops instead of retrying. Once it has,
        # the breaker stops the run when it refuses connections again and again (it died).
        self._reached = False
        # With replicas the pool is the breaker: one replica refusing connections is taken out,
        # and only every replica gone stops the run.
        self.breaker = (
            Breaker(_redact_url(self.base_url), threshold=BREAKER_THRESHOLD)
            if self.replicas is None
            else None
        )

    def cache_identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "backend": "openai",
            # Replicas serve one model: which one answers, and the order they were given in,
            # never changes the key (one URL keeps the key it always had).
            "base_url": self.base_url if self.replicas is None else sorted(self.base_urls),
            "model": self.model,
            "tool_mode": self.tool_mode,
        }
        if self.tool_mode == "prompt":
            identity["tool_prompt"] = hashlib.sha256(self.tool_prompt.encode()).hexdigest()
        identity["request_defaults"] = self.request_defaults()
        return identity

    def request_defaults(self) -> dict[str, Any]:
        """What a request that leaves these fields unset is sent with (see the module docstring).

        >>> OpenAIModel("m", base_url="http://127.0.0.1:9/v1").request_defaults()
        {'max_tokens': 1024, 'temperature': 0.0, 'tool_choice': None}
        """
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "tool_choice": self.tool_choice,
        }

    def _with_defaults(self, request: GenerateRequest) -> GenerateRequest:
        cfg = request.config
        # A request that names its own limit (max_completion_tokens too, OpenAI's newer name) keeps it.
        given = set(cfg.extra) | ({"max_tokens"} if "max_completion_tokens" in cfg.extra else set())
        fill = {k: v for k, v in (("max_tokens", self.max_tokens), ("temperature", self.temperature))
                if v is not None and getattr(cfg, k) is None and k not in given}  # fmt: skip
        update: dict[str, Any] = {"config": cfg.model_copy(update=fill)} if fill else {}
        if self.tool_choice is not None and request.tool_choice is None and request.tools:
            update["tool_choice"] = self.tool_choice
        return request.model_copy(update=update) if update else request

    async def _session(self, base: str | None = None) -> aiohttp.ClientSession:
        base = base or self.base_url
        loop = asyncio.get_running_loop()
        if self._http_loop is not loop:
            stale, stale_loop = list(self._http.values()), self._http_loop
            if stale_loop is not None and stale_loop.is_closed():
                # Sessions left behind by an earlier asyncio.run(): their sockets died with that
                # loop; closing them here only marks them closed, so that they do not warn when collected.
                for session in stale:
                    await session.close()
            self._http, self._proxy = {}, {}
            self._http_loop = loop
        known = self._http.get(base)
        if known is not None:
            return known
        # One pool per server, of its share of the connections; the semaphores (Model's, and
        # the replica pool's bound) cap the attempts, so no request ever waits for a pool slot
        # and the connect timeout is the socket's own.
        session = self._http[base] = client_session(
            limit=self.max_connections // self.replica_count,
            headers={**_JSON, **self._headers},
            timeout=client_timeout(total=None, connect=min(self.timeout, 30.0), read=self.timeout),
        )
        self._proxy[base] = _env_proxy(base)
        return session

    async def _post(
        self, url: str, body: dict[str, Any], base: str | None = None
    ) -> tuple[int, Mapping[str, str], bytes]:
        base = base or self.base_url
        session = await self._session(base)
        data = dumpb(body)
        try:
            async with session.post(url, data=data, proxy=self._proxy.get(base)) as response:
                return response.status, response.headers, await response.read()
        except TimeoutError as exc:
            hint = timeout_hint(url, connections=self.max_connections // self.replica_count)
            raise ModelError(
                f"{url}: timed out after {self.timeout:g} s ({type(exc).__name__}){hint}", retryable=True
            ) from exc
        except aiohttp.InvalidURL as exc:
            raise EndpointError(url, f"not a valid URL ({exc})") from exc
        except (aiohttp.ClientConnectorError, aiohttp.ClientSSLError) as exc:
            if not self._reached and self.replicas is None:
                raise EndpointError(url, f"cannot connect ({_reason(exc)}); check --base-url") from exc
            if isinstance(exc, aiohttp.ClientSSLError):
                raise ModelError(
                    f"{url}: connection failed ({type(exc).__name__}: {exc})", retryable=True
                ) from exc
            raise ConnectError(
                f"{url}: connection failed ({_reason(exc)})", url=url, reason=_reason(exc)
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise ModelError(
                f"{url}: connection failed ({type(exc).__name__}: {exc})", retryable=True
            ) from exc

    async def _generate(self, request: GenerateRequest) -> Completion:
        request = self._with_defaults(request)
        names = ToolNameMap(t.name for t in request.tools)
        body = build_chat_request(
            self.model, request, names=names, mode=self.tool_mode, tool_prompt=self.tool_prompt
        )
        if self.replicas is None:
            return await self._send(self.base_url, body, names)
        return await self._send_to_replicas(self.replicas, body, names)

    async def _send_to_replicas(self, pool: Replicas, body: dict[str, Any], names: ToolNameMap) -> Completion:
        """Send ``body`` to the least busy replica; when that replica fails, take it out and send
        to the next at once, each replica at most once per attempt. What is left after that (every
        replica failed this request) goes back to the retry loop and its backoff."""
        tried: set[str] = set()
        last: ModelError | None = None
        while True:
            replica: Replica | None = await pool.acquire(avoid=tried)
            if replica is None:
                assert last is not None  # nothing avoided yet: acquire waits rather than answer None
                raise last  # every other replica is out: the retry loop's backoff applies
            tried.add(replica.url)
            try:
                completion = await self._send(replica.url, body, names)
            except ModelError as exc:
                pool.release(replica, exc)
                if not is_replica_failure(exc):
                    raise
                last = exc
                continue
            except BaseException:
                pool.release(replica, None, counted=False)
                raise
            pool.release(replica, None)
            # The sends that failed over count as retries, so the totals match the servers' logs.
            return completion.model_copy(update={"retries": len(tried) - 1}) if len(tried) > 1 else completion

    async def _send(self, base: str, body: dict[str, Any], names: ToolNameMap) -> Completion:
        url = f"{base}/chat/completions"
        await self._check_context(url, body)
        status, headers, raw = await self._post(url, body, base)
        if _is_html(headers, raw):
            raise EndpointError(
                url,
                f"HTTP {status} with a web page instead of JSON; is --base-url the API root (often ending in /v1)?",
            )
        if status == 404 and not self._reached:
            snippet = raw[:200].decode("utf-8", errors="replace").replace("\n", " ")
            raise EndpointError(
                url, f"HTTP 404 (no such path or model; check --base-url and the model name): {snippet}"
            )
        rejected = request_rejection(status, raw) if status >= 400 else None
        if rejected is not None:
            # The request's own fault: never retried, never scored as the model's failure.
            raise ModelError(f"{url}: {rejected}", retryable=False, status=status)
        if status >= 400:
            snippet = raw[:300].decode("utf-8", errors="replace").replace("\n", " ")
            raise HTTPStatusError(
                f"{url}: HTTP {status}: {snippet}",
                status=status,
                retry_after=parse_retry_after(headers),
            )
        try:
            payload = loads(raw)
        except ValueError as exc:
            # A truncated or garbled body is a transport problem (proxies cut responses), not the model's.
            raise ModelError(f"{url}: response body is not valid JSON", retryable=True, status=200) from exc
        self._reached = True
        return parse_chat_response(payload, names=names)

    async def _check_context(self, url: str, body: dict[str, Any]) -> None:
        """Fail a request whose prompt cannot fit the model's context, before it is sent."""
        limit = self.context_length or await self._reported_context()
        if limit is None:
            return
        text = prompt_text(body)
        if len(text) < limit:
            return  # the estimate never exceeds the length: no need to count
        need = estimate_prompt_tokens(text)
        if need >= limit:
            source = "context_length" if self.context_length else "as the server reports it"
            raise ModelError(
                f"{url}: the prompt does not fit the model's context: at least {need} tokens (estimated "
                f"from its text and tool schemas) against {limit} tokens ({source}); not sent",
                retryable=False,
            )

    async def _reported_context(self) -> int | None:
        """The context length the server states in ``/models`` (llama.cpp's ``meta.n_ctx_train``,
        vLLM's ``max_model_len``), asked once; ``None`` when it states none or cannot say."""
        if self._context_asked:
            return self._server_context
        loop = asyncio.get_running_loop()
        pending = self._context_pending
        if pending is not None and pending[0] is loop:
            # Requests that came meanwhile wait for the one answer, and then go in the order they
            # came (a lock would let later requests overtake the ones still queued on it).
            await pending[1]
            return self._server_context
        done: asyncio.Future[None] = loop.create_future()
        self._context_pending = (loop, done)
        try:
            self._server_context = await self._ask_context()
            self._context_asked = True
        finally:
            self._context_pending = None
            done.set_result(None)
        return self._server_context

    async def _ask_context(self) -> int | None:
        session = await self._session()
        try:
            async with asyncio.timeout(min(self.timeout, 10.0)):
                async with session.get(
                    f"{self.base_url}/models", proxy=self._proxy.get(self.base_url)
                ) as response:
                    if response.status != 200:
                        return None
                    payload = loads(await response.read())
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
            return None  # the chat request says what is wrong with the server, if anything
        return _context_of(payload, self.model)

    async def aclose(self) -> None:
        sessions, loop = list(self._http.values()), self._http_loop
        self._http, self._proxy, self._http_loop = {}, {}, None
        if loop is not None and (loop is asyncio.get_running_loop() or loop.is_closed()):
            for session in sessions:
                await session.close()


def _context_of(payload: Any, model: str) -> int | None:
    """The context length a ``/models`` answer gives for ``model`` (or for its only model)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    entry = next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)
    if entry is None:
        return None
    meta = entry.get("meta")
    if not isinstance(meta, dict):
        meta = {}
    for value in (entry.get("max_model_len"), meta.get("n_ctx"), meta.get("n_ctx_train")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _parse_url(url: str) -> urllib.parse.SplitResult:
    """``url`` split, or the :class:`~toolmend.EndpointError` saying why it is not a server URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError as exc:
        raise EndpointError(_redact_url(url), f"not a valid URL ({exc})") from None
    if not valid:
        raise EndpointError(_redact_url(url), "not a valid URL: it needs http:// or https:// and a host")
    return parts


def _positive_int(name: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be a whole number >= 1 (or null), got {value!r}")
    return value


def _reason(exc: BaseException) -> str:
    """Why a connection could not be made, in words (``connection refused: nothing listens there``)."""
    inner = getattr(exc, "os_error", None) or exc
    if isinstance(inner, socket.gaierror):
        return "host name not resolved"
    known = {
        errno.ECONNREFUSED: "connection refused: nothing listens there",
        errno.EHOSTUNREACH: "host unreachable",
        errno.ENETUNREACH: "network unreachable",
    }
    return known.get(getattr(inner, "errno", None) or -1, str(inner) or type(inner).__name__)


def _is_html(headers: Mapping[str, str], raw: bytes) -> bool:
    kind = headers.get("Content-Type", headers.get("content-type", "")).lower()
    return "text/html" in kind or raw.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
