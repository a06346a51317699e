"""The MCP guard's judgement, apart from any transport: one :class:`McpSession` per MCP session
sees every JSON-RPC message in both directions and says what goes on.

- ``tools/list`` answers pass unchanged; their tools are read (``inputSchema`` into a
  :class:`~toolmend.check.Checker`, ``outputSchema`` kept) and linted: a schema the checker
  cannot use is a warning in the log, and that tool's calls pass unchecked.
- ``tools/call`` requests are checked by a :class:`~toolmend.guard.Guard` under the session's
  :class:`~toolmend.guard.Conversation`: a clean call goes on as its bytes came; a call with
  safe repairs (``"3"`` → 3, a misspelt key or tool name) goes on repaired; any other problem is
  answered here with a tool result ``isError: true`` whose text says what is wrong and what to
  send, and the server never sees the call. A name that matches no tool, not even as a close
  misspelling, is a JSON-RPC error (-32602, as the MCP specification has unknown tools) naming
  the closest tools.
- The server's ``tools/call`` results are checked against the tool's ``outputSchema``: a
  ``structuredContent`` that breaks it (or is missing) turns the result into ``isError: true``
  with the original content and a text that says what does not match. Each result also tells the
  conversation whether the call failed, for the loop breaker.
- Limits (:class:`~toolmend.serve.Limits`, the proxy's, with the same flags): a client message
  over ``max_body_bytes`` or nested deeper than ``max_json_depth`` is answered with a JSON-RPC
  error and never forwarded; a listed tool past ``max_tools``, past ``max_schema_bytes`` of
  tools in all, or with an ``inputSchema`` deeper than ``max_schema_depth`` is never compiled:
  its calls pass unchecked, with a warning in the log. A transport that runs a message's check
  as a :class:`~toolmend.serve.Budget` step answers a check past the budget with
  :meth:`McpSession.too_costly` (a ``tools/call``'s tool result ``isError: true``) and a
  ``tools/list`` answer past it with :meth:`McpSession.server_too_costly` (its calls unchecked).
- Everything else (resources, prompts, notifications, the server's own errors, requests from the
  server) passes as its bytes came. A message that is not JSON-RPC is answered with a JSON-RPC
  error and never forwarded; nothing here raises on what a peer sends.

>>> s = McpSession()
>>> s.from_client(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}').forward is not None
True
>>> tools = {"tools": [{"name": "add", "inputSchema": {"type": "object",
...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}]}
>>> _ = s.from_server(dumpb({"jsonrpc": "2.0", "id": 1, "result": tools}))
>>> s.from_client(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":"3"}}}').forward
b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":3}}}'
>>> step = s.from_client(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{}}}')
>>> step.forward is None, loads(step.reply)["result"]["isError"]
(True, True)
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmend._errors import SpecError
from toolmend._jsontext import MAX_DEPTH, depth, dumpb, loads
from toolmend.check import Checker
from toolmend.guard import Conversation, Guard, GuardPolicy, Turn
from toolmend.guard._messages import call_problem_text
from toolmend.serve._budget import Limits

__all__ = ["McpSession", "Step"]

_log = logging.getLogger("toolmend.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
"""Where a request of protocol 2026-07-28 and later states its version (no handshake)."""
_MAX_PENDING = 10_000
"""Requests awaiting the server's answer that a session keeps track of (the oldest go first)."""


@dataclass(slots=True)
class Step:
    """What to do with one client message: ``forward`` these bytes to the server, or ``reply``
    these to the client (never both). ``name`` is set when the forwarded call names another tool
    than the client's (a misspelling repaired), for transports that repeat the name in a header."""

    forward: bytes | None = None
    reply: bytes | None = None
    name: str | None = None


@dataclass(slots=True)
class _Call:
    name: str
    arguments: Any


