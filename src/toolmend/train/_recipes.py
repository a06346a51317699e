"""SFT, KTO and GRPO recipes: thin over TRL's trainers, with the checks TRL leaves to run time.

Everything that can be wrong with the inputs is found before a trainer is built: the ``train``
extra, the model folder, the data file and its columns, batch sizes against ``num_generations``,
a chat template without ``{% generation %}`` markers when ``assistant_only_loss`` needs them, a
template that drops the ``tools`` column, and a GRPO prompt rendered with other tools than SFT
would render it (TRL's GRPOTrainer ignores a dataset ``tools`` column; :class:`ToolGRPOTrainer`
renders each prompt with its own row's tools, and :func:`prepare` proves the two renderings equal).

GRPO presets (``preset=``):

=========  ====================================================================================
``dapo``   ``loss_type="dapo"``, ``epsilon=0.2``, ``epsilon_high=0.28`` (clip-higher),
           ``mask_truncated_completions=True``, ``beta=0``, plus DAPO's soft overlong
           punishment as an extra reward (``trl.rewards.get_soft_overlong_punishment``)
``gspo``   ``importance_sampling_level="sequence"``, ``loss_type="grpo"``, ``epsilon=3e-4``,
           ``epsilon_high=4e-4``, ``beta=0``, ``steps_per_generation=4`` (TRL's GSPO reproduction)
=========  ====================================================================================

KTO option ``cut_negatives=True``: each undesirable completion is cut, in the tokenized sequence
the trainer scores, after its first token that differs from the desirable completion of the same
prompt and tools (rows without one are kept whole; the trainer's ``cut_count`` counts the cuts).
KTO lowers a negative's summed log-probability, and the cheapest tokens to lower are often those
after the mistake: a model trained on whole duplicated-call negatives learned to break the second
call's JSON rather than not start it (docs/benchmarks.md, learning check).

KTO option ``desirable_weight="balanced"``: the weight is set from the data's labels so that
``desirable_weight * n_desirable / (undesirable_weight * n_undesirable)`` is 7/6, the middle of
the range [1, 4/3] that the KTO paper (Eq. 8) asks for (:func:`balanced_desirable_weight`). TRL
only warns when the weights fall outside it; rows labelled by a checker are rarely balanced.

DAPO's dynamic sampling is not in TRL. ``dynamic_sampling=True`` (the default) drops groups
whose rewards all tie (advantage 0, no gradient) from the loss and its token normaliser, and
counts them (``dynamic_sampling/dropped_groups`` in the logs, :attr:`TrainResult.dropped_groups`).
It does not re-sample to refill the batch.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from toolmend._errors import ConfigError, DatasetError
from toolmend._jsontext import MAX_DEPTH, depth, lines, loads, read_json, read_text
from toolmend.train._deps import require
from toolmend.train._rewards import RewardFn, call_match_reward, schema_reward, structured_reflection_reward
from toolmend.train._world_reward import world_reward

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "GRPO_PRESETS",
    "REWARDS",
    "Prepared",
    "RecipeKind",
    "TrainResult",
    "balanced_desirable_weight",
    "check_generation_markers",
    "cut_negatives",
    "load_config",
    "load_rows",
    "prepare",
    "train",
]

RecipeKind = Literal["sft", "kto", "grpo"]

GRPO_PRESETS: dict[str, dict[str, Any]] = {
    "dapo": {
        "loss_type": "dapo",
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "mask_truncated_completions": True,
        "beta": 0.0,
    },
    "gspo": {
        "importance_sampling_level": "sequence",
        "loss_type": "grpo",
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        "beta": 0.0,
        "steps_per_generation": 4,
    },
}

REWARDS: dict[str, tuple[Callable[[], RewardFn], str]] = {
    "schema": (schema_reward, "tools"),
    "call_match": (call_match_reward, "gold_calls"),
    "reflection": (structured_reflection_reward, "ground_truth"),
    "reflection_released": (lambda: structured_reflection_reward("released"), "ground_truth"),
    "world": (world_reward, "trace_id"),
}
"""GRPO reward names for ``rewards=`` / ``--reward``: the factory and the column it reads."""

_COLUMNS: dict[str, tuple[str, ...]] = {"sft": ("prompt", "completion"), "kto": ("prompt", "completion", "label"),
                                        "grpo": ("prompt",)}  # fmt: skip
_TOOLMEND_KEYS = {"preset", "rewards", "dynamic_sampling", "lora", "vllm", "num_processes", "cut_negatives",
                  "max_row_chars", "merge"}  # fmt: skip
MAX_ROW_CHARS = 1_000_000
"""A training row with more text than this is refused (``max_row_chars`` in the config changes it):
far beyond any model's context window, and slow to tokenise."""
_GENERATION = re.compile(r"\{%-?\s*generation\s*-?%\}")


