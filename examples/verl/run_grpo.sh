#!/usr/bin/env bash
# A few GRPO steps of verl on toolmend's world: multi-turn rollouts through vLLM, the world tools
# executed by toolmend.integrations.verl.WorldTool, the reward from its compute_score.
#
# Needs one GPU (24 GB is enough for the 0.6B default), verl 0.9.1 with its vllm extra
# (`pip install 'verl[vllm]==0.9.1'`, which brings its own torch) and toolmend installed in the same
# environment (`pip install -e .`). Not run on toolmend's CI, which has no GPU: see docs/scaling.md.
#
#   MODEL=Qwen/Qwen3-0.6B STEPS=3 bash examples/verl/run_grpo.sh
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen3-0.6B}
STEPS=${STEPS:-3}
GPUS=${GPUS:-1}
DATA=${DATA:-data/verl-rl}
PYTHON=${PYTHON:-python}

# 64 world tasks, each offered its gold tools plus distractors up to 8 (shorter prompts than all 50).
"$PYTHON" -m toolmend build rl --format verl --out "$DATA" --seed 0 --limit 64 --max-tools 8

"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/train.parquet" \
  data.train_batch_size=16 \
  data.max_prompt_length=4096 \
  data.max_response_length=2048 \
  data.filter_overlong_prompts=true \
  data.return_raw_chat=true \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.actor.use_kl_loss=false \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.rollout.multi_turn.enable=true \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=8 \
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=2048 \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$DATA/tools.yaml" \
  reward.custom_reward_function.path=pkg://toolmend.integrations.verl \
  reward.custom_reward_function.name=compute_score \
  trainer.n_gpus_per_node="$GPUS" \
  trainer.nnodes=1 \
  trainer.total_training_steps="$STEPS" \
  trainer.val_before_train=false \
  trainer.test_freq=-1 \
  trainer.save_freq=-1 \
  trainer.logger='["console"]' \
  trainer.project_name=toolmend \
  trainer.experiment_name=world-grpo \
  "$@"
