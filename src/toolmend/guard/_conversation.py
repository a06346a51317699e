"""Conversations, not requests: what the guard remembers across the requests of one conversation.

A proxy sees one request at a time, but an agent's mistakes span requests: the re-ask budget is
the conversation's (eight hidden re-asks in all, not eight per request), and a model that sends
the same failing call again and again needs to be stopped, not served. A :class:`Conversation`
holds both: the re-asks used so far and, per call (tool name and arguments), how many times in a
row it failed. :class:`Conversations` finds the conversation of a request (an
``x-toolmend-session`` header, an MCP session, or the request's own earlier turns) and keeps a
bounded number of them.

The loop breaker is a finding: a :class:`~toolmend.guard.Guard` given the conversation answers a
call that already failed ``GuardPolicy.max_repeated_failures`` times with a ``duplicate_call``
finding whose text tells the model to stop, so a re-ask, ``fail_to_model`` or ``abort`` follows
as for any other problem.

>>> conv = Conversation()
>>> for _ in range(3):
...     conv.record("get_weather", {"city": "Oslo"}, ok=False)
>>> conv.failures("get_weather", {"city": "Oslo"}), conv.failures("get_weather", {"city": "Bergen"})
(3, 0)
>>> conv.loop_finding("get_weather", {"city": "Oslo"}, limit=3).message
'get_weather with these arguments failed 3 times in a row in this conversation'
>>> conv.record("get_weather", {"city": "Oslo"}, ok=True)
>>> conv.loop_finding("get_weather", {"city": "Oslo"}, limit=3) is None
True

The failures of a chat conversation are read from its history (each assistant call and the tool
result that answered it):

>>> history = [{"role": "user", "content": "Weather in Oslo?"}]
>>> for i in range(2):
...     history += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}",
...         "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
...         {"role": "tool", "tool_call_id": f"c{i}", "content": "Error: upstream timeout"}]
>>> Conversation.from_openai(history).failures("get_weather", {"city": "Oslo"})
2
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolmend._jsontext import dumps, loads
from toolmend._schema import Finding
from toolmend.guard._env import classify_fault

__all__ = ["SESSION_HEADER", "Conversation", "Conversations", "call_signature"]

SESSION_HEADER = "x-toolmend-session"
"""The request header that names a conversation explicitly (any string up to 200 characters)."""

_MAX_KEY = 200


def call_signature(name: str, arguments: Any) -> str:
    """One string per distinct call: the tool's name and its arguments as canonical JSON
    (key order does not matter; a value that is not JSON counts by its text).

    >>> call_signature("f", {"b": 1, "a": 2}) == call_signature("f", {"a": 2, "b": 1})
    True
    """
    try:
        args = dumps(arguments, sort_keys=True)
    except (TypeError, ValueError):
        args = repr(arguments)
    return f"{name}\x00{args}"


class Conversation:
    """What one conversation has used and where it failed (see the module docstring).

    ``reasks_used`` is the conversation's re-ask count (a :class:`~toolmend.guard.Guard` given the
    conversation counts into it); :meth:`record` notes how a call went; :meth:`loop_finding` is
    the loop breaker's verdict on a call about to be made.
    """

    __slots__ = ("key", "reasks_used", "_failures")

    def __init__(self, key: str | None = None) -> None:
        self.key = key
        self.reasks_used = 0
        self._failures: dict[str, int] = {}

    def __repr__(self) -> str:
        return (
            f"Conversation(key={self.key!r}, reasks_used={self.reasks_used}, failing={len(self._failures)})"
        )

    @property
    def has_failures(self) -> bool:
        """Whether any call has failed (so that a clean call costs nothing more when none has)."""
        return bool(self._failures)

    def record(self, name: str, arguments: Any, *, ok: bool) -> None:
        """Note that the call ``name(arguments)`` failed (``ok=False``: the tool reported an error,
        or the guard refused it) or succeeded, which clears its count."""
        if ok and not self._failures:
            return  # nothing to clear: a clean run costs no signature
        sig = call_signature(name, arguments)
        if ok:
            self._failures.pop(sig, None)
        else:
            self._failures[sig] = self._failures.get(sig, 0) + 1

    def failures(self, name: str, arguments: Any) -> int:
        """How many times in a row the call ``name(arguments)`` has failed."""
        return self._failures.get(call_signature(name, arguments), 0) if self._failures else 0

    def loop_finding(self, name: str, arguments: Any, *, limit: int, call: int = 0) -> Finding | None:
        """A ``duplicate_call`` finding when ``name(arguments)`` already failed ``limit`` times in a
        row (``limit`` 0: never), else ``None``."""
        n = self.failures(name, arguments)
        if not limit or n < limit:
            return None
        return Finding(
            code="duplicate_call",
            message=f"{name} with these arguments failed {n} time{'s' if n != 1 else ''} in a row in this conversation",
            call=call,
            suggestion="It was not sent again. Do not repeat this call: change its arguments, call "
            "another tool, or answer the user with what you have.",
            data={"rule": "loop", "failures": n, "loc": []},
        )

    def reset(self) -> None:
        """Forget everything: a new conversation under the same key."""
        self.reasks_used = 0
        self._failures.clear()

    def observe(self, calls: Iterable[tuple[str, Any, bool]]) -> None:
        """Replace the failures with those of ``calls``, each ``(name, arguments, ok)`` in the
        order they were made (a conversation's history, read in any protocol's shape)."""
        self._failures.clear()
        for name, arguments, ok in calls:
            self.record(name, arguments, ok=ok)

    def observe_openai(self, messages: Sequence[Any]) -> None:
        """Read the failures from an OpenAI chat history (or an Anthropic Messages one: ``tool_use``
        and ``tool_result`` blocks): each assistant tool call and the result that answered it (an
        error result, as :func:`~toolmend.guard.classify_fault` reads it, or ``is_error``, is a
        failure; any other result clears the call's count). The history is the
        truth, so what was recorded before is replaced."""
        self.observe(_openai_calls(messages))

    @classmethod
    def from_openai(cls, messages: Sequence[Any]) -> Conversation:
        """A conversation whose failures are read from an OpenAI chat history."""
        conv = cls()
        conv.observe_openai(messages)
        return conv


def _openai_calls(messages: Sequence[Any]) -> Iterable[tuple[str, Any, bool]]:
    """``(name, arguments, ok)`` for each call of an OpenAI chat history that a tool answered."""
    calls: dict[str, tuple[str, Any]] = {}
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role = m.get("role")
        blocks = (
            [b for b in m.get("content") or () if isinstance(b, Mapping)]
            if isinstance(m.get("content"), list)
            else []
        )
        if role == "assistant":
            for c in m.get("tool_calls") or ():
                fn = c.get("function") if isinstance(c, Mapping) else None
                if isinstance(fn, Mapping) and isinstance(c.get("id"), str):
                    calls[c["id"]] = (str(fn.get("name") or ""), _arguments(fn.get("arguments")))
            for b in blocks:  # Anthropic Messages: tool_use blocks
                if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    calls[b["id"]] = (str(b.get("name") or ""), _arguments(b.get("input")))
        elif role == "tool" and m.get("tool_call_id") in calls:
            name, args = calls.pop(m["tool_call_id"])
            yield name, args, classify_fault(_text(m.get("content")))[0] is None
        elif role == "user":
            for b in blocks:  # Anthropic Messages: tool_result blocks, is_error or an error's text
                if b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                    name, args = calls.pop(b["tool_use_id"])
                    failed = (
                        b.get("is_error") is True or classify_fault(_text(b.get("content")))[0] is not None
                    )
                    yield name, args, not failed


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    return "" if content is None else str(content)


class Conversations:
    """The conversations a server keeps, the least recently used dropped past ``limit``.

    >>> store = Conversations()
    >>> store.get("agent-7") is store.get("agent-7")
    True
    >>> first = [{"role": "user", "content": "hi"}]
    >>> store.for_request(first).key is None  # a first request starts a new conversation
    True
    >>> answer = {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
    ...     "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    >>> conv = store.for_request(first)
    >>> store.remember(first, answer, conv)
    >>> later = [*first, answer, {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    >>> store.for_request(later) is conv
    True
    >>> store.for_request(later, session="agent-7") is store.get("agent-7")
    True
    """

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Conversation:
        """The conversation named ``key`` (a new one the first time)."""
        key = key[:_MAX_KEY]
        with self._lock:
            conv = self._items.get(key)
            if conv is None:
                conv = self._items[key] = Conversation(key)
                while len(self._items) > self.limit:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return conv

    def for_request(self, messages: Sequence[Any], *, session: str | None = None) -> Conversation:
        """The conversation of a chat request: the one ``session`` names (the ``x-toolmend-session``
        header), else the one its earlier turns belong to (the messages up to its first assistant
        message, whose tool-call ids are unique to that answer). A request with no earlier
        assistant turn starts a new conversation, which :meth:`remember` files under its answer."""
        if session:
            return self.get(session)
        key = history_key(messages)
        return Conversation() if key is None else self.get(key)

    def remember(self, messages: Sequence[Any], answer: Mapping[str, Any] | None, conv: Conversation) -> None:
        """File a new conversation (``conv.key`` None) under the key its next request will carry:
        the request's ``messages`` followed by the ``answer`` the client got."""
        if conv.key is not None or not isinstance(answer, Mapping):
            return
        key = history_key([*messages, {"role": "assistant", **answer}])
        if key is None:
            return
        with self._lock:
            conv.key = key
            self._items[key] = conv
            while len(self._items) > self.limit:
                self._items.popitem(last=False)


def history_key(messages: Iterable[Any]) -> str | None:
    """The key of the conversation ``messages`` belong to: a hash of the turns up to the first
    assistant turn (roles, text and that turn's tool-call ids, what every client sends back
    unchanged), or ``None`` when there is no assistant turn yet.

    Chat Completions messages, Anthropic Messages (``tool_use`` blocks) and Responses input items
    (a ``function_call`` item is an assistant turn) are all read:

    >>> user = {"role": "user", "content": "hi"}
    >>> chat = history_key([user, {"role": "assistant", "content": None, "tool_calls": [{"id": "t1"}]}])
    >>> anthropic = history_key([user, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]}])
    >>> responses = history_key([user, {"type": "function_call", "call_id": "t1", "name": "f"}])
    >>> chat == anthropic == responses, history_key([user]) is None
    (True, True)
    >>> store = Conversations()  # a Responses answer filed, then found from the next input
    >>> conv = store.for_request([user])
    >>> store.remember([user], {"type": "function_call", "call_id": "t1", "name": "f"}, conv)
    >>> store.for_request([user, {"type": "function_call", "call_id": "t1", "name": "f"},
    ...                    {"type": "function_call_output", "call_id": "t1", "output": "ok"}]) is conv
    True
    """
    parts: list[Any] = []
    for m in messages:
        if not isinstance(m, Mapping):
            return None
        role = m.get("role") or m.get("type")
        content = m.get("content")
        if role in ("assistant", "function_call"):
            ids = [c.get("id") for c in m.get("tool_calls") or () if isinstance(c, Mapping)]
            if isinstance(content, list):
                ids += [
                    b.get("id") for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"
                ]
            if m.get("call_id") is not None:  # a Responses function_call item
                ids.append(m.get("call_id"))
                content = None
            parts.append(["assistant", _text(content), ids])
            digest = hashlib.blake2b(
                dumps(parts).encode("utf-8", "surrogatepass"), digest_size=16
            ).hexdigest()
            return "history:" + digest
        parts.append([role, _text(content)])
    return None