@dataclass
class TrainResult:
    """What :func:`train` did."""

    out: Path
    steps: int
    log: list[dict[str, Any]] = field(default_factory=list)
    dropped_groups: int = 0
    """GRPO with dynamic sampling: prompt groups whose rewards tied and were left out of the loss."""


@dataclass
class Prepared:
    """A trainer built and checked, not yet run."""

    kind: str
    trainer: Any
    out: Path


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file (or a JSON list); a bad line is a :class:`DatasetError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError("data file not found", path=path)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read: {exc}", path=path) from None
    if path.suffix == ".json":
        try:
            data = loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from None
        if not isinstance(data, list):
            raise DatasetError("expected a JSON list of rows", path=path)
        return data
    rows = []
    for n, line in lines(text):
        try:
            row = loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not JSON: {exc.msg}", path=path, line=n) from None
        if not isinstance(row, dict):
            raise DatasetError("expected one JSON object per line", path=path, line=n)
        rows.append(row)
    if not rows:
        raise DatasetError("the data file has no rows", path=path)
    return rows


def load_config(path: str | Path | None) -> dict[str, Any]:
    """Options from a YAML or JSON file: TRL config fields plus ``preset``, ``rewards``,
    ``dynamic_sampling``, ``lora`` (LoRA settings) and ``vllm``.

    A ``.json`` file is read as JSON; any other as YAML. A value nested deeper than
    :data:`~toolmend._jsontext.MAX_DEPTH` or a number that is not finite (``NaN``, ``.inf``) is a
    :class:`ConfigError` naming the file (and the key), before any training starts.
    """
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    if path.suffix == ".json":
        try:
            data = read_json(path)
        except DatasetError as exc:
            raise ConfigError(str(exc)) from None
    else:
        data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of options")
    _check_finite(data, path, "")
    return data


def _read_yaml(path: Path) -> Any:
    import yaml

    try:
        data = yaml.safe_load(read_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML/JSON: {exc}") from None
    except RecursionError:  # PyYAML's composer recurses once per level
        raise ConfigError(f"{path}: nested too deeply (more than {MAX_DEPTH} levels)") from None
    if depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ConfigError(f"{path}: nested too deeply (more than {MAX_DEPTH} levels)")
    return data


def _check_finite(value: Any, path: Path | str, key: str) -> None:
    """A NaN or infinite option would train on (a NaN learning rate gives NaN weights silently)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path}: {key or 'value'}: {value} is not a finite number")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, path, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, path, f"{key}[{i}]")


def check_generation_markers(tokenizer: Any, model: str | Path) -> None:
    """Raise unless the chat template marks assistant turns with ``{% generation %}``."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if not _GENERATION.search(template if isinstance(template, str) else json.dumps(template)):
        raise ConfigError(
            f"{model}: assistant_only_loss needs {{% generation %}}...{{% endgeneration %}} markers in the chat "
            "template, and this one has none; use prompt-completion data (toolmend build writes it) or a "
            "training template (SFTConfig.chat_template_path)"
        )


def _render(tokenizer: Any, prompt: Any, tools: Any, chat_template: Any = None) -> list[int]:
    out = tokenizer.apply_chat_template(
        conversation=[prompt], tools=tools or None, chat_template=chat_template,
        add_generation_prompt=True, tokenize=True, return_dict=True,
    )  # fmt: skip
    return list(out["input_ids"][0])


def _tools(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _check_tools_rendered(tokenizer: Any, row: dict[str, Any], model: str | Path) -> None:
    """A ``tools`` column must change the rendered prompt, or the template silently drops it."""
    tools = _tools(row.get("tools"))
    if not tools or not isinstance(row.get("prompt"), list):
        return
    if _render(tokenizer, row["prompt"], tools) == _render(tokenizer, row["prompt"], None):
        raise ConfigError(
            f"{model}: the chat template ignores the `tools` column (the prompt renders the same with and "
            "without tools), so the model would never see the tools it is trained to call; for a named local "
            "model pass its name (--model smollm2-135m), which brings toolmend's template for it"
        )


def _grpo_trainer_class() -> type:
    import torch
    from trl import GRPOTrainer

    class ToolGRPOTrainer(GRPOTrainer):
        """GRPO that renders each prompt with its own row's ``tools`` (as SFT and KTO do) and,
        with ``dynamic_sampling``, drops tied-reward groups from the loss and counts them."""

        dynamic_sampling = True
        dropped_groups = 0
        _batch_tools: list[Any] | None = None

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            self._batch_tools = [_tools(x.get("tools")) for x in inputs] if "tools" in inputs[0] else None
            try:
                output = super()._generate_and_score_completions(inputs)
            finally:
                self._batch_tools = None
            if self.dynamic_sampling:
                self._drop_tied_groups(output)
            return output

        def _tokenize_prompts(self, prompts: list[Any]) -> Any:
            if (
                self._batch_tools is None
                or self.environment_factories is not None
                or isinstance(prompts[0], str)
            ):
                return super()._tokenize_prompts(prompts)
            ids = [
                _render(self.processing_class, p, t, self.chat_template)
                for p, t in zip(prompts, self._batch_tools, strict=True)
            ]
            return ids, None, {}

        def _drop_tied_groups(self, output: dict[str, Any]) -> None:
            # Rows of a tied group all get advantage 0: no gradient, but with loss_type="dapo" their
            # tokens still count in the normaliser and dilute the other groups' signal.
            advantages = output["advantages"]
            tied = advantages.abs() <= 1e-8
            mask = output["completion_mask"] * (~tied).unsqueeze(1).int()
            output["completion_mask"] = mask
            loss_mask = mask if output.get("tool_mask") is None else mask * output["tool_mask"]
            output["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
            groups = self.accelerator.gather(tied.float().sum()).sum().item() / self.num_generations
            mode = "train" if self.model is not None and self.model.training else "eval"
            self.dropped_groups += int(round(groups))
            self._metrics[mode]["dynamic_sampling/dropped_groups"].append(float(groups))
            self._metrics[mode]["dynamic_sampling/kept_frac"].append(
                float(torch.as_tensor(1.0) - tied.float().mean()) if tied.numel() else 1.0
            )

    return ToolGRPOTrainer


def _model_source(model: str | Path) -> tuple[Path, str | None]:
    """The transformers folder to train ``model`` from, and the chat template to render its rows
    with (``None``: the tokenizer's own).

    ``model`` is a folder, or a GGUF model that ``hf/`` runs too: a named local model
    (``smollm2-135m``) or a ``.gguf`` path, converted once into a plain folder
    (:func:`toolmend.models.hf_folder`). A named model whose own template ignores tools comes with
    toolmend's template (the one ``hf/<name>`` renders with), so the rows are rendered with their
    tools; the trained model is saved with it, and ``hf/<out>`` renders the same prompts.

    >>> _model_source("no/such/folder")
    Traceback (most recent call last):
    ...
    toolmend._errors.ConfigError: no/such/folder: model folder does not exist; pass a local Hugging Face model folder, a .gguf file or a named local model (--model PATH)
    """
    from toolmend.models._gguf import hf_folder, is_gguf_ref, resolve_gguf

    if is_gguf_ref(model) and not Path(model).is_dir():
        source = resolve_gguf(model)
        return hf_folder(source), source.chat_template
    return _model_dir(model), None


def _model_dir(model: str | Path) -> Path:
    path = Path(model)
    if not (path / "config.json").is_file():
        what = "does not exist" if not path.exists() else "has no config.json"
        raise ConfigError(
            f"{path}: model folder {what}; pass a local Hugging Face model folder, a .gguf file or a named "
            "local model (--model PATH)"
        )
    return path


def _check_columns(
    kind: str,
    rows: Sequence[dict[str, Any]],
    data: Path | str,
    needed: Sequence[str],
    max_chars: int = MAX_ROW_CHARS,
) -> None:
    for column in (*_COLUMNS[kind], *needed):
        for n, row in enumerate(rows, 1):
            if column not in row:
                raise DatasetError(
                    f"missing column (a {kind} dataset needs it)", path=data, line=n, field=column
                )
    for n, row in enumerate(rows, 1):
        for column in ("prompt", "completion"):
            value = row.get(column, "")
            if not isinstance(value, (str, list)):
                got = "null" if value is None else type(value).__name__
                raise DatasetError(
                    f"expected text or a list of messages, got {got}", path=data, line=n, field=column
                )
        if kind == "kto" and not isinstance(row["label"], bool):
            got = "null" if row["label"] is None else type(row["label"]).__name__
            raise DatasetError(f"expected true or false, got {got}", path=data, line=n, field="label")
        size = _text_size(row)
        if size > max_chars:
            # Tokenising such a row takes minutes and no context window holds it; cutting it would
            # train on a conversation that ends mid-turn.
            raise DatasetError(
                f"the row holds {size:,} characters of text, more than max_row_chars ({max_chars:,})",
                path=data,
                line=n,
            )


def _text_size(value: Any) -> int:
    """Characters in all the strings (keys included) inside ``value``."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return size


def _grpo_options(options: dict[str, Any], gpu: bool) -> dict[str, Any]:
    preset = options.pop("preset", None)
    if preset is not None and preset not in GRPO_PRESETS:
        raise ConfigError(f"unknown GRPO preset {preset!r}; expected one of {', '.join(GRPO_PRESETS)}")
    merged = {**GRPO_PRESETS.get(preset or "", {}), **options}
    vllm = merged.pop("vllm", None)
    if vllm is not None:
        if vllm not in ("server", "colocate"):
            raise ConfigError(f"vllm must be 'server' or 'colocate', not {vllm!r}")
        if not gpu:
            raise ConfigError(
                "vLLM generation needs a GPU; none is visible (drop --vllm to generate with transformers)"
            )
        require("vllm")
        merged.update(use_vllm=True, vllm_mode=vllm)
    num_generations = int(merged.get("num_generations", 8))
    merged["num_generations"] = num_generations
    per_device = int(merged.get("per_device_train_batch_size", 8))
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    steps = merged.get("steps_per_generation") or merged.get("gradient_accumulation_steps", 1)
    batch = merged.get("generation_batch_size") or per_device * processes * int(steps)
    if batch % num_generations:
        raise ConfigError(
            f"the generation batch ({batch} = per_device_train_batch_size {per_device} x {processes} process(es) x "
            f"{steps} step(s)) must be divisible by num_generations ({num_generations})"
        )
    return merged


def prepare(
    kind: RecipeKind | str,
    *,
    model: str | Path,
    data: str | Path | Dataset,
    out: str | Path,
    lora: bool = False,
    config: str | Path | dict[str, Any] | None = None,
    rewards: Sequence[str] | None = None,
    extra_rewards: Sequence[RewardFn] = (),
) -> Prepared:
    """Check everything and build the TRL trainer for ``kind`` (``sft``, ``kto`` or ``grpo``).

    ``config`` holds TRL config fields plus ``preset`` / ``rewards`` / ``dynamic_sampling`` /
    ``lora`` / ``vllm``; ``data`` is a JSON Lines file or a :class:`datasets.Dataset`.
    """
    if kind not in get_args(RecipeKind):
        raise ConfigError(f"unknown recipe {kind!r}; expected sft, kto or grpo")
    require()
    model_dir, chat_template = _model_source(model)
    options = dict(config) if isinstance(config, dict) else load_config(config)
    _check_finite(options, "config", "")  # options given as a dict or by --set, not only a file
    lora_options = options.pop("lora", None)
    lora = lora or bool(lora_options)
    dynamic_sampling = bool(options.pop("dynamic_sampling", True))
    cut = bool(options.pop("cut_negatives", False))
    max_chars = options.pop("max_row_chars", MAX_ROW_CHARS)
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1:
        raise ConfigError(f"max_row_chars must be a positive integer, not {max_chars!r}")
    if cut and kind != "kto":
        raise ConfigError(f"cut_negatives is a KTO option; the {kind} recipe does not take it")
    reward_names = list(rewards or options.pop("rewards", None) or ["schema", "call_match"])
    options.pop("rewards", None)
    unknown = [r for r in reward_names if r not in REWARDS]
    if kind == "grpo" and unknown:
        raise ConfigError(f"unknown reward {unknown[0]!r}; expected one of {', '.join(REWARDS)}")

    from datasets import Dataset

    rows = data.to_list() if isinstance(data, Dataset) else load_rows(data)
    needed = [REWARDS[r][1] for r in reward_names] if kind == "grpo" else []
    _check_columns(kind, rows, data if not isinstance(data, Dataset) else "<dataset>", needed, max_chars)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gpu = torch.cuda.is_available()
    if kind == "grpo":
        options = _grpo_options(options, gpu)
    elif options.get("preset") or options.get("vllm"):
        raise ConfigError(f"preset and vllm are GRPO options; the {kind} recipe takes neither")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if chat_template is not None:
        # Set on the tokenizer, not passed per call: TRL renders every row with it, and
        # save_model writes it beside the weights.
        tokenizer.chat_template = chat_template
    if kind == "sft" and options.get("assistant_only_loss"):
        check_generation_markers(tokenizer, model_dir)
    _check_tools_rendered(tokenizer, rows[0], model_dir)

    if kind == "kto":
        _kto_weights(options, rows)
    defaults: dict[str, Any] = {"output_dir": str(out), "report_to": "none", "save_strategy": "no"}
    if not gpu:
        # TRL turns bf16 on by default and refuses it on a CPU unless use_cpu is set; gradient
        # checkpointing only slows a CPU run down.
        defaults.update(use_cpu=True, bf16=False, activation_checkpointing=False)
    args = {**defaults, **{k: v for k, v in options.items() if k not in _TOOLMEND_KEYS}}

    import trl

    config_class = {"sft": trl.SFTConfig, "kto": trl.KTOConfig, "grpo": trl.GRPOConfig}[kind]
    try:
        trl_config = config_class(**args)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{config_class.__name__}: {exc}") from None

    if kind == "sft":
        _check_lengths(rows, tokenizer, getattr(trl_config, "max_length", None), data)
    if kind == "kto" and trl_config.per_device_train_batch_size < 2:
        raise ConfigError("KTO needs per_device_train_batch_size >= 2 (its KL estimate uses the other rows)")
    peft_config = None
    if lora:
        require("peft")
        from peft import LoraConfig

        settings = {"r": 8, "lora_alpha": 16, "target_modules": "all-linear", "task_type": "CAUSAL_LM"}
        try:
            peft_config = LoraConfig(
                **{**settings, **(lora_options if isinstance(lora_options, dict) else {})}
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"lora: {exc}") from None

    dataset = data if isinstance(data, Dataset) else Dataset.from_list(rows)
    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    common = {"model": policy, "args": trl_config, "train_dataset": dataset, "processing_class": tokenizer,
              "peft_config": peft_config}  # fmt: skip
    trainer: Any
    if kind == "sft":
        trainer = trl.SFTTrainer(**common)
    elif kind == "kto":
        trainer = _kto_trainer_class()(**common, cut=cut)
    else:
        funcs: list[Any] = [REWARDS[r][0]() for r in reward_names]
        if trl_config.mask_truncated_completions and trl_config.loss_type == "dapo":
            from trl.rewards import get_soft_overlong_punishment

            length = trl_config.max_completion_length
            funcs.append(get_soft_overlong_punishment(length, max(1, length // 4)))
        funcs += list(extra_rewards)
        trainer = _grpo_trainer_class()(reward_funcs=funcs, **common)
        trainer.dynamic_sampling = dynamic_sampling
        _check_grpo_rendering(trainer, tokenizer, rows[0], model_dir)
    return Prepared(kind, trainer, Path(out))


def _check_lengths(rows: list[dict[str, Any]], tokenizer: Any, max_length: int | None, data: Any) -> None:
    """Rows whose prompt alone fills ``max_length`` tokens keep no completion token after
    truncation: the trainer drops them as fully masked, and with all of them gone it fails deep
    inside (``num_samples=0``). They are counted here, before any training, with the fix."""
    if not max_length or not rows or not isinstance(rows[0].get("prompt"), list):
        return
    lengths = [len(_render(tokenizer, r["prompt"], _tools(r.get("tools")))) for r in rows]
    long = [n for n in lengths if n >= max_length]
    if not long:
        return
    where = data if isinstance(data, str | Path) else "the data"
    message = (
        f"{len(long)} of {len(rows)} rows of {where} have a prompt of {max_length:,} tokens or more "
        f"(the longest {max(long):,}), so nothing of their completion is left within max_length="
        f"{max_length:,} and training would drop them; raise it (--set max_length={_round_up(max(lengths))}) "
        "or offer fewer tools per row (toolmend build ... --max-tools 4)"
    )
    if len(long) == len(rows):
        raise ConfigError(message)
    logging.getLogger("toolmend.status").warning("warning: %s", message)


def _round_up(n: int, step: int = 256) -> int:
    """``n`` plus room for a completion, rounded up to a multiple of ``step``."""
    return -(-(n + step) // step) * step


def _kto_weights(options: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    # TRL's config takes any value here and fails on it mid-training.
    for key in ("desirable_weight", "undesirable_weight"):
        value = options.get(key, 1.0)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and value > 0 or (key, value) == ("desirable_weight", "balanced")):
            expected = "a positive number or 'balanced'" if key == "desirable_weight" else "a positive number"
            raise ConfigError(f"{key} must be {expected}, got {value!r}")
    if options.get("desirable_weight") == "balanced":
        labels = [bool(r["label"]) for r in rows]
        options["desirable_weight"] = balanced_desirable_weight(
            labels, options.get("undesirable_weight", 1.0)
        )


def balanced_desirable_weight(labels: Sequence[bool], undesirable_weight: float = 1.0) -> float:
    """KTO's ``desirable_weight`` for these labels: ``lambda_D * n_D / (lambda_U * n_U) = 7/6``,
    the middle of the KTO paper's range [1, 4/3] (its Eq. 8).

    >>> balanced_desirable_weight([True] * 400 + [False] * 480)
    1.4
    >>> balanced_desirable_weight([True, False])
    1.167
    """
    desirable = sum(labels)
    return round(7 / 6 * undesirable_weight * max(len(labels) - desirable, 1) / max(desirable, 1), 3)


def cut_negatives(examples: list[dict[str, Any]]) -> int:
    """Cut, in place, each undesirable tokenized KTO example after its first completion token that
    differs from the desirable completions of the same prompt (from the one it shares the longest
    prefix with, when a prompt has several); returns how many were cut.

    The examples are TRL's tokenized rows (``prompt_ids``, ``completion_ids``, ``label``), so the
    cut happens in the sequence the trainer scores: the chat template's end-of-turn tokens are
    part of it, and nothing is appended after the cut. (Cutting the text instead lets the template
    close the turn after the cut, and KTO then spends itself on lowering that end-of-turn token,
    which the model never writes mid-call anyway.) A negative that differs from its gold only in
    its last token, or has no gold, is left whole.

    >>> rows = [{"prompt_ids": [1], "completion_ids": [5, 6, 7, 0], "label": True},
    ...         {"prompt_ids": [1], "completion_ids": [5, 8, 7, 0], "label": False}]
    >>> cut_negatives(rows), rows[1]["completion_ids"]
    (1, [5, 8])
    """
    gold: dict[tuple[int, ...], list[list[int]]] = {}
    for e in examples:
        if e["label"]:
            gold.setdefault(tuple(e["prompt_ids"]), []).append(e["completion_ids"])
    cut = 0
    for example in examples:
        goods = gold.get(tuple(example["prompt_ids"]))
        if example["label"] or not goods:
            continue
        bad = example["completion_ids"]
        firsts = [
            next((i for i, (a, b) in enumerate(zip(bad, good, strict=False)) if a != b), None)
            for good in goods
        ]
        if None in firsts:
            continue
        first = max(f for f in firsts if f is not None)
        if first + 1 >= len(bad):
            continue
        example["completion_ids"] = bad[: first + 1]
        cut += 1
    return cut


def _kto_trainer_class() -> Any:
    from trl import KTOTrainer

    class ToolKTOTrainer(KTOTrainer):
        """KTO whose undesirable completions can be cut at the mistake (:func:`cut_negatives`),
        after tokenization and before the KL pairs are drawn from the completions."""

        def __init__(self, *args: Any, cut: bool = False, **kwargs: Any) -> None:
            # Set before TRL's __init__, which prepares the dataset.
            self.cut, self.cut_count = cut, 0
            super().__init__(*args, **kwargs)

        def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any, dataset_name: str) -> Any:
            dataset = super()._prepare_dataset(dataset, processing_class, args, dataset_name)
            if not self.cut or dataset_name != "train":
                return dataset
            from datasets import Dataset

            rows = dataset.to_list()
            self.cut_count = cut_negatives(rows)
            if "KL_completion_ids" in rows[0]:
                # TRL pairs each prompt with the previous row's completion, batch by batch; the
                # pairs are drawn again from the cut completions.
                size = args.per_device_train_batch_size
                for start in range(0, len(rows), size):
                    chunk = rows[start : start + size]
                    kl = [chunk[-1]["completion_ids"]] + [r["completion_ids"] for r in chunk[:-1]]
                    for row, ids in zip(chunk, kl, strict=True):
                        row["KL_completion_ids"] = ids
            return Dataset.from_list(rows)

    return ToolKTOTrainer


def _check_grpo_rendering(trainer: Any, tokenizer: Any, row: dict[str, Any], model: Path) -> None:
    """The GRPO prompt must be token-for-token what SFT renders for the same row."""
    if not isinstance(row.get("prompt"), list):
        return
    trainer._batch_tools = [_tools(row.get("tools"))] if "tools" in row else None
    try:
        ids = trainer._tokenize_prompts([row["prompt"]])[0][0]
    finally:
        trainer._batch_tools = None
    if list(ids) != _render(tokenizer, row["prompt"], _tools(row.get("tools"))):
        raise ConfigError(
            f"{model}: GRPO renders the tools differently from SFT; the policy would see other prompts"
        )


def train(
    kind: RecipeKind | str,
    *,
    model: str | Path,
    data: str | Path | Dataset,
    out: str | Path,
    lora: bool = False,
    config: str | Path | dict[str, Any] | None = None,
    rewards: Sequence[str] | None = None,
) -> TrainResult:
    """Run a recipe and save the model (or adapter) and tokenizer under ``out``.

    With LoRA, ``merge: true`` in ``config`` saves the model with the adapter folded in instead of
    the adapter alone, so that ``out`` is a plain model folder (``hf/<out>``, a second stage).
    """
    options = dict(config) if isinstance(config, dict) else load_config(config)
    merge = bool(options.pop("merge", False))
    if merge and not (lora or options.get("lora")):
        raise ConfigError(
            "merge folds a LoRA adapter into the model; it needs --lora (or lora: in the config)"
        )
    prepared = prepare(kind, model=model, data=data, out=out, lora=lora, config=options, rewards=rewards)
    trainer = prepared.trainer
    trainer.train()
    if merge:
        # A plain checkpoint, which hf/<out> and the next recipe load like any model folder.
        trainer.model.merge_and_unload().save_pretrained(str(out))
        trainer.processing_class.save_pretrained(str(out))
    else:
        trainer.save_model(str(out))
    return TrainResult(
        out=Path(out),
        steps=int(trainer.state.global_step),
        log=list(trainer.state.log_history),
        dropped_groups=int(getattr(trainer, "dropped_groups", 0)),
    )
