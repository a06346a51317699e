"""A Responses API stream, assembled and rendered.

:class:`ResponseStreamAssembler` reads the upstream's events (``response.created``,
``response.output_item.added``, ``response.function_call_arguments.delta`` / ``.done``,
``response.output_item.done``, ``response.completed``) into the answer they add up to, checking
the shapes the proxy and every client read. :func:`item_events` is the other direction: the
events that announce one output item, in the order OpenAI sends them, so that a decided answer
the proxy changed goes out as a stream every client can assemble.

>>> asm = ResponseStreamAssembler()
>>> item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": ""}
>>> for ev in [{"type": "response.created", "response": {"id": "r1", "output": []}},
...            {"type": "response.output_item.added", "output_index": 0, "item": item},
...            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"a":'},
...            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": " 1}"}]:
...     asm.feed(ev)
>>> asm.output()[0]["arguments"], asm.count, asm.consistent()
('{"a": 1}', 1, True)
>>> [e["type"] for e in item_events({**item, "arguments": "{}"}, 0)]  # doctest: +NORMALIZE_WHITESPACE
['response.output_item.added', 'response.function_call_arguments.delta',
 'response.function_call_arguments.done', 'response.output_item.done']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from toolmend.guard._responses import item_events
from toolmend.serve._upstream import UpstreamError

__all__ = ["LIFECYCLE", "TERMINAL", "ResponseStreamAssembler", "check_response", "item_events"]

TERMINAL = frozenset({"response.completed", "response.incomplete"})
"""The events that end a stream with an answer (``response.failed`` ends one without)."""
LIFECYCLE = frozenset({"response.created", "response.in_progress", "response.queued"})


def _bad(where: str, expected: str, got: Any, *, stream: bool) -> NoReturn:
    what = "the upstream sent a malformed stream event" if stream else "the upstream's answer is malformed"
    raise UpstreamError(f"{what}: {where} must be {expected}, got {type(got).__name__}", status=502,
                        kind="upstream_invalid")  # fmt: skip


def _check_item(item: Any, where: str, *, stream: bool) -> None:
    if not isinstance(item, dict):
        _bad(where, "an object", item, stream=stream)
    if item.get("type") != "function_call":
        return
    for key in ("name", "arguments", "call_id"):
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            _bad(f"{where}.{key}", "a string", value, stream=stream)


def check_response(data: Any, *, stream: bool = False) -> None:
    """Raise a 502 :class:`UpstreamError` when ``data`` is not a response's shape (an object
    whose ``output`` is an array of items; a function call's name and arguments strings).

    >>> check_response({"id": "r", "output": [{"type": "function_call", "name": 3}]})
    Traceback (most recent call last):
    ...
    toolmend.serve._upstream.UpstreamError: the upstream's answer is malformed: output[0].name must be a string, got int
    """
    where = "response" if stream else "the answer"
    if not isinstance(data, dict):
        _bad(where, "an object", data, stream=stream)
    output = data.get("output")
    if not isinstance(output, list):
        _bad(f"{'response.' if stream else ''}output", "an array", output, stream=stream)
    for i, item in enumerate(output):
        _check_item(item, f"{'response.' if stream else ''}output[{i}]", stream=stream)


class ResponseStreamAssembler:
    """The answer a stream of Responses events adds up to (see the module docstring)."""

    __slots__ = ("args", "count", "done_args", "finished", "items", "response", "terminal")

    def __init__(self) -> None:
        self.items: dict[int, dict[str, Any]] = {}
        """Each output item as last announced (``added``, then ``done``), by ``output_index``."""
        self.args: dict[int, list[str]] = {}
        self.done_args: dict[int, str] = {}
        self.finished: set[int] = set()
        """The items whose ``response.output_item.done`` came."""
        self.response: dict[str, Any] | None = None
        """The response as the last lifecycle event gave it (the terminal one, at the end)."""
        self.terminal: str | None = None
        self.count = 0
        """How many output items were announced."""

    def feed(self, event: Mapping[str, Any]) -> None:
        """Take one event (already parsed; a malformed one raises a 502 :class:`UpstreamError`)."""
        kind = event["type"]
        if kind in LIFECYCLE or kind in TERMINAL:
            response = event.get("response")
            if not isinstance(response, dict):
                _bad("response", "an object", response, stream=True)
            if kind in TERMINAL:
                check_response(response, stream=True)
                self.terminal = kind
            self.response = response
            return
        if not kind.startswith(("response.output_item.", "response.function_call_arguments.")):
            return
        index = event.get("output_index")
        if not isinstance(index, int):
            _bad("output_index", "an integer", index, stream=True)
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = event.get("item")
            if not isinstance(item, dict):
                _bad("item", "an object", item, stream=True)
            _check_item(item, "item", stream=True)
            if kind.endswith("added") and index not in self.items:
                self.count += 1
            elif kind.endswith("done"):
                self.finished.add(index)
            self.items[index] = dict(item)
        elif kind == "response.function_call_arguments.delta":
            delta = event.get("delta")
            if not isinstance(delta, str):
                _bad("delta", "a string", delta, stream=True)
            self.args.setdefault(index, []).append(delta)
        elif kind == "response.function_call_arguments.done":
            arguments = event.get("arguments")
            if not isinstance(arguments, str):
                _bad("arguments", "a string", arguments, stream=True)
            self.done_args[index] = arguments

    def output(self) -> list[Any]:
        """The answer's output items: the terminal response's, or (a server that leaves it out
        there) the items as the events built them."""
        final = (self.response or {}).get("output")
        if isinstance(final, list) and (final or not self.items):
            return list(final)
        out = []
        for index in sorted(self.items):
            item = dict(self.items[index])
            if item.get("type") == "function_call":
                item["arguments"] = self.done_args.get(index, "".join(self.args.get(index, [])))
            out.append(item)
        return out

    def consistent(self) -> bool:
        """Whether, for each call, the joined deltas, ``.done``, the item's ``done`` event and
        the final response say the same arguments (an upstream that streamed one call and
        reported another is re-rendered, so that the client sees one answer)."""
        final = {i: item for i, item in enumerate(self.output()) if isinstance(item, dict)}
        for index, item in self.items.items():
            if item.get("type") != "function_call":
                continue
            said = {self.done_args.get(index), final.get(index, {}).get("arguments")}
            if index in self.finished:
                said.add(item.get("arguments"))
            if index in self.args:
                said.add("".join(self.args[index]))
            said.discard(None)
            if len(said) > 1:
                return False
        return True
