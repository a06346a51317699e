"""The structured-reflection reward of Tool-Reflection-Bench (paper eq. 11–25), usable as a GRPO reward.

A completion and its ground truth are both split into reflection, calls and final answer
(eq. 11). The component scores (eq. 12) are a similarity for the two texts and an indicator of
bag equality for the calls; they are averaged with weights renormalised over the parts the
ground truth actually has (presence masks, eq. 14–16). A format factor (eq. 17–23) penalises
missing parts, extra parts and a wrong number of calls, softened by ``r_reduce`` when the calls
are exactly right. ``R_core = S · F`` (eq. 24); below ``epsilon`` the reward backs off to a
weighted similarity of the linearised texts (eq. 25).

The paper gives the equations but no numbers; the defaults of :class:`RewardConfig` are the
values of the authors' released reward (weights 0.1 / 0.7 / 0.2, β_extra 0.8, γ_count 0.6,
λ_m 0.8, r_reduce 0.3, w_b 0.15, ε 1e-6). That code also returns 0 outright when the gold
has calls and the reply's calls differ (``strict_call_gate``) and settles details the paper
leaves open in its own way (``match_released``); :meth:`RewardConfig.released` turns both on
and reproduces its numbers (checked on the shared sample, see ``docs/benchmarks/reflection.md``).

The reward is total: any input gives a float in [0, 1], nothing raises.

>>> gold = '<reflect>id was wrong</reflect><tool_call>{"name": "f", "arguments": {"id": 7}}</tool_call>'
>>> reflection_reward(gold, gold)
1.0
>>> reflection_reward("no idea", gold) < 0.15
True
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolmend.benchmarks.reflection_bench.tags import ReplyParts, split_reply
from toolmend.compare.values import canonical_json
from toolmend.errors import ConfigError

__all__ = [
    "RewardBreakdown",
    "RewardConfig",
    "Similarity",
    "equal_calls",
    "lexical_similarity",
    "make_reward_fn",
    "reflection_reward",
    "reward_breakdown",
    "reward_fn",
]

log = logging.getLogger(__name__)

Similarity = Callable[[str, str], float]
"""``sim(a, b) -> [0, 1]``; the reward clamps whatever it returns and treats errors as 0."""


class RewardConfig(BaseModel):
    """Every weight of eq. 11–25; defaults are those of the authors' released reward."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    w_reflect: float = Field(0.1, ge=0)
    """w_r: weight of the reflection similarity in S (eq. 15–16)."""
    w_calls: float = Field(0.7, ge=0)
    """w_c: weight of the call indicator in S."""
    w_final: float = Field(0.2, ge=0)
    """w_f: weight of the final-answer similarity in S."""
    p_reflect: float = Field(0.1, ge=0)
    """w_ref: weight of a missing/extra reflection in the penalties (eq. 18–19)."""
    p_calls: float = Field(0.7, ge=0)
    """w_calls: weight of missing/extra calls and of the count mismatch (eq. 18–20)."""
    p_final: float = Field(0.2, ge=0)
    """w_final: weight of a missing/extra final answer."""
    beta_extra: float = Field(0.8, ge=0)
    """β_extra: strength of the extra-part penalty (eq. 22)."""
    gamma_count: float = Field(0.6, ge=0)
    """γ_count: strength of the call-count mismatch penalty (eq. 22)."""
    lambda_m: float = Field(0.8, ge=0)
    """λ_m: overall penalty scale in the format factor (eq. 23)."""
    r_reduce: float = Field(0.3, gt=0, le=1)
    """Penalty reduction when the calls are exactly right (eq. 21)."""
    backoff_weight: float = Field(0.15, gt=0, le=1)
    """w_b: weight of the similarity backoff (eq. 25)."""
    epsilon: float = Field(1e-6, ge=0)
    """ε: below this core reward the backoff is used (eq. 25)."""
    normalize_penalty_weights: bool = True
    """Rescale (p_reflect, p_calls, p_final) to sum to 1, as the released code does."""
    strict_call_gate: bool = False
    """Return 0 when the gold has calls and the reply's differ (released code; not in the paper)."""
    match_released: bool = False
    """Follow the released code where the paper is silent: calls read by
    :func:`~toolmend.benchmarks.reflection_bench.tags.released_calls`; call equality on JSON
    text (``1`` ≠ ``1.0``); the call score graded by greedy matching (half name, half share of
    gold arguments equal or similar above 0.8, ×(1 − 0.1 per unmatched extra call)); 1e-8
    added to the similarity and averaging denominators; ASCII-escaped calls in the backoff text."""

    @classmethod
    def released(cls, **overrides: Any) -> RewardConfig:
        """The configuration that reproduces the authors' released reward for Qwen replies.

        >>> RewardConfig.released().strict_call_gate
        True
        """
        return cls(**{"strict_call_gate": True, "match_released": True, **overrides})


