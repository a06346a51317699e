"""What an injection is: the :class:`Injection` record, the :class:`InjectContext` an operator may
draw wrong values from, and the :class:`Operator` entries of the :data:`OPERATORS` registry.

>>> from toolmend import ToolCall
>>> inj = Injection(operator="parameter_key", family="critictool", label="parameters_key_error",
...     sub_label="key.drop_required", step=0, seed=1,
...     original=[ToolCall(name="f", arguments={"a": 1})], corrupted=[ToolCall(name="f")],
...     calls=[ToolCall(name="f")], description="dropped the required key 'a'")
>>> [c.name for c in inj.prefix]
['f']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolmend._registry import Registry
from toolmend._schema import ErrorCode, ToolCall

if TYPE_CHECKING:
    from toolmend.synth.inject._site import Site

__all__ = ["OPERATORS", "Family", "InjectContext", "Injection", "Operator", "InjectionSource"]

Family = Literal["critictool", "external", "reflection", "hitec"]
"""Which paper's taxonomy an operator reproduces."""

InjectionSource = Literal["rule", "model", "fallback"]
"""Who made the corruption: the rule-based operator, a model (validated), or the rule-based
operator after a model's attempt was rejected."""


class InjectContext(BaseModel):
    """What the conversation holds beyond the calls, for operators that take a wrong value
    "from elsewhere in the context" and for the model-driven variant's prompt.

    ``outputs`` maps output placeholders (``"API_call_0"``) to the values the earlier calls
    returned, when known; ``responses`` are earlier tool results in any JSON shape.
    """

    model_config = ConfigDict(extra="forbid")

    query: str = ""
    outputs: dict[str, Any] = Field(default_factory=dict)
    responses: list[Any] = Field(default_factory=list)


class Injection(BaseModel):
    """One correct step turned into a labelled wrong one.

    ``original`` are the gold call(s) the operator touched and ``corrupted`` what replaces them
    (empty for a dropped call); ``calls`` is the whole call list after the injection, so a
    trajectory can be rebuilt from it, and :attr:`prefix` is the list up to and including the
    broken step (Tool-Reflection-Bench's :math:`D^-`). ``text`` is set by operators whose error
    lives in the raw output (HiTEC's format and redundant-information errors); ``response`` by
    the external-error operator (the error body the environment answers with).

    ``expected_codes`` lists the checklist codes that should flag the error, and
    ``detectable`` says whether a schema-level check can see it at all (a wrong but existing
    tool, or a plausible value taken from the context, needs the task to judge).
    """

    model_config = ConfigDict(extra="forbid")

    operator: str
    family: Family
    label: str
    """The operator's label: a CriticTool category (``tool_select_error`` …), ``environment_error``,
    a Tool-Reflection-Bench perturbation (``call_order_swap`` …) or a HiTEC error's checklist code."""
    sub_label: str
    """The finer kind, e.g. ``key.drop_required`` or ``env.timeout``."""
    step: int
    seed: int
    original: list[ToolCall]
    corrupted: list[ToolCall]
    calls: list[ToolCall]
    description: str
    category: str | None = None
    """The CriticTool internal category of the error, where it has one."""
    hitec_type: int | None = None
    """HiTEC's error number (0-7), where the error is one of its global checklist."""
    expected_codes: list[ErrorCode] = Field(default_factory=list)
    detectable: bool = False
    expected_count: int | None = None
    """How many calls the task needs, for checking list-level errors (``wrong_tool_count``)."""
    text: str | None = None
    response: dict[str, Any] | None = None
    source: InjectionSource = "rule"
    note: str | None = None
    """Why a model's corruption was rejected, when ``source`` is ``"fallback"``."""

    @property
    def prefix(self) -> list[ToolCall]:
        """The calls before the broken step followed by the corrupted call(s)."""
        return [*self.calls[: self.step], *self.corrupted]


Apply = Callable[["Site"], Injection | None]


@dataclass(frozen=True, slots=True)
class Operator:
    """A registered operator: its name, family, label, the variants it picks from, and the
    function that applies it to a :class:`~toolmend.synth.inject._site.Site` (``None`` when it
    does not apply to that step)."""

    name: str
    family: Family
    label: str
    variants: tuple[str, ...]
    apply: Apply
    summary: str
    category: str | None = None
    hitec_type: int | None = None


OPERATORS: Registry[Operator] = Registry("injection operator")
"""Every operator by name; see :func:`toolmend.synth.inject.operator_names`."""
