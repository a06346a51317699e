"""The solver seam the strategies plug into (see ``interface.md``): ``Generate``, ``SolveState``,
``Strategy`` and the :data:`STRATEGIES` registry, plus :func:`resolve_strategies` for the
``"a+b"`` form the CLI takes.

>>> [s.name for s in resolve_strategies("hitec-icl+guard")]
['hitec-icl', 'guard']
>>> resolve_strategies("none")
[]
>>> resolve_strategies("guard+none")
Traceback (most recent call last):
...
toolmend.errors.ConfigError: --strategy: 'none' cannot be combined with other strategies (got 'guard+none')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolmend.errors import ConfigError
from toolmend.registry import Registry
from toolmend.schema import Message, Sample

__all__ = [
    "STRATEGIES",
    "Generate",
    "SolveState",
    "Strategy",
    "apply_strategies",
    "resolve_strategies",
    "strategy_name",
]


class Generate(Protocol):
    """One model request: the reply text in the benchmark's reply format."""

    async def __call__(self, messages: list[Message], *, epoch: int | None = None) -> str: ...


@dataclass
class SolveState:
    """What a strategy knows about the sample being solved; ``events`` is its telemetry."""

    sample: Sample
    benchmark: Any
    events: list[dict[str, Any]] = field(default_factory=list)


@runtime_checkable
class Strategy(Protocol):
    """Wraps ``generate`` for one sample; several compose (the later wraps the earlier)."""

    name: str

    def wrap(self, generate: Generate, state: SolveState) -> Generate: ...


StrategyFactory = Callable[..., Strategy]
STRATEGIES: Registry[StrategyFactory] = Registry("strategy")
"""Strategy factories by name; the options a factory takes are its keyword arguments."""


def _load_builtin() -> None:
    import toolmend.strategies.builtin  # noqa: F401  (registers)


def resolve_strategies(
    spec: str | Strategy | Sequence[Strategy] | None, options: Mapping[str, Any] | None = None
) -> list[Strategy]:
    """Strategies from a spec: ``None``/``"none"`` for none, ``"a+b"`` by name (application
    order), or strategy objects. ``options`` go to the factories that take them; an option no
    chosen strategy takes is a :class:`~toolmend.ConfigError` (a bad combination)."""
    opts = {k: v for k, v in dict(options or {}).items() if v is not None}
    if spec is None or isinstance(spec, str) and spec.strip() in ("", "none"):
        if opts:
            raise ConfigError(f"strategy options {', '.join(sorted(opts))} need a --strategy that takes them")
        return []
    if isinstance(spec, Strategy):
        return [spec]
    if not isinstance(spec, str):
        return list(spec)
    _load_builtin()
    names = [n.strip() for n in spec.split("+")]
    if "none" in names:
        raise ConfigError(f"--strategy: 'none' cannot be combined with other strategies (got {spec!r})")
    if "" in names:
        raise ConfigError(f"--strategy: empty name in {spec!r}; join names with '+', e.g. hitec-icl+guard")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"--strategy: {', '.join(repeated)} given twice in {spec!r}")
    out: list[Strategy] = []
    used: set[str] = set()
    for name in names:
        factory = STRATEGIES.get(name)
        accepted = set(inspect.signature(factory).parameters)
        mine = {k: v for k, v in opts.items() if k in accepted}
        used |= set(mine)
        out.append(factory(**mine))
    unused = sorted(set(opts) - used)
    if unused:
        raise ConfigError(f"--strategy {spec}: no chosen strategy takes {', '.join(unused)}")
    return out


def strategy_name(strategies: Sequence[Strategy]) -> str:
    """``"a+b"`` for the run identity; ``"none"`` for no strategy."""
    return "+".join(s.name for s in strategies) or "none"


def apply_strategies(strategies: Sequence[Strategy], generate: Generate, state: SolveState) -> Generate:
    """``generate`` wrapped by each strategy in order (the first wraps the base)."""
    for strategy in strategies:
        generate = strategy.wrap(generate, state)
    return generate