class McpSession:
    """The guard for one MCP session (see the module docstring). Not thread-safe: one transport
    task feeds it, or one event loop."""

    def __init__(
        self,
        policy: GuardPolicy | None = None,
        *,
        conversation: Conversation | None = None,
        label: str = "",
        limits: Limits | None = None,
    ) -> None:
        self.policy = policy or GuardPolicy()
        self.limits = limits or Limits()
        self.conversation = conversation if conversation is not None else Conversation()
        self.label = label
        """How log lines name this session (the server's command or URL)."""
        self._tools: dict[str, dict[str, Any]] | None = None
        self._paging: dict[str, dict[str, Any]] = {}
        self._unchecked: set[str] = set()
        self._outputs: dict[str, dict[str, Any]] = {}
        self._guard: Guard | None = None
        self._out_checker: Checker | None = None
        self._pending: OrderedDict[str, _Call | str] = OrderedDict()
        self._modern = False
        self._current: tuple[Any, str] | None = None
        """The id and tool name of the ``tools/call`` being checked (for :meth:`too_costly`)."""
        self._reading = False
        """Whether a ``tools/list`` answer is being read (for :meth:`server_too_costly`)."""
        self._streak = 0
        """Calls refused in a row: the attempt number the guard's per-turn budget counts."""
        self.counts: dict[str, int] = {}
        """What happened so far, by kind (``accepted``, ``repaired``, ``refused``, ...)."""

    @property
    def listing(self) -> bool:
        """Whether a ``tools/list`` request awaits the server's answer (a transport holds the
        client's next messages until it arrives, so that calls sent right behind it are checked)."""
        return any(isinstance(v, str) for v in self._pending.values()) if self._pending else False

    @property
    def waiting(self) -> bool:
        """Whether any request awaits the server's answer (else :meth:`from_server` returns each
        message unread, and a transport need not run it as a budget step)."""
        return bool(self._pending)

    @property
    def tool_names(self) -> list[str]:
        """The tools the server listed (empty before its first ``tools/list`` answer)."""
        return list(self._tools or ())

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    # -- client -> server ------------------------------------------------------------------

    def from_client(self, raw: bytes) -> Step:
        """What to do with one message the client sent (one line, or one POST body)."""
        self._current = None
        limits = self.limits
        if len(raw) > limits.max_body_bytes:
            # The id from the message's head, so that the client can match the refusal to its request.
            return Step(reply=_error(_head_of(raw)[0], INVALID_REQUEST, f"toolmend mcp-guard: the message takes {len(raw):,} "
                                     f"bytes, over the guard's limit of {limits.max_body_bytes:,} bytes "
                                     "(toolmend mcp-guard --max-body-bytes)"))  # fmt: skip
        try:
            msg = loads(raw)
        except ValueError as exc:
            return Step(
                reply=_error(None, PARSE_ERROR, f"toolmend mcp-guard: the message is not JSON: {exc}")
            )
        # loads itself refuses more than MAX_DEPTH levels; a lower limit costs one more walk.
        if limits.max_json_depth < MAX_DEPTH and depth(msg, limits.max_json_depth) > limits.max_json_depth:
            rid = msg.get("id") if isinstance(msg, dict) and _id_key(msg.get("id")) is not None else None
            return Step(reply=_error(rid, INVALID_REQUEST, "toolmend mcp-guard: the message is nested deeper "
                                     f"than the guard's limit of {limits.max_json_depth} levels "
                                     "(toolmend mcp-guard --max-json-depth)"))  # fmt: skip
        if isinstance(msg, list):
            return Step(reply=_error(None, INVALID_REQUEST, "toolmend mcp-guard: JSON-RPC batches are not "
                                     "supported (MCP removed them); send one message at a time"))  # fmt: skip
        if not isinstance(msg, dict):
            return Step(reply=_error(None, INVALID_REQUEST, "toolmend mcp-guard: a JSON-RPC message must be "
                                     f"an object, got {type(msg).__name__}"))  # fmt: skip
        method = msg.get("method")
        has_id = "id" in msg and method is not None
        if not has_id or method not in ("tools/call", "tools/list"):
            return Step(forward=raw)
        key = _id_key(msg["id"])
        if key is None:
            return Step(reply=_error(None, INVALID_REQUEST, "toolmend mcp-guard: a request's id must be a "
                                     "string or a number"))  # fmt: skip
        if method == "tools/list":
            params = msg.get("params")
            cursor = params.get("cursor") if isinstance(params, dict) else None
            self._remember(key, "tools/list:more" if cursor else "tools/list")
            return Step(forward=raw)
        return self._call(msg, key, raw)

    def _remember(self, key: str, what: _Call | str) -> None:
        self._pending[key] = what
        while len(self._pending) > _MAX_PENDING:
            self._pending.popitem(last=False)

    def _call(self, msg: dict[str, Any], key: str, raw: bytes) -> Step:
        rid = msg["id"]
        params = msg.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return Step(reply=_error(rid, INVALID_PARAMS, "tools/call needs params.name, a string"))
        name = params["name"]
        self._current = (rid, name)
        meta = params.get("_meta")
        # From 2026-07-28 on a result must say it is complete; earlier clients may refuse the key.
        self._modern = isinstance(meta, dict) and _VERSION_META in meta
        args = params.get("arguments")
        if args is None:
            args = {}
        if self._tools is None or name in self._unchecked:
            # No tools/list seen yet (or a tool whose schema the checker cannot use): nothing to
            # check against, so the call goes on as it came.
            self._count("unchecked")
            self._remember(key, _Call(name, args))
            return Step(forward=raw)
        guard = self._guard_now()
        if not isinstance(args, dict):
            text = (f"The call to {name} was not run: its arguments must be a JSON object, got "
                    f"{type(args).__name__}. Call it again with the arguments as an object.")  # fmt: skip
            return self._refuse(rid, name, args, text)
        if not self.conversation.has_failures and not guard.checker.check_arguments(name, args):
            # The hot path: a clean call costs the checker's generated test, nothing more.
            self._streak = 0
            self._count("accepted")
            self._remember(key, _Call(name, args))
            return Step(forward=raw)
        attempt = min(self._streak, self.policy.max_reasks_per_turn)
        decision = guard.decide(Turn.from_native("", [{"id": str(rid), "name": name, "arguments": args}]),
                                attempt=attempt)  # fmt: skip
        if decision.action in ("accept", "repaired") and decision.calls:
            self._streak = 0
            call = decision.calls[0]
            if decision.action == "accept":
                self._count("accepted")
                self._remember(key, _Call(name, args))
                return Step(forward=raw)
            fixed = call.model_dump(mode="json")["arguments"]
            self._count("repaired")
            _log.info("%stools/call %s repaired: %s", self._where(), name,
                      "; ".join(f"{fx.action} {fx.path or fx.before}".strip() for fx in decision.fixes))  # fmt: skip
            self._remember(key, _Call(call.name, fixed))
            forward = dumpb({**msg, "params": {**params, "name": call.name, "arguments": fixed}})
            return Step(forward=forward, name=call.name if call.name != name else None)
        unknown = [f for f in decision.findings if f.code == "wrong_tool_name"]
        if unknown:
            self._count("unknown_tool")
            self.conversation.record(name, args, ok=False)
            closest = list(unknown[0].data.get("closest") or [])
            near = f" Closest: {', '.join(closest)}." if closest else ""
            return Step(reply=_error(rid, INVALID_PARAMS, f"Unknown tool: {name!r}.{near} Tools on offer: "
                                     f"{', '.join(self.tool_names)}.", {"tool": name, "closest": closest}))  # fmt: skip
        tool = guard.checker.tools.get(name)
        problem = call_problem_text(0, name, decision.findings, tool, self.tool_names,
                                    escalated=decision.escalated, max_echo=self.policy.max_echo_chars)  # fmt: skip
        _head, _, body = problem.partition("\n")
        text = f"The call to {name} was not run.\n{body}"
        if decision.action == "reask":
            text += f"\nNothing was executed. Call {name} again with the corrected arguments."
        else:
            text += f"\nNothing was executed, and this call will not be: {decision.reason}."
        return self._refuse(rid, name, args, text)

    def _refuse(self, rid: Any, name: str, args: Any, text: str) -> Step:
        self._streak += 1
        self._count("refused")
        self.conversation.record(name, args, ok=False)
        _log.info("%stools/call %s refused: %s", self._where(), name, text.replace("\n", " "))
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if self._modern:
            result["resultType"] = "complete"
        return Step(reply=dumpb({"jsonrpc": "2.0", "id": rid, "result": result}))

    def too_costly(self, raw: bytes, seconds: float) -> Step:
        """The answer to the client's message ``raw`` whose check ran past ``seconds`` of CPU
        time: a ``tools/call`` gets a tool result ``isError: true`` saying so (the server never
        sees it), any other message a JSON-RPC error.

        >>> step = McpSession().too_costly(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}', 2)
        >>> loads(step.reply)["result"]["isError"], loads(step.reply)["id"]
        (True, 7)
        """
        why = (f"checking it took more than {seconds:g} s of CPU time, the guard's limit "
               "(toolmend mcp-guard --check-seconds)")  # fmt: skip
        current, self._current = self._current, None
        if current is None:
            # Not even parsed within the budget: the id and method from the message's head, where
            # clients write them (reading the whole message again would cost the budget again).
            rid, method = _head_of(raw)
            if method != "tools/call":
                return Step(reply=_error(rid, INVALID_REQUEST, f"toolmend mcp-guard: the message was not "
                                         f"forwarded: {why}"))  # fmt: skip
            current = (rid, "")
        rid, name = current
        self._count("too_costly")
        return self._refuse(rid, name, None, f"The call{f' to {name}' if name else ''} was not run: {why}. "
                            "Nothing was executed; call it again with smaller arguments.")  # fmt: skip

    def server_too_costly(self, seconds: float) -> None:
        """The server's message whose reading ran past ``seconds`` of CPU time passed unread: a
        ``tools/list`` answer leaves every call unchecked (with a warning), as before any list.
        So does any message that ran past while a list is awaited, since it may be the list
        itself, cut short while being parsed (the pending list is still read when it comes)."""
        if not self._reading and not self.listing:
            return
        self._reading = False
        _log.warning("%stools/list: reading the server's answer took more than %g s of CPU time, the guard's "
                     "limit (toolmend mcp-guard --check-seconds); calls pass unchecked", self._where(), seconds)  # fmt: skip
        self._tools = None
        self._paging = {}
        self._unchecked = set()
        self._outputs = {}
        self._out_checker = None
        self._guard = None

    def _guard_now(self) -> Guard:
        if self._guard is None:
            tools = [_input_view(t) for n, t in (self._tools or {}).items() if n not in self._unchecked]
            self._guard = Guard(Checker.cached(tools), self.policy, conversation=self.conversation)
        return self._guard

    def _where(self) -> str:
        return f"{self.label}: " if self.label else ""

    # -- server -> client ------------------------------------------------------------------

    def from_server(self, raw: bytes) -> bytes:
        """The bytes the client gets for one message the server sent: ``raw`` itself, except a
        ``tools/call`` result whose ``structuredContent`` breaks the tool's ``outputSchema``."""
        if not self._pending:
            return raw
        try:
            msg = loads(raw)
        except ValueError:
            return raw  # the client's SDK reports the server's malformed message as it is
        if not isinstance(msg, dict) or "method" in msg or "id" not in msg:
            return raw
        key = _id_key(msg["id"])
        what = self._pending.pop(key, None) if key is not None else None
        if what is None:
            return raw
        result = msg.get("result")
        if isinstance(what, str):
            if isinstance(result, dict):
                self._tools_listed(result, more=what.endswith(":more"))
            return raw
        if not isinstance(result, dict) or result.get("isError") is True:
            self.conversation.record(what.name, what.arguments, ok=False)
            return raw
        problem = self._output_problem(what.name, result)
        if problem is None:
            self.conversation.record(what.name, what.arguments, ok=True)
            return raw
        self._count("bad_output")
        self.conversation.record(what.name, what.arguments, ok=False)
        _log.warning("%stools/call %s: %s", self._where(), what.name, problem)
        content = result.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        new = {k: v for k, v in result.items() if k != "structuredContent"}
        new["content"] = [*blocks, {"type": "text", "text": problem}]
        new["isError"] = True
        return dumpb({**msg, "result": new})

    def _output_problem(self, name: str, result: Mapping[str, Any]) -> str | None:
        schema = self._outputs.get(name)
        if schema is None:
            return None
        head = f"The tool {name} ran, but its result does not match the outputSchema it declares:"
        if "structuredContent" not in result:
            return f"{head} it has no structuredContent."
        value = result["structuredContent"]
        if not isinstance(value, dict):
            if schema.get("type") in (None, "object"):
                return f"{head} structuredContent must be an object, got {type(value).__name__}."
            return None
        if self._out_checker is None:
            return None
        try:
            findings = self._out_checker.check_arguments(name, value)
        except (SpecError, ValueError):
            return None
        if not findings:
            return None
        lines = [f"- {f.path or '(the object)'}: {f.message}" for f in findings]
        return "\n".join([head, *lines])

    def _tools_listed(self, result: Mapping[str, Any], *, more: bool) -> None:
        """Read a ``tools/list`` page: the tools, their schemas linted (warnings in the log)."""
        listed = result.get("tools")
        if not isinstance(listed, list):
            _log.warning("%stools/list answer has no 'tools' list; calls stay unchecked", self._where())
            return
        self._reading = True
        page = dict(self._paging) if more else {}
        for i, tool in enumerate(listed):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
                _log.warning("%stools/list: tools[%d] has no name; it is ignored", self._where(), i)
                continue
            page[tool["name"]] = tool
        self._paging = page
        self._tools = page
        self._unchecked = set()
        self._outputs = {}
        over = self._over_limits(page)
        for name, tool in page.items():
            problem = over.get(name) or _lint(tool)
            if problem:
                _log.warning("%stool %r: %s; its calls pass unchecked", self._where(), name, problem)
                self._unchecked.add(name)
            out = tool.get("outputSchema")
            if isinstance(out, dict) and name not in over:
                try:
                    Checker.cached([{"name": name, "inputSchema": out}]).verify()
                    self._outputs[name] = out
                except SpecError as exc:
                    _log.warning("%stool %r: outputSchema unusable (%s); its results pass unchecked",
                                 self._where(), name, exc)  # fmt: skip
        outs = [{"name": n, "inputSchema": s} for n, s in self._outputs.items()]
        self._out_checker = Checker.cached(outs) if outs else None
        self._guard = None
        self._guard_now()  # compiled here, so that a costly tool list costs the listing, not a call
        self._reading = False

    def _over_limits(self, page: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """The listed tools beyond the limits, each with why: none of them is compiled."""
        limits = self.limits
        over: dict[str, str] = {}
        total = 0
        for i, (name, tool) in enumerate(page.items()):
            if i >= limits.max_tools:
                over[name] = (f"it is past the guard's limit of {limits.max_tools:,} tools "
                              "(toolmend mcp-guard --max-tools)")  # fmt: skip
                continue
            total += len(dumpb(tool))
            if total > limits.max_schema_bytes:
                over[name] = (f"the tools up to it take {total:,} bytes, over the guard's limit of "
                              f"{limits.max_schema_bytes:,} (toolmend mcp-guard --max-schema-bytes)")  # fmt: skip
            elif depth(tool.get("inputSchema"), limits.max_schema_depth) > limits.max_schema_depth:
                over[name] = (f"its inputSchema is nested deeper than the guard's limit of "
                              f"{limits.max_schema_depth} levels (toolmend mcp-guard --max-schema-depth)")  # fmt: skip
        return over


def _input_view(tool: Mapping[str, Any]) -> dict[str, Any]:
    """What the checker needs of an MCP tool: its name, description and input schema."""
    out = {"name": tool["name"], "inputSchema": tool.get("inputSchema") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        out["description"] = tool["description"]
    return out


def _lint(tool: Mapping[str, Any]) -> str:
    """What is wrong with a listed tool's ``inputSchema`` ("" when the checker can use it)."""
    schema = tool.get("inputSchema")
    if schema is None:
        return "it has no inputSchema"
    if not isinstance(schema, dict):
        return f"its inputSchema is a {type(schema).__name__}, not a JSON Schema object"
    if schema.get("type") != "object":
        return f"its inputSchema has type {schema.get('type')!r}; MCP asks for 'object'"
    try:
        Checker.cached([_input_view(tool)]).verify()
    except SpecError as exc:
        return str(exc)
    except (TypeError, ValueError) as exc:
        return f"its inputSchema cannot be read ({exc})"
    return ""


_HEAD = 512
"""Bytes of a message :func:`_head_of` reads."""
_HEAD_FIELD = re.compile(rb'"(id|method)"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.){0,200}")')


def _head_of(raw: bytes) -> tuple[Any, str | None]:
    """The ``id`` and ``method`` of a JSON-RPC message read from its first bytes, before any
    nested object or list (``None`` for either not found there).

    >>> _head_of(b'{"jsonrpc": "2.0", "id": "a1", "method": "tools/call", "params": {"id": 2}}')
    ('a1', 'tools/call')
    >>> _head_of(b'{"params": {"id": 2}, "id": 1}')
    (None, None)
    """
    head = raw[:_HEAD]
    nested = min((i for i in (head.find(b"{", 1), head.find(b"[", 1)) if i >= 0), default=len(head))
    found: dict[bytes, Any] = {}
    for match in _HEAD_FIELD.finditer(head[:nested]):
        try:
            found.setdefault(match.group(1), loads(match.group(2)))
        except ValueError:
            continue
    rid = found.get(b"id")
    method = found.get(b"method")
    return (rid if _id_key(rid) is not None else None), (method if isinstance(method, str) else None)


def _id_key(rid: Any) -> str | None:
    """A request id as a key: 1 and "1" are different ids."""
    if isinstance(rid, bool) or not isinstance(rid, str | int | float):
        return None
    return dumpb(rid).decode()


def _error(rid: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumpb({"jsonrpc": "2.0", "id": rid, "error": error})
