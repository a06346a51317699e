"""Streamed tool calls put back together: :class:`StreamAssembler` and :class:`ContentGate`.

Tool-call deltas are grouped by their ``index``. ``id`` and ``name`` usually come in the first
fragment only; an ``id`` that comes late is filled in, a repeated one is ignored, and a
*different* id on an index that already has one opens a new slot (some servers send every call
at index 0), so two calls never merge.

>>> a = StreamAssembler()
>>> a.add([{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}])
>>> a.add([{"index": 1, "id": "c2", "function": {"name": "g", "arguments": ""}}])
>>> a.add([{"index": 0, "function": {"arguments": ": 1}"}}])
>>> a.add([{"index": 0, "id": "c3", "function": {"name": "h", "arguments": "{}"}}])
>>> [(c.id, c.name, c.arguments) for c in a.calls()]
[('c1', 'f', '{"a": 1}'), ('c2', 'g', ''), ('c3', 'h', '{}')]

:class:`ContentGate` passes prose through at once and holds back text that may be a tool call
printed as text (``<tool_call>``, ``[TOOL_CALLS]``, or a reply that opens with ``{`` or ``[``),
so that the proxy can still turn it into ``tool_calls``:

>>> g = ContentGate()
>>> g.feed("Sure, "), g.feed("<tool_"), g.feed('call>{"name": "f"}</tool_call>'), g.held
('Sure, ', '', '', '<tool_call>{"name": "f"}</tool_call>')
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AssembledCall", "ContentGate", "StreamAssembler"]


@dataclass(slots=True)
class AssembledCall:
    """One tool call as it came out of the stream; ``arguments`` is the raw joined string."""

    index: int
    id: str | None = None
    name: str = ""
    arguments: str = ""
    type: str = "function"

    def wire(self) -> dict[str, Any]:
        """As an OpenAI ``tool_calls`` item (``id`` may still be ``None``)."""
        return {
            "id": self.id,
            "type": self.type,
            "function": {"name": self.name, "arguments": self.arguments},
        }


class StreamAssembler:
    """Collects ``delta.tool_calls`` fragments of one choice (see the module docstring)."""

    def __init__(self) -> None:
        self._slots: list[AssembledCall] = []
        self._by_index: dict[int, AssembledCall] = {}

    def add(self, deltas: Iterable[Mapping[str, Any]]) -> None:
        """Add the ``tool_calls`` list of one delta."""
        for d in deltas:
            if not isinstance(d, Mapping):
                continue
            index = d.get("index")
            cid = d.get("id") or None
            fn = d.get("function") if isinstance(d.get("function"), Mapping) else {}
            assert isinstance(fn, Mapping)
            if not isinstance(index, int):
                # No index (some servers): a new id opens a call, anything else continues the last.
                index = len(self._slots) if (cid and not self._known(cid)) or not self._slots else None
                slot = self._open(index) if index is not None else self._slots[-1]
            else:
                slot = self._by_index.get(index) or self._open(index)
                if cid and slot.id and cid != slot.id and not self._known(cid):
                    slot = self._open(index)  # a second call sent at the same index
            if cid and not slot.id:
                slot.id = cid
            if isinstance(d.get("type"), str):
                slot.type = d["type"]
            name = fn.get("name")
            if isinstance(name, str) and name and name != slot.name:
                # Names come whole in one fragment, or (rarely) in pieces before any arguments.
                slot.name = name if not slot.name or slot.arguments else slot.name + name
            args = fn.get("arguments")
            if isinstance(args, str):
                slot.arguments += args
            elif isinstance(args, Mapping):
                slot.arguments += json.dumps(args)  # some servers send decoded arguments

    def _known(self, cid: str) -> bool:
        return any(s.id == cid for s in self._slots)

    def _open(self, index: int) -> AssembledCall:
        slot = AssembledCall(index=index)
        self._slots.append(slot)
        self._by_index[index] = slot
        return slot

    def calls(self) -> list[AssembledCall]:
        """The calls in the order their first fragment arrived."""
        return list(self._slots)

    def __bool__(self) -> bool:
        return bool(self._slots)


_MARKERS = ("<tool_call>", "[TOOL_CALLS]", "<function=", "<|python_tag|>")
_OPENERS = ("{", "[", "<tool_call>", "[TOOL_CALLS]", "<function=", "<|python_tag|>", "```")


class ContentGate:
    """Decides which content may go to the client now and which is held as a possible tool call.

    :meth:`feed` returns the text that may be sent; :attr:`held` is what waits for the end of the
    answer. A reply that opens with ``{``, ``[`` or a code fence is held whole (Llama-style JSON
    calls and pythonic ``[f(a=1)]``); elsewhere only text from a call marker on is held.
    """

    def __init__(self) -> None:
        self.held = ""
        self._pending = ""
        self._started = False

    def feed(self, text: str) -> str:
        """The part of ``text`` (plus what was pending) that can be forwarded now."""
        if self.held:
            self.held += text
            return ""
        text = self._pending + text
        self._pending = ""
        if not self._started:
            stripped = text.lstrip()
            if not stripped:
                self._pending = text
                return ""
            if any(stripped.startswith(o) or o.startswith(stripped) for o in _OPENERS):
                if not any(stripped.startswith(o) for o in _OPENERS):
                    self._pending = text  # may still become a marker: wait for more
                    return ""
                self._started = True
                self.held = text
                return ""
            self._started = True
        cut = min((p for m in _MARKERS if (p := text.find(m)) >= 0), default=-1)
        if cut >= 0:
            self.held = text[cut:]
            return text[:cut]
        keep = _partial_marker(text)
        if keep:
            self._pending = text[-keep:]
            return text[:-keep]
        return text

    def flush(self) -> str:
        """At the end of the answer: text that was pending on a possible marker (not a call)."""
        out, self._pending = self._pending, ""
        return out


def _partial_marker(text: str) -> int:
    """How many trailing characters of ``text`` could start a marker."""
    best = 0
    for m in _MARKERS:
        for n in range(min(len(m) - 1, len(text)), best, -1):
            if text.endswith(m[:n]):
                best = n
                break
    return best
