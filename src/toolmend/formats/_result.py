"""What parsing a model's output gives back: calls, findings and the text around them.

>>> r = ParseResult(calls=[ToolCall(name="f")], format="python")
>>> r.ok
True
>>> ParseResult(format="none").ok
False
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from toolmend._schema import REFS, ErrorCode, Finding, ToolCall

__all__ = ["CallFormat", "ParseResult"]

CallFormat = Literal["auto", "openai", "json", "python", "tags", "nestools"]
"""The tool-call wire formats :func:`toolmend.formats.parse_calls` reads and
:func:`toolmend.formats.write_calls` writes; ``auto`` detects (parsing only)."""


class ParseResult(BaseModel):
    """Tool calls found in one model output, plus everything else the output said.

    Problems are :class:`~toolmend._schema.Finding` objects, never exceptions: ``invalid_format``
    when the output (or part of it) was not valid in its format — even if a call could be
    recovered, in which case the call is still in ``calls`` — and ``redundant_information`` when
    prose surrounds calls in a format that should hold calls only. Call-level findings point at
    the call through ``Finding.call`` (an index into ``calls``).
    """

    calls: list[ToolCall] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    format: str = "none"
    """The format detected or used: one of :data:`CallFormat` minus ``auto``, or ``"none"``."""
    text: str = ""
    """Prose outside the calls, with any ``<think>`` block removed."""
    think: str | None = None
    reflect: str | None = None
    """Content of a ``<reflect>`` block (Tool-Reflection-Bench)."""
    final: str | None = None
    """Content of a ``<final>`` block, or the ``args`` of a CriticTool ``FinishAction``."""
    extras: list[dict[str, Any]] = Field(default_factory=list)
    """One dict per call (same length as ``calls``): keys seen beside name and arguments,
    e.g. CriticTool's ``error``/``thought``, NesTools' ``api_id``, ``positional_args``."""
    final_extras: dict[str, Any] = Field(default_factory=dict)
    """Keys seen beside name and args on a ``FinishAction`` (CriticTool's ``thought``)."""

    @property
    def ok(self) -> bool:
        """True when at least one call or a final answer was parsed with no ``invalid_format``."""
        found = bool(self.calls) or self.final is not None
        return found and not any(f.code == "invalid_format" for f in self.findings)

    @property
    def has_calls(self) -> bool:
        """True when at least one call was parsed (possibly from a repaired output)."""
        return bool(self.calls)

    def add(self, call: ToolCall, extras: dict[str, Any] | None = None) -> int:
        """Append ``call`` (and its extras) and return its index in ``calls``."""
        self.calls.append(call)
        self.extras.append(dict(extras or {}))
        return len(self.calls) - 1

    def add_call(self, where: str, extras: dict[str, Any] | None = None, **fields: Any) -> int:
        """Append ``ToolCall(**fields)`` and return its index. Arguments nested deeper than
        :attr:`ToolCall.MAX_DEPTH <toolmend.ToolCall.MAX_DEPTH>` are a finding: the call is kept
        with no arguments. toolmend's call formats write a :class:`~toolmend.Ref` as
        ``{"$ref": target}``, so they read one back as a reference (:data:`~toolmend._schema.REFS`)."""
        try:
            call = ToolCall.model_validate(fields, context=REFS)
        except ValidationError:
            idx = self.add(ToolCall(**{**fields, "arguments": {}}), extras)
            self.flag("invalid_format", f"{where}: arguments are nested deeper than {ToolCall.MAX_DEPTH} "
                      "levels; the call is kept with no arguments", call=idx)  # fmt: skip
            return idx
        return self.add(call, extras)

    def flag(
        self,
        code: ErrorCode,
        message: str,
        *,
        call: int | None = None,
        path: str = "",
        **data: Any,
    ) -> None:
        """Record a finding (``data`` holds the raw fragment and other details)."""
        self.findings.append(Finding(code=code, message=message, call=call, path=path, data=data))

    def merge(self, other: ParseResult) -> None:
        """Append ``other``'s calls and findings, re-pointing its call indices."""
        offset = len(self.calls)
        self.calls.extend(other.calls)
        self.extras.extend(other.extras)
        for f in other.findings:
            moved = f if f.call is None else f.model_copy(update={"call": f.call + offset})
            self.findings.append(moved)
        if other.final is not None:
            self.final = other.final if self.final is None else f"{self.final}\n{other.final}"
            self.final_extras.update(other.final_extras)
