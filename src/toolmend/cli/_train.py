"""``toolmend train sft|kto|grpo``: the recipes of :mod:`toolmend.train` on TRL.

    toolmend train sft  --model ./tiny --data sft.jsonl --out runs/sft [--lora] [--config sft.yaml]
    toolmend train grpo --model ./sft --data reflect.jsonl --out runs/grpo --preset dapo --reward reflection
    toolmend train grpo ... --accelerate-config zero3.yaml     # relaunched under `accelerate launch`
    toolmend train iterate --model ./sft --out runs/iter --rounds 3 --k 8 --alpha 0 --beta 0.9

Every input is checked before training starts; a problem is one ``error:`` line and exit 2.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from toolmend._errors import ToolmendError
from toolmend.cli._console import console, fail, key_values

__all__ = ["register"]


def _relaunch(accelerate_config: Path) -> None:
    """Run this same command under ``accelerate launch --config_file`` (multi-GPU, DeepSpeed, FSDP)."""
    if not accelerate_config.is_file():
        fail(f"{accelerate_config}: accelerate config file not found")
    if shutil.which("accelerate") is None:
        fail("--accelerate-config needs the `accelerate` command (pip install 'toolmend[train]')")
    argv, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if arg == "--accelerate-config":
            skip = True
            continue
        if arg.startswith("--accelerate-config="):
            continue
        argv.append(arg)
    command = ["accelerate", "launch", "--config_file", str(accelerate_config), "-m", "toolmend", *argv]
    raise typer.Exit(subprocess.call(command))


def _command(kind: str):  # type: ignore[no-untyped-def]
    def run(
        model: Annotated[
            Path,
            typer.Option(
                "--model",
                help="Local Hugging Face model folder, a .gguf file or a named local model (smollm2-135m).",
            ),
        ],
        data: Annotated[Path, typer.Option("--data", help="JSON Lines file from `toolmend build`.")],
        out: Annotated[Path, typer.Option("--out", help="Folder for the trained model or adapter.")],
        lora: Annotated[bool, typer.Option("--lora", help="Train a LoRA adapter (peft).")] = False,
        config: Annotated[
            Path | None, typer.Option(help="YAML/JSON: TRL config fields and recipe options.")
        ] = None,
        set_: Annotated[
            list[str] | None,
            typer.Option("--set", help="KEY=VALUE config field, repeatable (wins over --config)."),
        ] = None,
        max_steps: Annotated[int | None, typer.Option(help="Stop after this many optimiser steps.")] = None,
        preset: Annotated[str | None, typer.Option(help="GRPO: dapo or gspo.")] = None,
        reward: Annotated[
            list[str] | None,
            typer.Option(
                help="GRPO reward, repeatable: schema, call_match, reflection, reflection_released, world."
            ),
        ] = None,
        vllm: Annotated[
            str | None, typer.Option(help="GRPO generation with vLLM: server or colocate (GPU).")
        ] = None,
        vllm_server_url: Annotated[
            str | None, typer.Option(help="URL of `trl vllm-serve` in server mode.")
        ] = None,
        deepspeed: Annotated[Path | None, typer.Option(help="DeepSpeed JSON config, passed to TRL.")] = None,
        accelerate_config: Annotated[
            Path | None, typer.Option(help="Relaunch under `accelerate launch --config_file FILE`.")
        ] = None,
    ) -> None:
        if accelerate_config is not None:
            _relaunch(accelerate_config)  # the relaunched command no longer has the flag
        from toolmend.train._recipes import load_config, train

        try:
            options: dict[str, Any] = load_config(config)
            options.update(key_values(set_ or [], "--set"))
            if max_steps is not None:
                options["max_steps"] = max_steps
            if preset is not None:
                options["preset"] = preset
            if vllm is not None:
                options["vllm"] = vllm
            if vllm_server_url is not None:
                options["vllm_server_base_url"] = vllm_server_url
            if deepspeed is not None:
                if not deepspeed.is_file():
                    fail(f"{deepspeed}: DeepSpeed config file not found")
                options["deepspeed"] = str(deepspeed)
            result = train(kind, model=model, data=data, out=out, lora=lora, config=options, rewards=reward)
        except ToolmendError as exc:
            fail(str(exc))
        shown = console()
        last: dict[str, Any] = next((e for e in reversed(result.log) if "loss" in e or "train_loss" in e), {})
        loss = last.get("train_loss", last.get("loss"))
        extra = f", {result.dropped_groups} tied-reward groups left out" if kind == "grpo" else ""
        shown.print(f"{kind}: {result.steps} steps, final loss {loss}{extra}; saved to {result.out}")

    run.__doc__ = f"Train with the {kind} recipe (TRL {kind.upper()}Trainer), checking every input first."
    return run


def _nested(options: dict[str, Any]) -> dict[str, Any]:
    """``sft.max_steps=2`` → ``{"sft": {"max_steps": 2}}``."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                fail(f"--set {key}: {part} is not a group of settings")
        node[leaf] = value
    return out


