"""--prompt-template: each benchmark takes the user's own prompt in its own form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend.bench import run_bench
from toolmend.benchmarks.critictool.prompts import Instructions
from toolmend.benchmarks.templates import template_options
from toolmend.errors import ConfigError, DatasetError
from toolmend.models import ScriptedModel
from toolmend.schema import Message


def test_options_per_benchmark(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("MY PROMPT {apis} {task}")
    assert template_options("nestools", text) == {"prompt_template": text}
    assert template_options("bfcl", text) == {"system_prompt": "MY PROMPT {apis} {task}"}
    assert template_options("api-bank", text) == {"system_template": "MY PROMPT {apis} {task}"}
    modes = tmp_path / "modes.json"
    modes.write_text(json.dumps({"internal": "FIND THE ERROR."}))
    instructions = template_options("critictool", modes)["instructions"]
    assert isinstance(instructions, Instructions)
    assert instructions.internal == "FIND THE ERROR." and instructions.skip == Instructions().skip


def test_bad_templates_are_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="absent.txt"):
        template_options("bfcl", tmp_path / "absent.txt")
    bad = tmp_path / "modes.json"
    bad.write_text('{"internl": "typo"}')
    with pytest.raises(DatasetError, match="mode instructions"):
        template_options("critictool", bad)
    with pytest.raises(ConfigError, match="no replaceable prompt"):
        template_options("reflection-bench", bad)


def test_bench_sends_the_users_system_prompt(tmp_path: Path, data_dir: Path) -> None:
    template = tmp_path / "system.txt"
    template.write_text("ONLY PYTHON CALLS, PLEASE.")
    seen: list[str] = []

    def reply(messages: list[Message]) -> str:
        seen.append(messages[0].content)
        return "[]"

    run_bench(
        "bfcl",
        ScriptedModel(reply),
        data=data_dir / "bfcl",
        categories=["simple_python"],
        limit=2,
        runs_dir=tmp_path / "runs",
        cache=False,
        progress=False,
        report=False,
        prompt_template=template,
    )
    assert len(seen) == 2 and all(s.startswith("ONLY PYTHON CALLS, PLEASE.") for s in seen)
