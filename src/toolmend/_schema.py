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

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_serializer

from toolmend._errors import PathError

__all__ = [
    "ERROR_CODES",
    "REFS",
    "ErrorCode",
    "Finding",
    "Loc",
    "Message",
    "Ref",
    "Role",
    "Sample",
    "Tool",
    "ToolCall",
    "Trajectory",
    "UnresolvedRef",
    "dependencies",
    "extract_path",
    "refs",
    "resolve",
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

    @property
    def head(self) -> str:
        """The placeholder the reference names, without any field path (``API_call_0`` for
        ``API_call_0.flights.0``)."""
        return self.target.partition(".")[0]

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


REFS: dict[str, Any] = {"refs": True}
"""Validation context under which ``{"$ref": target}`` argument values are read back as
:class:`Ref`: ``ToolCall.model_validate(data, context=REFS)``."""


class ToolCall(_Model):
    """One call of a tool: a name and keyword arguments.

    ``outputs`` names the placeholders this call's results are bound to (NesTools'
    ``responses``: ``["API_call_0", "API_call_1"]``), in the order of ``output_fields`` when
    those are known. Later calls refer to them through :class:`Ref` argument values.

    A :class:`Ref` is written as ``{"$ref": target}``. Such an object is read back as a
    reference only where the data says references are meant: toolmend's own JSON
    (``model_validate_json``, which run files, world tasks and caches go through), the call
    formats of benchmarks with nested calls, or validation under :data:`REFS`. Anywhere else, and
    in every plain tool call, it is a literal argument value (a JSON-Schema-shaped object a model
    echoed, say), and the arguments object itself is never one:

    >>> ToolCall(name="f", arguments={"s": {"$ref": "#/$defs/X"}}).arguments
    {'s': {'$ref': '#/$defs/X'}}
    >>> ToolCall.model_validate({"name": "f", "arguments": {"s": {"$ref": "API_call_0"}}},
    ...                         context=REFS).arguments
    {'s': Ref(target='API_call_0')}
    >>> ToolCall.model_validate_json('{"name": "f", "arguments": {"$ref": "a"}}').arguments
    {'$ref': 'a'}
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
    def _revive_refs(cls, value: Any, info: ValidationInfo) -> Any:
        # Dumped Refs come back as {"$ref": "API_call_0"}; where references are meant (see the
        # class docstring) they become Refs again, so that a dump/validate round trip is
        # lossless. The same walk stops a value nested too deep.
        if not isinstance(value, dict):
            return value
        revive = info.mode == "json" or bool(isinstance(info.context, Mapping) and info.context.get("refs"))
        try:
            return {k: _revive(v, cls.MAX_DEPTH - 1, revive) for k, v in value.items()}
        except _TooDeep:
            raise ValueError(f"arguments are nested deeper than {cls.MAX_DEPTH} levels") from None


class _TooDeep(Exception):  # noqa: N818 - never leaves ToolCall's validator
    pass


def _revive(value: Any, room: int, revive: bool) -> Any:
    if isinstance(value, dict):
        if not room:
            raise _TooDeep
        if revive and len(value) == 1 and isinstance(value.get("$ref"), str):
            return Ref(target=value["$ref"])
        return {k: _revive(v, room - 1, revive) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if not room:
            raise _TooDeep
        return [_revive(v, room - 1, revive) for v in value] if isinstance(value, list) else value
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


# -- references between calls ---------------------------------------------------------------

Loc = tuple[str | int, ...]
"""Where a value sits inside a call's arguments: keys and list indices, outermost first."""


class UnresolvedRef(PathError):
    """A :class:`Ref` that nothing bound answers: ``target`` is what it names (the placeholder
    alone when the placeholder is bound but the field path in it is not), ``path`` that field
    path (``""`` when the placeholder itself is unbound). A ``KeyError``."""

    def __init__(self, target: str, path: str = "") -> None:
        super().__init__(target if not path else f"{target}.{path}")
        self.target = target
        self.path = path


def refs(value: Any, loc: Loc = ()) -> Iterator[tuple[Loc, Ref]]:
    """Every :class:`Ref` inside ``value`` (a call's arguments, or any value in them), in order,
    each with where it sits.

    >>> args = {"book": Ref(target="API_call_0"), "extras": ["bag", {"seat": Ref(target="API_call_1.id")}]}
    >>> [(loc, r.target) for loc, r in refs(args)]
    [(('book',), 'API_call_0'), (('extras', 1, 'seat'), 'API_call_1.id')]
    >>> sorted({r.head for _, r in refs(args)})
    ['API_call_0', 'API_call_1']
    >>> list(refs({"s": {"$ref": "API_call_0"}}))  # a literal object, not a reference
    []
    """
    if isinstance(value, Ref):
        yield loc, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from refs(v, (*loc, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from refs(v, (*loc, i))


def extract_path(data: Any, path: str) -> Any:
    """The value at a dotted path; integer segments index lists. A path that does not exist is a
    :class:`~toolmend._errors.PathError` (a ``KeyError``).

    >>> extract_path({"flights": [{"id": "F1"}]}, "flights.0.id")
    'F1'
    """
    value = data
    for part in path.split("."):
        try:
            if isinstance(value, list):
                value = value[int(part)]
            elif isinstance(value, dict):
                value = value[part]
            else:
                raise PathError(part)
        except (KeyError, IndexError, ValueError) as exc:
            raise PathError(part) from exc
    return value


def _lookup(bindings: Mapping[str, Any], target: str) -> Any:
    if target in bindings:
        return bindings[target]
    head, _, path = target.partition(".")
    if head in bindings and path:
        try:
            return extract_path(bindings[head], path)
        except (KeyError, IndexError, TypeError, ValueError):
            raise UnresolvedRef(head, path) from None
    raise UnresolvedRef(target)


def resolve(value: Any, bindings: Mapping[str, Any] | Callable[[Ref], Any]) -> Any:
    """``value`` with every :class:`Ref` inside replaced; everything else is kept (lists and
    dicts are copied, tuples come back as lists).

    ``bindings`` maps placeholders to what the calls that declared them returned: a target bound
    as a whole is replaced by its value, else a target ``placeholder.field.path`` by that path
    inside the placeholder's value; a target that neither answers is an :class:`UnresolvedRef`.
    A function instead decides for each :class:`Ref` itself (to write it as its placeholder
    name, or as a stand-in while validating).

    >>> resolve({"x": Ref(target="API_call_0.id"), "y": [1]}, {"API_call_0": {"id": 7}})
    {'x': 7, 'y': [1]}
    >>> resolve([Ref(target="API_call_0")], lambda ref: ref.target)
    ['API_call_0']
    >>> resolve({"x": Ref(target="API_call_1")}, {"API_call_0": 1})
    Traceback (most recent call last):
    ...
    toolmend._schema.UnresolvedRef: 'API_call_1'
    """
    if isinstance(bindings, Mapping):
        table = bindings
        return _replace(value, lambda ref: _lookup(table, ref.target))
    return _replace(value, bindings)


def _replace(value: Any, answer: Callable[[Ref], Any]) -> Any:
    if isinstance(value, Ref):
        return answer(value)
    if isinstance(value, Mapping):
        return {k: _replace(v, answer) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(v, answer) for v in value]
    return value


def dependencies(
    calls: Sequence[ToolCall],
    *,
    after: Mapping[int, Iterable[int]] | None = None,
    transitive: bool = False,
) -> list[set[int]]:
    """For each call, the indices of the earlier calls it needs: those whose outputs its
    arguments refer to, and those ``after`` names for it (needed through shared state). With
    ``transitive``, also every call those need in turn. A reference to a placeholder that no
    earlier call declares adds nothing.

    >>> chain = [ToolCall(name="a", outputs=["API_call_0"]),
    ...          ToolCall(name="b", arguments={"x": Ref(target="API_call_0.id")}, outputs=["API_call_1"]),
    ...          ToolCall(name="c", arguments={"y": [Ref(target="API_call_1")]})]
    >>> dependencies(chain)
    [set(), {0}, {1}]
    >>> dependencies(chain, transitive=True)
    [set(), {0}, {0, 1}]
    >>> dependencies(chain, after={2: [0]})
    [set(), {0}, {0, 1}]
    """
    producer: dict[str, int] = {}
    deps: list[set[int]] = []
    for i, call in enumerate(calls):
        direct = {producer[r.head] for _, r in refs(call.arguments) if r.head in producer}
        if after is not None:
            direct.update(after.get(i, ()))
        deps.append(direct.union(*(deps[d] for d in direct)) if transitive and direct else direct)
        producer.update({o: i for o in call.outputs})
    return deps
