"""Reading and writing replies in a benchmark's reply format, and the checker of a sample."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from toolmend._schema import Tool, ToolCall
from toolmend.formats import parse_calls, write_calls
from toolmend.formats._result import CallFormat
from toolmend.guard import Turn

if TYPE_CHECKING:
    from toolmend.strategies._base import SolveState

__all__ = ["reply_format", "read_answer", "read_reply", "write_reply"]

# Until every benchmark declares ``reply_format``: how the runner writes native calls back.
_FALLBACK = {"bfcl": "python", "nestools": "nestools", "critictool": "json", "reflection-bench": "tags"}
_READABLE = {"python", "json", "tags", "nestools", "openai"}


def reply_format(benchmark: Any) -> str:
    """The format a benchmark's replies are in (``auto`` when it does not say)."""
    fmt = getattr(benchmark, "reply_format", None) or _FALLBACK.get(getattr(benchmark, "name", ""), "auto")
    return str(fmt)


def read_reply(text: str, fmt: str, *, native: bool = False, content: bool = False) -> Turn:
    """The reply as a guard :class:`~toolmend.guard.Turn`.

    ``native``: the tools went out natively (:attr:`~toolmend.strategies.SolveState.tool_mode`),
    so the reply's calls came through the tool-call channel and the runner wrote them in ``fmt``.
    A reply without a call is then the model's prose, an answer that calls nothing (BFCL's
    abstention) rather than a reply in the wrong format: a native turn without calls, whose text
    the guard may still rescue calls to offered tools from. ``content``: the runner saw no call
    in the channel (:attr:`~toolmend.strategies.SolveState.content_only`), so calls read from
    the text are the content's (a code snippet in the answer) and the turn is prose as well. A
    broken call (cut off, or a call-like block no reader can parse, as the runner writes a
    native call whose arguments are not JSON) stays a format error: the parsers flag those near
    misses, and plain prose has none.

    >>> read_reply("No function fits.", "python").findings[0].code
    'invalid_format'
    >>> turn = read_reply("No function fits.", "python", native=True)
    >>> turn.native, turn.calls, turn.findings
    (True, [], [])
    >>> read_reply('[f({"a": 1)]', "python", native=True).findings[0].message
    'the output is cut off inside a call'
    >>> snippet = 'Like this:\\nos.remove("a.txt")'
    >>> [c.name for c in read_reply(snippet, "python", native=True).calls]
    ['os.remove']
    >>> read_reply(snippet, "python", native=True, content=True).calls
    []
    """
    turn = Turn.from_text(text, cast(CallFormat, fmt if fmt in _READABLE else "auto"))
    if not native or (turn.calls and not content):
        return turn
    if not turn.calls and turn.findings:
        near = parse_calls(text)  # every reader: their near misses, without fmt's "not read as"
        if near.findings and not near.calls:
            return turn
    return Turn(text=text, format="native", final=turn.final)


def read_answer(text: str, fmt: str, state: SolveState) -> Turn:
    """The model's answer to the sample's own request, read as :func:`read_reply` reads it in
    the run's tool mode: in native mode an answer without calls is prose that calls nothing,
    never a reply in the wrong format. Answers to a strategy's own follow-up ask for calls in
    ``fmt`` and are read with :func:`read_reply` alone."""
    return read_reply(text, fmt, native=state.tool_mode == "native", content=text in state.content_only)


def write_reply(
    calls: Sequence[ToolCall], fmt: str, like: Turn | None = None, tools: Sequence[Tool] = ()
) -> str:
    """``calls`` written in ``fmt`` (the format ``like`` was read in when ``fmt`` is ``auto``).
    NesTools' ``api_id`` comes from the offered tool of that name (a repaired name gets its
    tool's id), else from what ``like`` carried."""
    target = (
        fmt
        if fmt in _READABLE
        else (like.format if like is not None and like.format in _READABLE else "json")
    )
    if target == "nestools":
        ids = {c.name: c.extras["api_id"] for c in (like.calls if like else []) if "api_id" in c.extras}
        ids.update({t.name: t.metadata["api_id"] for t in tools if isinstance(t.metadata.get("api_id"), int)})
        return write_calls(calls, "nestools", api_ids=ids)
    if target == "json" and like is not None and like.calls:
        # Keep what the reply carried beside each call (CriticTool's "error" label) and its key.
        key = "args" if '"args"' in like.text else "arguments"
        extras = [c.extras for c in like.calls] if len(like.calls) == len(calls) else None
        return write_calls(calls, "json", key=key, extras=extras)
    return write_calls(calls, cast(CallFormat, target))