class RewardBreakdown(BaseModel):
    """Every intermediate quantity of the reward, for logging and tests."""

    model_config = ConfigDict(extra="forbid")

    s_reflect: float = 0.0
    s_calls: float = 0.0
    s_final: float = 0.0
    structure: float = 0.0
    """S (eq. 16)."""
    p_miss: float = 0.0
    p_extra: float = 0.0
    p_count: float = 0.0
    format_factor: float = 1.0
    """F (eq. 23)."""
    core: float = 0.0
    """R_core = S · F (eq. 24)."""
    backoff: bool = False
    reward: float = 0.0
    """R_total in [0, 1] (eq. 25)."""


_WS = re.compile(r"\s+")


_RELEASED_EPS = 1e-8


def lexical_similarity(a: str, b: str) -> float:
    """Cheap text similarity in [0, 1]: 0.6·unigram Jaccard + 0.3·bigram Jaccard + 0.1·length ratio.

    Lower-cased, whitespace-normalised; identical texts give 1 and an empty side gives 0 (the
    fallback similarity of the authors' reward, used when no embedding model is plugged in).

    >>> lexical_similarity("the id was wrong", "the id was wrong")
    1.0
    >>> lexical_similarity("", "x")
    0.0
    """
    if not a or not b:
        return 0.0
    return _sig_similarity(_signature(a), _signature(b))


_Signature = tuple[str, frozenset[Any], frozenset[Any]]


def _signature(text: str) -> _Signature:
    clean = _WS.sub(" ", text.strip().lower())
    tokens = clean.split(" ")
    return clean, _unigrams(tokens), _bigrams(tokens)


def _sig_similarity(a: _Signature, b: _Signature, eps: float = 0.0) -> float:
    if a[0] == b[0]:
        return 1.0
    j1 = _jaccard(a[1], b[1], eps)
    j2 = _jaccard(a[2], b[2], eps)
    longest = max(len(a[0]), len(b[0]))
    len_ratio = min(len(a[0]), len(b[0])) / (longest + eps if eps else max(longest, 1))
    return _clip(0.6 * j1 + 0.3 * j2 + 0.1 * len_ratio)


def _unigrams(tokens: list[str]) -> frozenset[Any]:
    return frozenset(tokens)


def _bigrams(tokens: list[str]) -> frozenset[Any]:
    # Pairs instead of joined strings: tokens hold no spaces, so the sets compare the same way.
    if len(tokens) < 2:
        return frozenset({(" ".join(tokens),)})
    return frozenset(zip(tokens, tokens[1:], strict=False))


def _jaccard(a: frozenset[Any], b: frozenset[Any], eps: float = 0.0) -> float:
    union = len(a | b)
    if eps:
        return len(a & b) / (union + eps)
    return len(a & b) / union if union else 0.0


def _clip(x: float) -> float:
    if not isinstance(x, int | float) or math.isnan(x):
        return 0.0
    return float(max(0.0, min(1.0, x)))


def _safe_sim(sim: Similarity, a: str, b: str) -> float:
    try:
        return _clip(float(sim(a, b)))
    except Exception:  # a user's similarity must not take the training loop down, nor fail unseen
        log.exception("the reward's similarity function failed; this term scores 0")
        return 0.0


def _call_bag(calls: Sequence[dict[str, Any]], released: bool = False) -> Counter[str]:
    if released:
        # The released code compares plain sorted-key JSON text, so 1 and 1.0 differ there.
        return Counter(
            json.dumps([c["name"], c["arguments"]], ensure_ascii=False, sort_keys=True, default=str)
            for c in calls
        )
    return Counter(canonical_json([c["name"], c["arguments"]]) for c in calls)


