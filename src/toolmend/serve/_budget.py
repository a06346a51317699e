"""What one request may cost the proxy: hard limits checked before any work, and a CPU budget for
the work itself, run off the event loop.

Every route of the proxy takes untrusted input (a client's body, its tools, the upstream's answer
checked against them), and no request may stall another. Two pieces, used by every route:

- :class:`Limits`: sizes checked before anything costly starts (body bytes, the upstream's
  decompressed bytes, tools per request, schema bytes and depth, JSON nesting) and the time a
  client may take to send its headers and its body. :func:`check_tools` applies the tool limits;
  a refusal is a :class:`~toolmend.serve.RequestError` with status 413 (too large) or 400.
- :class:`Budget`: runs a CPU-heavy step (parsing and validating a body, compiling its tools,
  the guard's verdict) in a step thread and awaits it, so that the event loop keeps serving
  other clients. A step that uses more than ``seconds`` of CPU time is interrupted and ends as a
  :class:`BudgetExceeded` (400, code ``request_too_costly``): the client gets an OpenAI-shaped
  error, everyone else is served meanwhile.

Why threads and not a process pool: the step's result is a compiled checker (RE2 and
Rust objects that cannot cross a process boundary) and the guard's state, and most steps take
well under a millisecond. A thread holding the GIL yields it to the event loop at every switch
interval; :class:`Budget` shortens that interval while a step runs, so the loop waits at most
about a millisecond for it. Measured with ``benchmarks/proxy_isolation.py`` (docs/benchmarks.md).
The budget counts the step's own CPU time (``pthread_getcpuclockid``), not the wall clock, so a
step waiting on the upstream (a hidden re-ask) or on a busy machine is not cut short. A step
stuck inside one long native call is interrupted when that call returns; the client's answer
does not wait for it, and the size limits bound how long such a call can be.

>>> import asyncio
>>> budget = Budget(seconds=1.0)
>>> asyncio.run(budget.run(sum, range(10)))
45
>>> def forever() -> None:
...     while True:
...         pass
>>> try:
...     asyncio.run(Budget(seconds=0.05).run(forever, what="the test loop"))
... except BudgetExceeded as exc:
...     print(exc.status, exc.code)
400 request_too_costly

Inside a step, a coroutine that must run on the server's loop (an upstream call through the
proxy's session) is awaited with :meth:`Budget.on_loop`; :meth:`Budget.run_async` runs an
``async`` step (the verdict, which re-asks upstream) on a private loop in the step's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from toolmend._jsontext import MAX_DEPTH, depth
from toolmend.check._spec import MAX_SCHEMA_DEPTH
from toolmend.guard import Conversation, GuardPolicy
from toolmend.serve import _json
from toolmend.serve._protocol import RequestError, openai_error, parse_body
from toolmend.serve._verdict import Answer, Reask, Verdict, judge

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Limits",
    "check_depth",
    "check_tools",
    "judge_within",
    "parse_json",
    "read_body",
    "too_large",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")

MiB = 2**20


class Limits(BaseModel):
    """The proxy's limits (``ServeConfig.limits``; each has a ``toolmend serve`` flag).

    >>> Limits().max_tools, Limits(max_tools=8).max_tools
    (512, 8)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(64 * MiB, gt=0)
    """A client's request body; more is a 413 before it is parsed."""
    max_upstream_bytes: int = Field(64 * MiB, gt=0)
    """One upstream answer after decompression (a whole body, or a stream in all); more is a 502."""
    max_tools: int = Field(512, gt=0)
    """Tools in one request."""
    max_schema_bytes: int = Field(4 * MiB, gt=0)
    """A request's ``tools`` as JSON, in all."""
    max_schema_depth: int = Field(MAX_SCHEMA_DEPTH, gt=0, le=MAX_SCHEMA_DEPTH)
    """Nesting of one tool's ``parameters`` (at most the checker's own limit, 48)."""
    max_json_depth: int = Field(MAX_DEPTH, gt=0, le=MAX_DEPTH)
    """Nesting of a request body (at most the JSON reader's own limit, 512)."""
    check_seconds: float = Field(2.0, gt=0)
    """CPU seconds one request's checks may take (parsing and validating the body, compiling its
    tools, the guard's verdict on each answer); more is a 400 ``request_too_costly``."""
    header_timeout: float = Field(60.0, gt=0)
    """Seconds a connection may take to send a request's headers (and may stay idle between
    requests); then it is closed."""
    body_timeout: float = Field(60.0, gt=0)
    """Seconds a client may take to send a request's body once its headers arrived; then a 408."""