def iterate_command(
    model: Annotated[Path, typer.Option("--model", help="Local Hugging Face model folder to start from.")],
    out: Annotated[Path, typer.Option("--out", help="Run folder: round-N/ checkpoints and curves.")],
    config: Annotated[Path | None, typer.Option(help="YAML/JSON with IterateConfig fields.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE, repeatable; dotted for groups (sft.max_steps=50)."),
    ] = None,
    rounds: Annotated[int | None, typer.Option(help="Iterations (paper: at most 3).")] = None,
    k: Annotated[int | None, typer.Option("--k", help="Answers sampled per sample for D (paper: 8).")] = None,
    alpha: Annotated[float | None, typer.Option(help="Keep samples with alpha < D (paper: 0).")] = None,
    beta: Annotated[float | None, typer.Option(help="... and D < beta (paper: 0.9).")] = None,
    source: Annotated[str | None, typer.Option(help="Training tasks: world, bfcl or nestools.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the training tasks and sampling.")] = None,
    limit: Annotated[int | None, typer.Option(help="Use at most this many training tasks.")] = None,
    max_tools: Annotated[
        int | None, typer.Option(help="Offer the gold tools plus distractors up to this many.")
    ] = None,
    refine: Annotated[str | None, typer.Option(help="Self-refine samples: model, builder or none.")] = None,
    eval_seed: Annotated[int | None, typer.Option(help="Seed of the held-out eval tasks.")] = None,
    eval_limit: Annotated[int | None, typer.Option(help="Held-out eval tasks.")] = None,
) -> None:
    """ToolACE-R's model-aware iterative training: sample, estimate difficulty, keep alpha < D < beta,
    SFT with self-refine data, evaluate; curves per round in the run folder."""
    from toolmend.train._iterate import curves_table, iterate
    from toolmend.train._recipes import load_config

    try:
        options: dict[str, Any] = load_config(config)
        flags = {"rounds": rounds, "k": k, "alpha": alpha, "beta": beta, "source": source, "seed": seed,
                 "limit": limit, "max_tools": max_tools, "refine": refine}  # fmt: skip
        options.update({key: v for key, v in flags.items() if v is not None})
        for key, value in _nested(key_values(set_ or [], "--set")).items():
            merged = options.get(key)
            options[key] = (
                {**merged, **value} if isinstance(merged, dict) and isinstance(value, dict) else value
            )
        eval_flags = {"seed": eval_seed, "limit": eval_limit}
        if any(v is not None for v in eval_flags.values()):
            options["eval_set"] = {
                **options.get("eval_set", {}),
                **{n: v for n, v in eval_flags.items() if v is not None},
            }
        shown = console()
        result = iterate(model, out, options, log=shown.print)
    except ToolmendError as exc:
        fail(str(exc))
    shown.print(curves_table(result.rounds), markup=False)
    shown.print(f"final model: {result.final_model}; curves in {out}/curves.json, curves.md")


def register(app: typer.Typer) -> None:
    """Add the ``train`` command group (``sft``, ``kto``, ``grpo``, ``iterate``) to ``app``."""
    group = typer.Typer(help="Train a model on toolmend data (TRL recipes).", no_args_is_help=True)
    for kind in ("sft", "kto", "grpo"):
        group.command(kind)(_command(kind))
    group.command("iterate")(iterate_command)
    app.add_typer(group, name="train")