def equal_calls(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> bool:
    """EqualCalls: a one-to-one matching with identical names and arguments (bag equality)."""
    return len(a) == len(b) and _call_bag(a) == _call_bag(b)


def _linearise(parts: ReplyParts, released: bool = False) -> str:
    calls = json.dumps(parts.calls, ensure_ascii=released, default=str)
    return " ".join([parts.reflect, calls, parts.final])


@dataclass(frozen=True)
class _Gold:
    """Everything about a gold reply that does not depend on the completion."""

    parts: ReplyParts
    bag: Counter[str]
    reflect: _Signature | None
    final: _Signature | None
    linear: str
    linear_sig: _Signature


@lru_cache(maxsize=8192)
def _gold(ground_truth: str, released: bool = False) -> _Gold:
    # GRPO scores G completions per prompt against the same gold: prepare it once.
    parts = split_reply(ground_truth, released=released)
    linear = _linearise(parts, released)
    return _Gold(
        parts=parts,
        bag=_call_bag(parts.calls, released),
        reflect=_signature(parts.reflect) if parts.reflect else None,
        final=_signature(parts.final) if parts.final else None,
        linear=linear,
        linear_sig=_signature(linear),
    )


_EMPTY_GOLD = _gold("")


def _sim(
    sim: Similarity | None, text: str, gold_text: str, gold_sig: _Signature | None, eps: float = 0.0
) -> float:
    if sim is not None:
        return _safe_sim(sim, text, gold_text)
    if not text or gold_sig is None:
        return 0.0
    return _sig_similarity(_signature(text), gold_sig, eps)


def _released_lexical(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return _sig_similarity(_signature(a), _signature(b), _RELEASED_EPS)


def _released_call_score(
    comp: Sequence[dict[str, Any]], gold: Sequence[dict[str, Any]], sim: Similarity | None
) -> float:
    # The released code's graded call score: each gold call, in order, takes the unused reply
    # call scoring highest (the first one on ties) as 0.5·same name + 0.5·share of the gold
    # arguments present and equal, or similar above 0.8 as text; each unmatched reply call
    # costs 0.1.
    if not gold:
        return 1.0 if not comp else max(0.0, 1.0 - 0.2 * len(comp))

    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)

    def single(c: dict[str, Any], g: dict[str, Any]) -> float:
        name = c["name"].lower()
        same = bool(name) and name == g["name"].lower()
        g_args, c_args = g["arguments"], c["arguments"]
        if not g_args:
            return 0.5 * same + 0.5
        matched = 0
        for k, v in g_args.items():
            if k in c_args:
                if c_args[k] == v:
                    matched += 1
                else:
                    a, b = text(v), text(c_args[k])
                    s = _safe_sim(sim, a, b) if sim is not None else _released_lexical(a, b)
                    matched += s > 0.8
        return 0.5 * same + 0.5 * (matched / (len(g_args) + _RELEASED_EPS))

    used = [False] * len(comp)
    scores: list[float] = []
    for g in gold:
        best, best_j = 0.0, -1
        for j, c in enumerate(comp):
            if not used[j]:
                s = single(c, g)
                if s > best:
                    best, best_j = s, j
        if best_j >= 0:
            used[best_j] = True
        scores.append(best)
    average = sum(scores) / (len(scores) + _RELEASED_EPS)
    return _clip(average * max(0.0, 1.0 - 0.1 * used.count(False)))


def reward_breakdown(
    completion: Any,
    ground_truth: Any,
    config: RewardConfig | None = None,
    sim: Similarity | None = None,
) -> RewardBreakdown:
    """The reward of ``completion`` against ``ground_truth`` with every intermediate value."""
    return RewardBreakdown.model_construct(**_compute(completion, ground_truth, config, sim))


def _compute(
    completion: Any, ground_truth: Any, config: RewardConfig | None, sim: Similarity | None
) -> dict[str, Any]:
    cfg = config or _DEFAULT
    rel = cfg.match_released
    eps = _RELEASED_EPS if rel else 0.0
    c = split_reply(completion, released=rel)
    gold = _gold(ground_truth, rel) if isinstance(ground_truth, str) else _EMPTY_GOLD
    g = gold.parts
    n, m = len(g.calls), len(c.calls)
    calls_equal = n == m and (n == 0 or _call_bag(c.calls, rel) == gold.bag)

    if cfg.strict_call_gate and n > 0 and not calls_equal:
        return RewardBreakdown(format_factor=0.0).model_dump()

    i_r, i_c, i_f = bool(g.reflect), n > 0, bool(g.final)
    s_reflect = _sim(sim, c.reflect, g.reflect, gold.reflect, eps) if i_r else 0.0
    # Eq. 12's indicator, or the released code's graded score (about 1 when the calls match).
    s_calls = _released_call_score(c.calls, g.calls, sim) if rel else float(calls_equal)
    s_final = _sim(sim, c.final, g.final, gold.final, eps) if i_f else 0.0
    w_act = cfg.w_reflect * i_r + cfg.w_calls * i_c + cfg.w_final * i_f
    if w_act > eps:
        weighted = cfg.w_reflect * i_r * s_reflect + cfg.w_calls * i_c * s_calls
        weighted += cfg.w_final * i_f * s_final
        structure = weighted / w_act
    else:  # nothing to aim at: an empty target is met by anything the penalties allow
        structure = 1.0

    pr, pc, pf = cfg.p_reflect, cfg.p_calls, cfg.p_final
    total_w = pr + pc + pf
    if cfg.normalize_penalty_weights and total_w > 0:
        pr, pc, pf = pr / total_w, pc / total_w, pf / total_w
    p_miss = pr * (i_r and not c.reflect) + pf * (i_f and not c.final) + pc * (n > 0 and m == 0)
    p_extra = pr * (bool(c.reflect) and not i_r) + pf * (bool(c.final) and not i_f) + pc * (m > 0 and n == 0)
    p_count = pc * (abs(n - m) / max(n, m)) if (n > 0 and m > 0 and n != m) else 0.0
    if p_miss == 0 and p_extra == 0 and p_count == 0:
        format_factor = 1.0
    else:
        p_total = p_miss + cfg.beta_extra * p_extra + cfg.gamma_count * p_count
        r = cfg.r_reduce if (calls_equal and n > 0) else 1.0
        format_factor = _clip(1.0 - cfg.lambda_m * p_total * r)

    core = structure * format_factor
    backoff = core < cfg.epsilon
    if backoff:
        linear = _linearise(c, rel)
        reward = _clip(cfg.backoff_weight * _sim(sim, linear, gold.linear, gold.linear_sig, eps))
    else:
        reward = _clip(core)
    return dict(
        s_reflect=s_reflect,
        s_calls=s_calls,
        s_final=s_final,
        structure=structure,
        p_miss=float(p_miss),
        p_extra=float(p_extra),
        p_count=float(p_count),
        format_factor=format_factor,
        core=core,
        backoff=backoff,
        reward=reward,
    )


def reflection_reward(
    completion: Any,
    ground_truth: Any,
    config: RewardConfig | None = None,
    sim: Similarity | None = None,
) -> float:
    """R_total of eq. 25 for one completion: a float in [0, 1]; never raises (a bug inside is
    logged with its traceback and scores 0, so a training run goes on but does not hide it)."""
    try:
        return float(_compute(completion, ground_truth, config, sim)["reward"])
    except Exception:  # totality: a reward function that raises kills a training run
        log.exception("reflection_reward failed on a completion; it scores 0")
        return 0.0


_DEFAULT = RewardConfig()
_GOLD_COLUMNS = ("ground_truth", "solution", "answer", "gold")


def _completion_text(completion: Any) -> Any:
    # TRL gives conversational completions as [{"role": "assistant", "content": ...}, ...].
    if isinstance(completion, list):
        texts = [m.get("content", "") for m in completion if isinstance(m, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return completion


def make_reward_fn(
    config: RewardConfig | None = None,
    sim: Similarity | None = None,
    column: str | None = None,
) -> Callable[..., list[float]]:
    """A TRL-compatible reward function ``f(completions, **kwargs) -> list[float]``.

    The gold replies come from the dataset column ``column`` (by default the first of
    ``ground_truth``, ``solution``, ``answer``, ``gold`` present in ``kwargs``)::

        trainer = GRPOTrainer(..., reward_funcs=[make_reward_fn()], train_dataset=ds)
    """

    def reflection_reward_fn(completions: list[Any], **kwargs: Any) -> list[float]:
        name = column or next((c for c in _GOLD_COLUMNS if c in kwargs), None)
        if name is None or name not in kwargs:
            wanted = column or " / ".join(_GOLD_COLUMNS)
            raise ConfigError(f"the reward needs a gold column ({wanted}); got columns {sorted(kwargs)}")
        golds = kwargs[name]
        if len(golds) != len(completions):
            raise ConfigError(f"{len(completions)} completions but {len(golds)} gold values in {name!r}")
        return [
            reflection_reward(_completion_text(c), g, config, sim)
            for c, g in zip(completions, golds, strict=True)
        ]

    return reflection_reward_fn


reward_fn = make_reward_fn()
"""The reward with the default config, ready for ``GRPOTrainer(reward_funcs=[reward_fn])``."""
