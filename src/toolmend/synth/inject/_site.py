"""Where an operator acts: a :class:`Site` holds the calls, the tools, the chosen step, a seeded
random generator and the context, and builds the :class:`~toolmend.synth.inject._model.Injection`.

Operators are pure functions of a site. Every random choice goes through :attr:`Site.rng`, which
is seeded from ``(seed, operator, step)`` and a digest of the input calls only, so an injection
is reproducible from those.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolmend._schema import ErrorCode, ToolCall
from toolmend.check import Checker
from toolmend.synth.inject._model import InjectContext, Injection, Operator

__all__ = ["Site", "calls_digest", "site_rng"]

T = TypeVar("T")


def calls_digest(calls: Sequence[ToolCall]) -> str:
    """A short stable digest of a call list, so that two different tasks draw differently
    under the same seed."""
    text = json.dumps(
        [[c.name, c.model_dump(mode="json")["arguments"]] for c in calls], sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def site_rng(seed: int, operator: str, step: int, digest: str = "") -> random.Random:
    """The generator of one (seed, operator, step, call list); string seeds hash stably across
    runs (``random.Random`` seeds a ``str`` through SHA-512)."""
    return random.Random(f"toolmend.inject:{seed}:{operator}:{step}:{digest}")


@dataclass(slots=True)
class Site:
    """One step of one call list, ready for an operator."""

    calls: list[ToolCall]
    checker: Checker
    step: int
    seed: int
    operator: Operator
    context: InjectContext = field(default_factory=InjectContext)
    variant: str | None = None
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = site_rng(self.seed, self.operator.name, self.step, calls_digest(self.calls))

    @property
    def call(self) -> ToolCall:
        """The call at the step."""
        return self.calls[self.step]

    @property
    def tools(self) -> dict[str, Any]:
        """The offered tools by name."""
        return self.checker.tools

    def pick(self, options: Sequence[T]) -> T:
        """A seeded choice (options must be in a deterministic order)."""
        return options[self.rng.randrange(len(options))]

    def choose_variant(self, possible: dict[str, bool]) -> str | None:
        """The forced variant if it is possible, else a seeded pick among the possible ones."""
        if self.variant is not None:
            return self.variant if possible.get(self.variant) else None
        usable = [name for name, ok in possible.items() if ok]
        return self.pick(usable) if usable else None

    def copy(self) -> list[ToolCall]:
        """A deep copy of the calls, safe to corrupt."""
        return [c.model_copy(deep=True) for c in self.calls]

    def make(
        self,
        sub_label: str,
        corrupted: list[ToolCall],
        calls: list[ToolCall],
        description: str,
        *,
        original: list[ToolCall] | None = None,
        step: int | None = None,
        label: str | None = None,
        category: str | None = None,
        expected_codes: Sequence[ErrorCode] = (),
        detectable: bool | None = None,
        expected_count: int | None = None,
        text: str | None = None,
        response: dict[str, Any] | None = None,
    ) -> Injection:
        """The injection record, with the operator's name, family and labels filled in."""
        op = self.operator
        return Injection(
            operator=op.name,
            family=op.family,
            label=label or op.label,
            sub_label=sub_label,
            step=self.step if step is None else step,
            seed=self.seed,
            original=[c.model_copy(deep=True) for c in ([self.call] if original is None else original)],
            corrupted=corrupted,
            calls=calls,
            description=description,
            category=category if category is not None else op.category,
            hitec_type=op.hitec_type,
            expected_codes=list(expected_codes),
            detectable=bool(expected_codes) if detectable is None else detectable,
            expected_count=expected_count,
            text=text,
            response=response,
        )