class BudgetExceeded(RequestError):
    """A step used more CPU time than its :class:`Budget` allows (status 400)."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(
            f"Checking {what} took more than {seconds:g} s of CPU time, the proxy's limit per request "
            "(toolmend serve --check-seconds); send smaller tools or arguments.",
            status=400, code="request_too_costly",
        )  # fmt: skip


class _Interrupt(SystemExit):
    """Raised inside a step's thread to end it. A SystemExit, so that no ``except Exception`` in
    the checker swallows it and asyncio's callbacks (the step's private loop) pass it on."""


def too_large(what: str, limit: int, unit: str, flag: str, *, param: str | None = None) -> RequestError:
    """The 413 for ``what`` beyond ``limit`` (``flag`` is the ``toolmend serve`` option that sets it).

    >>> too_large("'tools'", 2, "tools", "--max-tools", param="tools").body()["error"]["code"]
    'request_too_large'
    """
    return RequestError(f"{what} is over the proxy's limit of {limit:,} {unit} (toolmend serve {flag}).",
                        status=413, param=param, code="request_too_large")  # fmt: skip


def check_tools(tools: Any, limits: Limits, *, param: str = "tools") -> None:
    """Refuse a tool list beyond ``limits`` before anything compiles it: a 413 for too many tools or
    too many bytes, a 400 for a schema nested too deep. Anything that is not a list passes (the
    route's own validation says what is wrong with it).

    >>> check_tools([{"type": "function"}] * 3, Limits(max_tools=2))
    Traceback (most recent call last):
    ...
    toolmend.serve._protocol.RequestError: 'tools' holds 3 tools, is over the proxy's limit of 2 tools (toolmend serve --max-tools).
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str):
        return
    if len(tools) > limits.max_tools:
        raise too_large(f"'{param}' holds {len(tools):,} tools,", limits.max_tools, "tools", "--max-tools",
                        param=param)  # fmt: skip
    size = len(_json.dumps(tools))
    if size > limits.max_schema_bytes:
        raise too_large(f"'{param}' takes {size:,} bytes, which", limits.max_schema_bytes, "bytes",
                        "--max-schema-bytes", param=param)  # fmt: skip
    for i, tool in enumerate(tools):
        if depth(_schema_of(tool), limits.max_schema_depth) > limits.max_schema_depth:
            raise RequestError(
                f"{param}[{i}] has a schema nested deeper than the proxy's limit of {limits.max_schema_depth} "
                "levels (toolmend serve --max-schema-depth).", param=f"{param}[{i}]", code="invalid_schema",
            )  # fmt: skip


async def read_body(request: web.BaseRequest, limits: Limits) -> bytes:
    """The request's body, read within ``limits``: a 413 past ``max_body_bytes`` (at once when the
    declared length says so), a 408 when it does not arrive within ``body_timeout``."""
    if request.content_length is not None and request.content_length > limits.max_body_bytes:
        raise _body_too_large(limits)
    try:
        async with asyncio.timeout(limits.body_timeout):
            return await request.read()
    except TimeoutError:
        raise RequestError(f"The request body did not arrive within {limits.body_timeout:g} s (toolmend serve "
                           "--body-timeout).", status=408, code="request_timeout") from None  # fmt: skip
    except web.HTTPRequestEntityTooLarge:
        raise _body_too_large(limits) from None


def _body_too_large(limits: Limits) -> RequestError:
    return too_large("The request body", limits.max_body_bytes, "bytes", "--max-body-bytes")


def parse_json(raw: bytes, limits: Limits) -> dict[str, Any]:
    """The JSON object in a request body, nested no deeper than ``limits.max_json_depth`` (a 400
    :class:`~toolmend.serve.RequestError` saying why otherwise).

    >>> parse_json(b'{"a": [[1]]}', Limits(max_json_depth=2))
    Traceback (most recent call last):
    ...
    toolmend.serve._protocol.RequestError: The request body is nested deeper than the proxy's limit of 2 levels (toolmend serve --max-json-depth).
    """
    body = parse_body(raw)
    check_depth(body, limits)
    return body


