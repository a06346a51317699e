"""The ``traces:DIR`` source: training data from what ``toolmend serve --traces DIR`` recorded.

Each trace line holds the client's request (messages and tools), the model's original answer,
the answer the guard sent, the outcome and the labelled ``examples`` (see
:mod:`toolmend.serve._traces`). They become:

==========  ==================================================================================
``sft``     request → the answer sent, for every outcome with a desirable answer (``accepted``,
            ``repaired``, ``recovered``, …): accepted calls and the guard's repaired or
            recovered versions are the targets
``kto``     the same answers labelled desirable, and every original the guard had to change
            or refuse labelled undesirable
``refine``  request, the original, the checklist's feedback on it → the repaired/recovered
            answer; an accepted answer gives a "keep it" row (ToolACE-R keeps correct attempts)
==========  ==================================================================================

``reflect`` and ``critique`` need a gold trajectory with executed steps, which a trace does not
hold; asking for them is a :class:`~toolmend.ConfigError`.

Nothing is taken on the guard's word: the tools are the request's, and every answer is checked
again. A desirable answer must pass the parser and the checklist (else ``gold_failed``); an
undesirable one is kept only when they report a problem in it (``verified_by`` ``parser`` or
``checker``; else ``unverified:guard_<outcome>``). History turns are written in the dataset's
reply format, like every other source.

>>> from toolmend.check import Checker
>>> tools = load_tools([{"type": "function", "function": {"name": "f", "parameters": {
...     "type": "object", "properties": {"n": {"type": "integer"}}}}}])
>>> original = {"role": "assistant", "tool_calls": [
...     {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"n": "2"}'}}]}
>>> answer = TraceAnswer(original, Checker(tools), "tags")
>>> answer.verified_by, [f.code for f in answer.findings], answer.calls[0].id
('checker', ['invalid_type'], None)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from toolmend._errors import ConfigError, DatasetError, ToolmendError
from toolmend._schema import Finding, Tool, ToolCall
from toolmend.benchmarks._io import read_jsonl
from toolmend.check import Checker
from toolmend.formats import load_tools, parse_openai_message, write_calls
from toolmend.formats._result import CallFormat

__all__ = ["TRACE_KINDS", "TraceAnswer", "read_trace_file", "trace_examples"]

TRACE_KINDS: tuple[Literal["sft", "kto", "refine"], ...] = ("sft", "kto", "refine")
"""The dataset kinds a ``traces:`` source can build."""


def trace_path(spec: str) -> Path:
    """The ``traces.jsonl`` a ``traces:DIR`` source names (DIR, or the file itself)."""
    raw = spec.removeprefix("traces:")
    if not raw:
        raise ConfigError("traces: needs a folder, as in --source traces:runs/proxy")
    path = Path(raw)
    if path.is_dir():
        path = path / "traces.jsonl"
    if not path.is_file():
        raise ConfigError(f"{path}: no trace file (toolmend serve --traces DIR writes DIR/traces.jsonl)")
    return path


def read_trace_file(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for each trace line; a broken line is a :class:`DatasetError`."""
    for n, record in read_jsonl(path, objects=True):
        for key, kind in (("request", dict), ("outcome", str), ("examples", list)):
            if not isinstance(record.get(key), kind):
                raise DatasetError(
                    f"expected a {kind.__name__} (is this a toolmend serve trace?)",
                    path=path,
                    line=n,
                    field=key,
                )
        yield n, record


class TraceAnswer:
    """One assistant message of a trace, read and checked against the request's tools."""

    def __init__(self, message: Mapping[str, Any], checker: Checker, fmt: CallFormat) -> None:
        parsed = parse_openai_message(message)
        # Call ids pair calls with results on the wire; they are no part of what is learned.
        self.calls: list[ToolCall] = [c.model_copy(update={"id": None}) for c in parsed.calls]
        self.parser_findings: list[Finding] = list(parsed.findings)
        self.checker_findings: list[Finding] = checker.check(self.calls) if self.calls else []
        calls = write_calls(self.calls, fmt) if self.calls else ""
        self.text = "\n".join(p for p in (parsed.text.strip(), calls) if p)

    @property
    def findings(self) -> list[Finding]:
        return self.parser_findings + self.checker_findings

    @property
    def verified_by(self) -> str | None:
        """How a problem in it shows (``parser`` or ``checker``), ``None`` when none does."""
        if self.parser_findings:
            return "parser"
        return "checker" if self.checker_findings else None


def _history(messages: list[Any], fmt: CallFormat, path: Path, line: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise DatasetError(
                "expected chat messages with a role", path=path, line=line, field="request.messages"
            )
        role = "system" if m["role"] == "developer" else m["role"]
        if role == "assistant":
            parsed = parse_openai_message(m)
            calls = write_calls(parsed.calls, fmt) if parsed.calls else ""
            content = "\n".join(p for p in (parsed.text.strip(), calls) if p)
        else:
            raw = m.get("content")
            content = raw if isinstance(raw, str) else parse_openai_message({"content": raw}).text
        out.append({"role": role, "content": content})
    return out


def trace_examples(
    path: Path, fmt: CallFormat, limit: int | None = None
) -> Iterator[tuple[str, list[dict[str, str]], list[Tool], str, TraceAnswer | None, TraceAnswer | None]]:
    """Per trace with tools: ``(id, prompt, tools, outcome, desirable answer, undesirable original)``."""
    for count, (line, record) in enumerate(read_trace_file(path)):
        if limit is not None and count >= limit:
            return
        request = record["request"]
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise DatasetError("expected a non-empty list", path=path, line=line, field="request.messages")
        try:
            tools = load_tools(request.get("tools") or [])
        except ToolmendError as exc:
            raise DatasetError(
                f"unreadable tools: {exc}", path=path, line=line, field="request.tools"
            ) from None
        checker = Checker(tools)
        good = bad = None
        for example in record["examples"]:
            message = example.get("message") if isinstance(example, Mapping) else None
            if not isinstance(message, Mapping):
                raise DatasetError("expected {label, message}", path=path, line=line, field="examples")
            answer = TraceAnswer(message, checker, fmt)
            if example.get("label") == "desirable":
                good = answer
            elif example.get("label") == "undesirable":
                bad = answer
        prompt = _history(messages, fmt, path, line)
        yield str(record.get("id") or f"line-{line}"), prompt, tools, record["outcome"], good, bad
