"""Resolving strategies by name, with options: :func:`build_strategies` for the ``"a+b"`` form
the CLI takes. The seam itself (``Generate``, ``SolveState``, ``Strategy``, :data:`STRATEGIES`)
lives in :mod:`toolmend.benchmarks._base`; the built-ins are registered there lazily.

>>> [s.name for s in build_strategies("hitec-icl+guard")]
['hitec-icl', 'guard']
>>> build_strategies("none")
[]
>>> build_strategies("guard+none")
Traceback (most recent call last):
...
toolmend._errors.ConfigError: --strategy: 'none' cannot be combined with other strategies (got 'guard+none')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolmend._errors import ConfigError
from toolmend._strategy import STRATEGIES, Generate, SolveState, Strategy

__all__ = [
    "STRATEGIES",
    "Generate",
    "SolveState",
    "Strategy",
    "apply_strategies",
    "build_strategies",
    "strategy_name",
]


def _factory(name: str) -> Callable[..., Strategy]:
    factory: Callable[..., Strategy] = STRATEGIES.get(name)
    return factory


def _accepted(factory: Callable[..., Strategy]) -> set[str]:
    """The option names ``factory`` takes: its named parameters, and for one that takes
    ``**options`` the names its ``options()`` lists (the guard's are GuardPolicy's fields)."""
    params = inspect.signature(factory).parameters
    names = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    listed = getattr(factory, "options", None)
    return names | set(listed()) if callable(listed) else names


def _no_strategy(opts: Mapping[str, Any]) -> list[Strategy]:
    if opts:
        raise ConfigError(f"strategy options {', '.join(sorted(opts))} need a --strategy that takes them")
    return []


def build_strategies(
    spec: str | Strategy | Sequence[Strategy] | None, options: Mapping[str, Any] | None = None
) -> list[Strategy]:
    """Strategies from a spec: ``None``/``"none"`` for none, ``"a+b"`` by name (application
    order), or strategy objects. ``options`` go to the factories that take them; an option no
    chosen strategy takes is a :class:`~toolmend.ConfigError` (a bad combination)."""
    opts = {k: v for k, v in dict(options or {}).items() if v is not None}
    if not isinstance(spec, str):
        if spec is None:
            return _no_strategy(opts)
        if opts:
            raise ConfigError("strategy options go with strategy names; configure strategy objects directly")
        return list(spec) if isinstance(spec, Sequence) else [spec]  # type: ignore[arg-type]  # (mypy keeps str here)
    if spec.strip() in ("", "none"):
        return _no_strategy(opts)
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
        factory = _factory(name)
        accepted = _accepted(factory)
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
