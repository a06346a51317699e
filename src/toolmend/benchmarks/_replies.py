"""Completions → the reply text a benchmark scores, and the seed of each generation.

A benchmark scores text in its own reply format (``python`` for BFCL, ``tags`` for
Tool-Reflection-Bench, ``json``, ``nestools`` …). When a server returns calls already parsed
(native function calling, or a server with a tool parser such as vLLM or ``transformers serve``,
which moves ``<tool_call>`` blocks out of ``content`` even when the request sent no tools), the
calls are written back into that format, whatever the tool mode.

A native call whose arguments are not a JSON object is written back too, with its arguments
verbatim, so that the scorer sees a malformed call (never an abstention): BFCL's official
harness fails to decode such a reply, exactly as it fails on its own ``json.loads`` of the
arguments, and the improved scorer classifies it as an attempted call.

>>> from toolmend.models._base import Completion, RawToolCall
>>> c = Completion(raw_tool_calls=[RawToolCall(name="f", arguments='{"a": 1', error="bad JSON")])
>>> reply_text(c, "python")
'[f({"a": 1)]'

A name or argument key that Python call syntax cannot hold (``chicken dish``, a keyword) is
written as an identifier no schema offers (``chicken_dish__invalid_name``), so the reply still
decodes as the call it was, to a tool or parameter that does not exist, as BFCL's own
function-calling harness, which never writes Python, would read it:

>>> from toolmend._schema import ToolCall
>>> reply_text(Completion(tool_calls=[ToolCall(name="chicken dish", arguments={"class": 1})]), "python")
'[chicken_dish__invalid_name(class__invalid_name=1)]'
>>> epoch_seed(7, 0), epoch_seed(7, 1) == epoch_seed(7, 0), epoch_seed(None, 3)
(7, False, None)
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Callable

from toolmend._schema import ToolCall
from toolmend.formats._calls import write_calls
from toolmend.models._base import Completion

__all__ = ["epoch_seed", "reply_text", "scored_calls"]

_SENTINEL = "__toolmend_malformed_{}__"


def epoch_seed(seed: int | None, epoch: int) -> int | None:
    """The seed of generation ``epoch`` of a sample: the run seed for epoch 0 (so a one-sample run
    asks what it always asked), a distinct seed derived from ``(seed, epoch)`` for later epochs,
    and ``None`` when the user set no seed."""
    if seed is None:
        return None
    if epoch == 0:
        return seed
    digest = hashlib.sha256(f"toolmend-epoch:{seed}:{epoch}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def scored_calls(completion: Completion) -> list[ToolCall]:
    """The completion's calls in the order the server sent them, malformed ones included (their
    arguments replaced by a placeholder that :func:`reply_text` swaps for the raw text)."""
    raws = completion.raw_tool_calls
    parsed = iter(completion.tool_calls)
    if not raws or sum(r.error is None for r in raws) != len(completion.tool_calls):
        # Backends that fill only tool_calls (or disagree): the parsed calls, then the broken ones.
        out = list(completion.tool_calls)
        broken = [r for r in raws if r.error is not None]
    else:
        out, broken = [], []
        for r in raws:
            out.append(next(parsed) if r.error is None else _placeholder(r.name, len(broken)))
            if r.error is not None:
                broken.append(r)
        return out
    return out + [_placeholder(r.name, i) for i, r in enumerate(broken)]


def _placeholder(name: str, i: int) -> ToolCall:
    return ToolCall(name=name or "unknown", arguments={_SENTINEL.format(i): None})


def _identifier(name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    return re.sub(r"\W", "_", name).lstrip("0123456789") + "__invalid_name"


def _python_writable(call: ToolCall) -> ToolCall:
    name = ".".join(_identifier(part) for part in call.name.split("."))
    if name == call.name and all(_identifier(k) == k for k in call.arguments):
        return call
    return call.model_copy(
        update={"name": name, "arguments": {_identifier(k): v for k, v in call.arguments.items()}}
    )


def reply_text(
    completion: Completion,
    reply_format: str | None,
    *,
    write: Callable[[list[ToolCall]], str] | None = None,
) -> str:
    """The text to score for ``completion`` in ``reply_format``: its text when the server returned
    no parsed calls (or ``reply_format`` is ``None``), else the calls written in that format
    (``write`` overrides the writer, e.g. NesTools, whose answers need the sample's api ids);
    ``tags`` keeps the text before the calls."""
    if reply_format is None or (not completion.tool_calls and not completion.raw_tool_calls):
        return completion.text
    calls = scored_calls(completion)
    if reply_format == "python":
        calls = [_python_writable(c) for c in calls]
    text = write(calls) if write is not None else write_calls(calls, reply_format)  # type: ignore[arg-type]
    for i, raw in enumerate(r for r in completion.raw_tool_calls if r.error is not None):
        key = _SENTINEL.format(i)
        verbatim = raw.arguments if raw.arguments.strip() else '""'
        for rendered in (f'{{"{key}": null}}', f"{key}=None"):
            text = text.replace(rendered, verbatim)
    if reply_format == "tags" and completion.text.strip():
        return f"{completion.text.rstrip()}\n{text}"
    return text
