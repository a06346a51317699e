"""The entry points: :func:`inject`, :func:`applicable` and :func:`operator_names`.

>>> from toolmend import Tool, ToolCall
>>> tools = [Tool(name="weather_current", parameters={"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]})]
>>> calls = [ToolCall(name="weather_current", arguments={"city": "Oslo"})]
>>> inj = inject(calls, tools, "parameter_key", seed=0, variant="key.drop_required")
>>> inj.label, inj.sub_label, inj.calls[0].arguments
('parameters_key_error', 'key.drop_required', {})
>>> applicable("call_order_swap", calls, tools)
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import Tool, ToolCall
from toolmend.check import Checker
from toolmend.synth.inject._model import OPERATORS, InjectContext, Injection
from toolmend.synth.inject._site import Site, calls_digest, site_rng

__all__ = ["ToolsLike", "applicable", "checker_for", "inject", "operator_names"]

ToolsLike = Checker | Iterable[Tool | Mapping[str, Any]]
"""Offered tools: :class:`~toolmend.Tool` objects, raw specs in any dialect, or a compiled
:class:`~toolmend.check.Checker` (reuse one when injecting many times over the same tools)."""


def checker_for(tools: ToolsLike) -> Checker:
    """A :class:`~toolmend.check.Checker` for ``tools`` (the same object if it already is one)."""
    return tools if isinstance(tools, Checker) else Checker(tools)


def operator_names(family: str | None = None) -> list[str]:
    """The registered operators, optionally only one family's (``critictool``, ``external``,
    ``reflection``, ``hitec``)."""
    return [n for n in OPERATORS.names() if family is None or OPERATORS.get(n).family == family]


def _site(
    calls: Sequence[ToolCall],
    checker: Checker,
    operator: str,
    step: int,
    seed: int,
    context: InjectContext | None,
    variant: str | None,
) -> Site:
    op = OPERATORS.get(operator)
    if variant is not None and variant not in op.variants:
        raise ConfigError(
            f"operator {operator!r} has no variant {variant!r}; expected one of {', '.join(op.variants)}"
        )
    return Site(list(calls), checker, step, seed, op, context or InjectContext(), variant)


def applicable(
    operator: str,
    calls: Sequence[ToolCall],
    tools: ToolsLike,
    *,
    context: InjectContext | None = None,
    variant: str | None = None,
) -> list[int]:
    """The steps (indices into ``calls``) that ``operator`` (or one of its variants) can
    corrupt. Whether a step qualifies never depends on the seed."""
    checker = checker_for(tools)
    return [
        k
        for k in range(len(calls))
        if OPERATORS.get(operator).apply(_site(calls, checker, operator, k, 0, context, variant)) is not None
    ]


def inject(
    calls: Sequence[ToolCall],
    tools: ToolsLike,
    operator: str,
    *,
    seed: int,
    step: int | None = None,
    context: InjectContext | None = None,
    variant: str | None = None,
) -> Injection | None:
    """Corrupt one step of ``calls`` with ``operator``; ``None`` when it does not apply there.

    ``step=None`` picks one of the :func:`applicable` steps with the seed. ``variant`` forces a
    sub-label (``"key.alias"``); otherwise the seed picks among the variants that apply. The
    same arguments always give the same injection. ``calls`` are never modified.

    Raises :class:`~toolmend._errors.ConfigError` for an unknown operator or variant and for a
    step outside the call list.
    """
    checker = checker_for(tools)
    OPERATORS.get(operator)  # an unknown name fails here, with the known ones listed
    if step is None:
        steps = applicable(operator, calls, checker, context=context, variant=variant)
        if not steps:
            return None
        step = steps[site_rng(seed, operator, -1, calls_digest(calls)).randrange(len(steps))]
    elif not 0 <= step < len(calls):
        raise ConfigError(f"step {step} is outside the call list (it has {len(calls)} calls)")
    site = _site(calls, checker, operator, step, seed, context, variant)
    return site.operator.apply(site)
