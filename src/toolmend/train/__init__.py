"""Teach: verified training data, checklist rewards, and SFT / KTO / GRPO recipes on TRL.

The builders and rewards need only toolmend's core dependencies; :func:`build_dataset` and the
recipes need the ``train`` extra (``pip install 'toolmend[train]'``) and say so when it is missing.

>>> from toolmend.train import build_rows
>>> rows, report = build_rows("sft", source="world", seed=0, limit=2)
>>> sorted(rows[0])[:4], report.rows
(['checker_version', 'code', 'completion', 'gold_calls'], 2)
"""

from toolmend.train._data import (
    KINDS,
    SOURCE_KINDS,
    BuildReport,
    Kind,
    build_dataset,
    build_rows,
    verify_injection,
)
from toolmend.train._iterate import EvalSet, IterateConfig, IterateResult, RoundResult, iterate
from toolmend.train._recipes import (
    GRPO_PRESETS,
    REWARDS,
    Prepared,
    TrainResult,
    balanced_desirable_weight,
    prepare,
    train,
)
from toolmend.train._rewards import (
    CallMatchConfig,
    SchemaRewardConfig,
    call_match_reward,
    call_match_score,
    reflection_config,
    schema_reward,
    schema_score,
    structured_reflection_reward,
)
from toolmend.train._world_reward import WorldRewardConfig, world_reward, world_score

__all__ = [
    "GRPO_PRESETS",
    "KINDS",
    "REWARDS",
    "SOURCE_KINDS",
    "BuildReport",
    "CallMatchConfig",
    "EvalSet",
    "IterateConfig",
    "IterateResult",
    "Kind",
    "Prepared",
    "RoundResult",
    "SchemaRewardConfig",
    "TrainResult",
    "WorldRewardConfig",
    "balanced_desirable_weight",
    "build_dataset",
    "build_rows",
    "call_match_reward",
    "call_match_score",
    "iterate",
    "prepare",
    "reflection_config",
    "structured_reflection_reward",
    "schema_reward",
    "schema_score",
    "train",
    "verify_injection",
    "world_reward",
    "world_score",
]