def check_depth(body: Any, limits: Limits) -> None:
    """A 400 for a parsed body nested deeper than ``limits.max_json_depth`` (the JSON reader
    itself refuses more than 512 levels)."""
    if limits.max_json_depth < MAX_DEPTH and depth(body, limits.max_json_depth) > limits.max_json_depth:
        raise RequestError(f"The request body is nested deeper than the proxy's limit of {limits.max_json_depth} "
                           "levels (toolmend serve --max-json-depth).", code="invalid_json")  # fmt: skip


def _schema_of(tool: Any) -> Any:
    """The parameters schema in a tool of any wire shape (Chat Completions, Responses, Anthropic,
    MCP); the whole tool when none is found, so that nothing escapes the depth limit."""
    if not isinstance(tool, dict):
        return tool
    fn = tool.get("function")
    holder = fn if isinstance(fn, dict) else tool
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in holder:
            return holder[key]
    return tool


# -- the budget ------------------------------------------------------------------------------------

_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
# The same function with a NULL exception: clears a pending one.
_clear_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_SWITCH = 0.0005
"""The GIL switch interval while a step runs: the event loop waits at most this long for the GIL."""
_running = 0
_saved_switch = sys.getswitchinterval()
_switch_lock = threading.Lock()


def _enter() -> None:
    global _running, _saved_switch
    with _switch_lock:
        if _running == 0:
            _saved_switch = sys.getswitchinterval()
            sys.setswitchinterval(min(_SWITCH, _saved_switch))
        _running += 1


def _leave() -> None:
    global _running
    with _switch_lock:
        _running -= 1
        if _running == 0:
            sys.setswitchinterval(_saved_switch)


