"""Registers the built-in strategies in :data:`~toolmend.strategies.base.STRATEGIES`."""

from __future__ import annotations

from typing import Any, Literal

from toolmend.strategies.base import STRATEGIES, Strategy

__all__: list[str] = []


@STRATEGIES.register("guard")
def _guard(**policy: Any) -> Strategy:
    from toolmend.strategies.guard import GuardStrategy

    return GuardStrategy(**policy)


@STRATEGIES.register("hitec-icl")
def _hitec(
    model_checklists: bool = False, checklist_cache: str | None = None, second_round: bool = True
) -> Strategy:
    from toolmend.strategies.hitec import HitecICL

    return HitecICL(
        model_checklists=model_checklists, checklist_cache=checklist_cache, second_round=second_round
    )


@STRATEGIES.register("reflect")
def _reflect(max_rounds: int = 2) -> Strategy:
    from toolmend.strategies.reflect import Reflect

    return Reflect(max_rounds=max_rounds)


@STRATEGIES.register("self-refine")
def _refine(max_refine: int = 3, feedback: Literal["checker", "model"] = "checker") -> Strategy:
    from toolmend.strategies.refine import SelfRefine

    return SelfRefine(max_refine=max_refine, feedback=feedback)


@STRATEGIES.register("best-of-n")
def _best(n: int = 3) -> Strategy:
    from toolmend.strategies.best_of_n import BestOfN

    return BestOfN(n=n)


@STRATEGIES.register("env-policy")
def _env(wait: bool = False) -> Strategy:
    from toolmend.strategies.env_policy import EnvPolicyStrategy

    return EnvPolicyStrategy(wait=wait)
