"""The one data model of toolmend.

Every wire format and dataset converts into these types at the edge (see :mod:`toolmend.formats`);
nothing in the middle of the package handles a foreign format's raw dicts.

>>> tool = Tool(name="get_weather", parameters={
...     "type": "object",
...     "properties": {"city": {"type": "string"}},
...     "required": ["city"],
... })
>>> tool.required
['city']
>>> call = ToolCall(name="get_weather", arguments={"city": "Paris"})
>>> call.arguments["city"]
'Paris'
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

__all__ = [
    "ERROR_CODES",
    "ErrorCode",
    "Finding",
    "Message",
    "Ref",
    "Role",
    "Sample",
    "Tool",
    "ToolCall",
    "Trajectory",
]

Role = Literal["system", "user", "assistant", "tool"]

ErrorCode = Literal[
    "wrong_tool_name",
    "missing_required",
    "invalid_type",
    "empty_value",
    "redundant_parameter",
    "invalid_format",
    "redundant_information",
    "wrong_tool_count",
    "invalid_value",
    "positional_argument",
    "duplicate_call",
]
"""The checklist's error codes: HiTEC's global checklist plus what BFCL and CriticTool need."""

ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Ref(BaseModel):
    """A reference to an earlier call's output, such as NesTools' ``"API_call_2"``.

    A call argument whose value is a ``Ref`` is not a literal string: it is filled at run time
    with what the call that bound ``target`` returned. Serialised as ``{"$ref": target}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str

    @model_serializer
    def _dump(self) -> dict[str, str]:
        return {"$ref": self.target}

    def __str__(self) -> str:
        return self.target


class Tool(_Model):
    """A tool the model may call.

    ``parameters`` is always a JSON-Schema object (``{"type": "object", "properties": ...,
    "required": [...]}``), whatever dialect the spec came in; dialect-specific types are kept
    under ``x-original-type`` (e.g. BFCL's ``float`` and ``tuple``) so that compat scorers can
    reproduce the official behaviour. Load foreign specs with :func:`toolmend.formats.load_tool`.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )
    returns: dict[str, Any] | None = None
    """JSON Schema of what the tool returns, where the spec says (NesTools ``responses``)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else the source spec carried (ids, categories, the dialect it came from)."""

    @property
    def properties(self) -> dict[str, Any]:
        """The parameter schemas by name."""
        props = self.parameters.get("properties")
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        """Names of the required parameters."""
        req = self.parameters.get("required")
        return list(req) if isinstance(req, list) else []


class ToolCall(_Model):
    """One call of a tool: a name and keyword arguments.

    ``outputs`` names the placeholders this call's results are bound to (NesTools'
    ``responses``: ``["API_call_0", "API_call_1"]``), in the order of ``output_fields`` when
    those are known. Later calls refer to them through :class:`Ref` argument values.
    """

    MAX_DEPTH: ClassVar[int] = 100
    """Deepest nesting ``arguments`` may have (the arguments object is level 1). A call nested
    deeper is refused (a ``ValidationError`` naming the limit): no real tool takes such a value,
    and every consumer of a call (validation, copies, JSON writers) can then walk it without
    exhausting Python's stack."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    outputs: list[str] = Field(default_factory=list)
    output_fields: list[str] = Field(default_factory=list)

    @field_validator("arguments", mode="before")
    @classmethod
    def _revive_refs(cls, value: Any) -> Any:
        # Dumped Refs come back as {"$ref": "API_call_0"}; turn them into Refs again so that a
        # dump/validate round trip is lossless. The same walk stops a value nested too deep.
        if not isinstance(value, dict):
            return value
        try:
            return _revive(value, cls.MAX_DEPTH)
        except _TooDeep:
            raise ValueError(f"arguments are nested deeper than {cls.MAX_DEPTH} levels") from None


class _TooDeep(Exception):  # noqa: N818 - never leaves ToolCall's validator
    pass


def _revive(value: Any, room: int) -> Any:
    if isinstance(value, dict):
        if not room:
            raise _TooDeep
        if len(value) == 1 and isinstance(value.get("$ref"), str):
            return Ref(target=value["$ref"])
        return {k: _revive(v, room - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if not room:
            raise _TooDeep
        return [_revive(v, room - 1) for v in value] if isinstance(value, list) else value
    return value


class Finding(_Model):
    """One problem found in a model's tool calls — data, never an exception.

    ``call`` is the index of the offending call in the parsed list (``None`` for problems of
    the output as a whole, such as an unparsable reply); ``path`` is the parameter path inside
    that call's arguments (``"filters.max_price"``; ``""`` for the call itself).
    """

    code: ErrorCode
    message: str
    call: int | None = None
    path: str = ""
    suggestion: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    """Machine-readable details (closest names, expected type, the raw fragment)."""


class Message(_Model):
    """A chat message. CriticTool's ``function`` role is loaded as ``tool``."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    """For ``tool`` messages: the tool that produced the content."""


class Trajectory(_Model):
    """An ordered conversation in which tools are called and answer.

    >>> t = Trajectory(messages=[
    ...     Message(role="user", content="weather in Paris?"),
    ...     Message(role="assistant", tool_calls=[ToolCall(name="get_weather", arguments={"city": "Paris"})]),
    ...     Message(role="tool", content='{"temp": 18}', name="get_weather"),
    ... ])
    >>> [c.name for c in t.calls]
    ['get_weather']
    """

    messages: list[Message] = Field(default_factory=list)

    @property
    def calls(self) -> list[ToolCall]:
        """Every tool call in the trajectory, in order."""
        return [call for m in self.messages if m.role == "assistant" for call in m.tool_calls]

    def steps(self) -> list[tuple[ToolCall, Message | None]]:
        """Each call paired with the tool message that answered it (by id, else by position)."""
        pairs: list[tuple[ToolCall, Message | None]] = []
        pending: list[ToolCall] = []
        answered: dict[int, Message] = {}
        for m in self.messages:
            if m.role == "assistant":
                pending.extend(m.tool_calls)
            elif m.role == "tool":
                idx = next(
                    (
                        i
                        for i, c in enumerate(pending)
                        if i not in answered and (m.tool_call_id is None or c.id == m.tool_call_id)
                    ),
                    None,
                )
                if idx is not None:
                    answered[idx] = m
        for i, c in enumerate(pending):
            pairs.append((c, answered.get(i)))
        return pairs


class Sample(_Model):
    """One benchmark or training item: the conversation so far, the tools on offer, and the
    gold answer.

    ``target`` holds the gold calls; ``metadata`` holds whatever a benchmark needs beyond that
    (BFCL's acceptable-value lists, CriticTool's error type, NesTools' depth).
    """

    id: str
    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    target: list[ToolCall] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def tool(self, name: str) -> Tool | None:
        """The offered tool called ``name``, if any."""
        return next((t for t in self.tools if t.name == name), None)
