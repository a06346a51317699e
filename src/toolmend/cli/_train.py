"""``toolmend train sft|kto|grpo``: the recipes of :mod:`toolmend.train` on TRL.

    toolmend train sft  --model ./tiny --data sft.jsonl --out runs/sft [--lora] [--config sft.yaml]
    toolmend train grpo --model ./sft --data reflect.jsonl --out runs/grpo --preset dapo --reward reflection
    toolmend train grpo ... --accelerate-config zero3.yaml     # relaunched under `accelerate launch`

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
        model: Annotated[Path, typer.Option("--model", help="Local Hugging Face model folder.")],
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


def register(app: typer.Typer) -> None:
    """Add the ``train`` command group (``sft``, ``kto``, ``grpo``) to ``app``."""
    group = typer.Typer(help="Train a model on toolmend data (TRL recipes).", no_args_is_help=True)
    for kind in ("sft", "kto", "grpo"):
        group.command(kind)(_command(kind))
    app.add_typer(group, name="train")
