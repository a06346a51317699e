"""toolmend's world, tools and rewards in verl's multi-turn agent loop (the ``verl`` extra).

``toolmend build rl|sft|kto --format verl --out DIR`` (:func:`export_verl`) writes what verl's
``tool_agent`` loop reads: ``DIR/train.parquet`` (rows with ``data_source``, ``prompt`` as chat
messages, ``ability``, ``reward_model{style, ground_truth}``, ``extra_info{index, tools_kwargs,
...}`` and ``agent_name``), ``DIR/tools.yaml`` (one entry per world tool, ``class_name``
:class:`WorldTool`, its OpenAI-format ``tool_schema``) and ``DIR/export.json`` (the counts, and
the verl options that use the files). Train with::

    python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
        data.train_files=DIR/train.parquet data.val_files=DIR/train.parquet \\
        actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.multi_turn.enable=true \\
        actor_rollout_ref.rollout.multi_turn.format=hermes \\
        actor_rollout_ref.rollout.multi_turn.tool_config_path=DIR/tools.yaml \\
        reward.custom_reward_function.path=pkg://toolmend.integrations.verl \\
        reward.custom_reward_function.name=compute_score ...

(``examples/verl/run_grpo.sh`` has the whole command.) :class:`WorldTool` executes each call in
the row's world task, replaying the trajectory's earlier calls so that state carries across
calls although verl creates and releases a tool instance per call; an invalid call gets the
checker-coded error body a real API sends. :func:`compute_score` is the reward: the world's
state grade plus the checklist's share of valid calls.

:class:`WorldTool` needs verl itself (``import verl``); the export and :func:`compute_score` do
not, so data can be built where verl is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmend.integrations.verl._export import VerlExport, export_verl, verl_rows
from toolmend.integrations.verl._reward import compute_score

if TYPE_CHECKING:
    from toolmend.integrations.verl._tool import WorldTool

__all__ = ["VerlExport", "WorldTool", "compute_score", "export_verl", "verl_rows"]


def __getattr__(name: str) -> Any:
    # verl's tool registry imports this module by the YAML's class_name and reads the attribute;
    # everything else here works without verl installed.
    if name == "WorldTool":
        from toolmend.integrations.verl._tool import WorldTool

        return WorldTool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