class _Worker:
    """A step thread kept between steps (starting a thread and an event loop per step would cost
    more CPU than a clean request's checks): it runs one job at a time from its queue. A job is
    interrupted only while it is the current one (``lock``), and any interruption still pending
    when it ends is cleared, so none reaches the next job; an interrupted worker ends."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.job: object | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        ready = threading.Event()
        self.ident = 0
        self.clock = 0
        self.thread = threading.Thread(target=self._main, args=(ready,), name="toolmend-budget", daemon=True)
        self.thread.start()
        ready.wait()

    def used(self) -> float:
        """CPU seconds this thread has used in all."""
        return time.clock_gettime(self.clock)

    def interrupt(self, token: object) -> None:
        with self.lock:
            if self.job is token:
                _async_exc(self.ident, _Interrupt)

    def _main(self, ready: threading.Event) -> None:
        self.ident = threading.get_ident()
        self.clock = time.pthread_getcpuclockid(self.ident)
        ready.set()
        while True:
            item = self.jobs.get()
            if item is None:
                break
            token, fn, args, settle = item
            interrupted = False
            outcome: tuple[bool, Any] | None = None
            try:
                try:
                    outcome = (True, fn(*args))
                except _Interrupt:
                    interrupted = True
                except BaseException as exc:  # handed to the awaiting task, which raises it
                    outcome = (False, exc)
                self._end(token)
            except _Interrupt:  # landed after the job's own code, before _end cleared it
                interrupted = True
                self._end(token)
            if outcome is not None:
                settle(outcome)
            if interrupted or not _park(self):
                break
        if self.loop is not None:
            with contextlib.suppress(Exception):
                self.loop.close()

    def _end(self, token: object) -> None:
        with self.lock:
            self.job = None
            _clear_exc(self.ident, None)  # an interruption not yet delivered


_IDLE: list[_Worker] = []
_IDLE_LOCK = threading.Lock()
_KEEP = 8
"""Idle step threads kept; a step never waits for a busy one (a new thread starts instead)."""


def _take() -> _Worker:
    with _IDLE_LOCK:
        if _IDLE:
            return _IDLE.pop()
    return _Worker()


def _park(worker: _Worker) -> bool:
    with _IDLE_LOCK:
        if len(_IDLE) < _KEEP:
            _IDLE.append(worker)
            return True
    return False


class Budget:
    """Runs CPU-heavy steps off the event loop, each within ``seconds`` of CPU time (see the
    module docstring). One object serves a whole server; it keeps no state per step."""

    def __init__(self, seconds: float, *, poll: float | None = None) -> None:
        self.seconds = seconds
        self.poll = poll if poll is not None else min(0.05, max(seconds / 10, 0.005))

    async def run(self, fn: Callable[..., _T], /, *args: Any, what: str = "this request") -> _T:
        """``fn(*args)`` in a step thread; its result, or what it raised. A
        :class:`BudgetExceeded` naming ``what`` when it runs past the budget. Cancelling the
        awaiting task (a client that went away) interrupts the step too."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_T] = loop.create_future()

        def resolve(outcome: tuple[bool, Any]) -> None:
            if not done.done():
                (done.set_result if outcome[0] else done.set_exception)(outcome[1])

        def settle(outcome: tuple[bool, Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(resolve, outcome)

        worker = _take()
        token = object()
        worker.job = token
        start = worker.used()
        _enter()
        worker.jobs.put((token, fn, args, settle))
        watch = loop.call_later(self.poll, self._watch, loop, worker, token, start, done, what)
        try:
            return await done
        except asyncio.CancelledError:
            worker.interrupt(token)
            raise
        finally:
            watch.cancel()
            _leave()

    def _watch(
        self,
        loop: asyncio.AbstractEventLoop,
        worker: _Worker,
        token: object,
        start: float,
        done: asyncio.Future[Any],
        what: str,
    ) -> None:
        if done.done() or worker.job is not token:
            return
        if worker.used() - start > self.seconds:
            worker.interrupt(token)
            done.set_exception(BudgetExceeded(what, self.seconds))
            loop.call_later(self.poll, _until_ended, loop, worker, token, self.poll)
            return
        loop.call_later(self.poll, self._watch, loop, worker, token, start, done, what)

    async def run_async(
        self, factory: Callable[[], Coroutine[Any, Any, _T]], /, *, what: str = "this request"
    ) -> _T:
        """:meth:`run` for an ``async`` step: ``factory()`` runs on the step thread's own event
        loop; what it must do on the server's loop goes through :meth:`on_loop`."""
        return await self.run(_run_private, factory, what=what)

    @staticmethod
    def on_loop(
        fn: Callable[_P, Awaitable[_T]], loop: asyncio.AbstractEventLoop | None = None
    ) -> Callable[_P, Coroutine[Any, Any, _T]]:
        """``fn`` (an ``async`` function of the server's loop, such as an upstream call) as one a
        step's private loop can await: each call runs on the server's loop, and the step waits
        for it without using CPU time. Call this on the server's loop (or pass ``loop``)."""
        server = loop or asyncio.get_running_loop()

        async def bridged(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            async def call() -> _T:
                return await fn(*args, **kwargs)

            future = asyncio.run_coroutine_threadsafe(call(), server)
            try:
                return await asyncio.wrap_future(future)
            finally:
                future.cancel()  # the step was interrupted: the upstream call ends too

        return bridged


_local = threading.local()


def _run_private(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(factory())


def _until_ended(loop: asyncio.AbstractEventLoop, worker: _Worker, token: object, poll: float) -> None:
    """Interrupt the step again until it ends: an exception that lands in code that swallows it
    (a garbage collector's callback reports it as "ignored") would leave the step running."""
    if worker.job is token:
        worker.interrupt(token)
        loop.call_later(poll, _until_ended, loop, worker, token, poll)


async def judge_within(
    budget: Budget,
    body: Mapping[str, Any],
    answer: Answer,
    reask: Reask,
    *,
    policy: GuardPolicy,
    shadow: bool = False,
    strict: bool = False,
    conversation: Conversation | None = None,
) -> Verdict:
    """:func:`~toolmend.serve.judge` as a budget step (call it on the server's loop; ``reask``
    runs there). Past the budget, the guard's give-up: a verdict whose ``error`` (422,
    ``request_too_costly``) every route answers as it answers any give-up; in shadow mode the
    answer passes unchanged."""
    bridged = Budget.on_loop(reask)
    try:
        return await budget.run_async(
            lambda: judge(
                body, answer, bridged, policy=policy, shadow=shadow, strict=strict, conversation=conversation
            ),  # fmt: skip
            what="the model's answer against the request's tools",
        )
    except BudgetExceeded as exc:
        if shadow:
            return Verdict("passthrough", answer.content or None, answer.tool_calls,
                           answer.finish_reason or "stop", shadow="request_too_costly")  # fmt: skip
        verdict = Verdict("aborted", None, [], "stop", findings=["request_too_costly"])
        verdict.error = openai_error(str(exc), type="tool_call_error", code="request_too_costly",
                                     findings=verdict.findings)  # fmt: skip
        return verdict
