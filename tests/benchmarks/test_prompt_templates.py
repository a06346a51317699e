"""--prompt-template: one option name (``prompt_template``) for every benchmark, each reading the
text in its own form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend.bench import run_bench
from toolmend.benchmarks.critictool.prompts import Instructions
from toolmend.benchmarks.templates import with_prompt_template
from toolmend.errors import ConfigError, DatasetError
from toolmend.models import ScriptedModel
from toolmend.schema import Message


def test_one_option_name_per_benchmark(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("MY PROMPT {apis} {task} {tools} {functions}")
    nestools = with_prompt_template("nestools", text, distractors=0)
    assert nestools.template == "MY PROMPT {apis} {task} {tools} {functions}"  # type: ignore[attr-defined]
    assert with_prompt_template("bfcl", text).system_prompt.startswith("MY PROMPT")  # type: ignore[attr-defined]
    api_bank = with_prompt_template("api-bank", text)
    assert api_bank.system_template.startswith("MY PROMPT")  # type: ignore[attr-defined]
    modes = tmp_path / "modes.json"
    modes.write_text(json.dumps({"internal": "FIND THE ERROR."}))
    instructions = with_prompt_template("critictool", modes).instructions  # type: ignore[attr-defined]
    assert isinstance(instructions, Instructions)
    assert instructions.internal == "FIND THE ERROR." and instructions.skip == Instructions().skip


def test_bad_templates_are_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="absent.txt"):
        with_prompt_template("bfcl", tmp_path / "absent.txt")
    bad = tmp_path / "modes.json"
    bad.write_text('{"internl": "typo"}')
    with pytest.raises(DatasetError, match=r"modes\.json.*mode instructions"):
        with_prompt_template("critictool", bad)
    with pytest.raises(ConfigError, match="reflection-bench does not take a prompt template"):
        with_prompt_template("reflection-bench", bad)


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
        prompt_template=template,
    )
    assert len(seen) == 2 and all(s.startswith("ONLY PYTHON CALLS, PLEASE.") for s in seen)
