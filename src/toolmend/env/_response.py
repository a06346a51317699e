"""What a tool call gets back: :class:`ToolResponse`, and :class:`ToolFailure` for domain errors.

A response is always data. Whatever went wrong — an unknown tool, a missing argument, an
injected timeout, an account without funds — the environment answers with a response whose
``content`` is what a real API would have sent (an HTTP-like JSON error body) and whose
``error`` labels the problem for scorers and recovery policies.

>>> r = ToolResponse(content='{"temp_c": 18}', data={"temp_c": 18}, source="execution")
>>> r.ok
True
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ResponseSource", "ToolFailed", "ToolFailure", "ToolResponse", "error_body"]

ResponseSource = Literal["cache", "execution", "simulated", "fault", "invalid"]
"""Where a response came from, in the order CriticTool's environment tries them (cache →
execution → simulator), plus injected ``fault`` and ``invalid`` call."""


class ToolFailure(BaseModel):
    """A domain error raised by a tool: an unknown id, insufficient funds, a full flight.

    ``kind`` is the machine label (``"not_found"``, ``"insufficient_funds"``), ``status`` the
    HTTP-like status a real service would use. A tool either returns one or raises
    :class:`ToolFailed` carrying one; the environment turns it into an error response.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str
    status: int = 400
    details: dict[str, Any] = Field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The JSON error body a real API would answer with."""
        return error_body(self.status, self.kind, self.message, **self.details)


class ToolFailed(Exception):
    """Carrier that lets a tool raise a :class:`ToolFailure` from deep inside a helper.

    It never leaves :class:`~toolmend.env.Environment`: the environment catches it and answers
    with the failure as data.
    """

    def __init__(self, failure: ToolFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def error_body(status: int | None, kind: str, message: str, **details: Any) -> dict[str, Any]:
    """An HTTP-like JSON error body: ``{"error": {"code", "type", "message", ...}}``.

    >>> error_body(404, "not_found", "no email with id 'm9'")
    {'error': {'code': 404, 'type': 'not_found', 'message': "no email with id 'm9'"}}
    """
    return {"error": {"code": status, "type": kind, "message": message, **details}}


class ToolResponse(BaseModel):
    """The environment's answer to one call.

    ``content`` is the text a model would see (JSON for structured results and errors);
    ``data`` the parsed value (``None`` when the content is not JSON); ``error`` a label such
    as ``"timeout"``, ``"missing_required"`` or ``"not_found"`` (``None`` on success);
    ``source`` where the answer came from; ``status`` the HTTP-like status code.
    """

    content: str
    data: Any = None
    error: str | None = None
    source: ResponseSource
    status: int | None = 200
    tool: str = ""
    findings: list[dict[str, Any]] = Field(default_factory=list)
    """For ``invalid`` responses: the checker's findings, dumped."""

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.error is None

    @classmethod
    def from_data(cls, data: Any, *, source: ResponseSource, tool: str = "") -> ToolResponse:
        """A success response whose content is ``data`` as compact JSON."""
        return cls(content=_dumps(data), data=data, source=source, tool=tool)

    @classmethod
    def from_error(
        cls,
        status: int | None,
        kind: str,
        message: str,
        *,
        source: ResponseSource,
        tool: str = "",
        **details: Any,
    ) -> ToolResponse:
        """An error response with an HTTP-like JSON body and ``error=kind``."""
        body = error_body(status, kind, message, **details)
        return cls(content=_dumps(body), data=body, error=kind, source=source, status=status, tool=tool)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
"""Built once: ``json.dumps`` with any option builds a new encoder on every call."""


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)
