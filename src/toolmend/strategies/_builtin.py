"""The built-in strategy factories; :mod:`toolmend.benchmarks` registers them lazily by name in
:data:`~toolmend.benchmarks.STRATEGIES`. Keyword arguments are the strategies' options."""

from __future__ import annotations

from typing import Any, Literal

from toolmend._strategy import Strategy

__all__ = ["best_of_n", "env_policy", "guard", "hitec_icl", "reflect", "self_refine"]


def guard(**policy: Any) -> Strategy:
    from toolmend.strategies._guard import GuardStrategy

    return GuardStrategy(**policy)


def _guard_options() -> list[str]:
    from toolmend.guard import GuardPolicy

    return list(GuardPolicy.model_fields)


guard.options = _guard_options  # type: ignore[attr-defined]  # -S takes any GuardPolicy field


def hitec_icl(
    model_checklists: bool = False,
    checklist_model: str | None = None,
    checklist_cache: str | None = None,
    second_round: bool = True,
    global_checklist: bool = True,
    keep: Literal["checked", "second", "findings"] = "checked",
) -> Strategy:
    from toolmend.strategies._hitec import HitecICL

    return HitecICL(
        model_checklists=model_checklists,
        checklist_model=checklist_model,
        checklist_cache=checklist_cache,
        second_round=second_round,
        global_checklist=global_checklist,
        keep=keep,
    )


def reflect(max_rounds: int = 2) -> Strategy:
    from toolmend.strategies._reflect import Reflect

    return Reflect(max_rounds=max_rounds)


def self_refine(
    max_refine: int = 3,
    feedback: Literal["checker", "model"] = "checker",
    when: Literal["always", "findings"] = "always",
    ground: bool = False,
    accept: Literal["any", "no_worse"] = "any",
) -> Strategy:
    from toolmend.strategies._refine import SelfRefine

    return SelfRefine(max_refine=max_refine, feedback=feedback, when=when, ground=ground, accept=accept)


def best_of_n(n: int = 3) -> Strategy:
    from toolmend.strategies._best_of_n import BestOfN

    return BestOfN(n=n)


def env_policy(wait: bool = False) -> Strategy:
    from toolmend.strategies._env_policy import EnvPolicyStrategy

    return EnvPolicyStrategy(wait=wait)
