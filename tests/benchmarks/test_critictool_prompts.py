"""Mode instructions: where they go, what they ask for, and that users can replace them."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmend._schema import Sample
from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool
from toolmend.benchmarks.critictool._prompts import ANCHOR, Instructions, build_prompt, insert_instruction
from toolmend.formats._critictool import CATEGORIES

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return load_critictool(FIXTURES) + load_critictool(FIXTURES, cot=True)


def _pick(samples: list[Sample], part: str, mode: str | None, cot: bool) -> Sample:
    return next(
        s
        for s in samples
        if s.metadata["part"] == part and s.metadata["external_mode"] == mode and s.metadata["cot"] == cot
    )


@pytest.mark.parametrize(
    ("part", "mode", "cot"),
    [
        (p, m, c)
        for p, m in [("internal", None), ("external", "skip"), ("external", "finish")]
        for c in (False, True)
    ],
)
def test_instruction_is_inserted_just_before_the_anchor(
    samples: list[Sample], part: str, mode: str | None, cot: bool
) -> None:
    sample = _pick(samples, part, mode, cot)
    system = build_prompt(sample)[0].content
    original = sample.messages[0].content
    instruction = Instructions().for_sample(part, mode, cot=cot)  # type: ignore[arg-type]
    cut = original.index(ANCHOR)
    assert system == original[:cut] + instruction + original[cut:]
    assert ('"thought"' in instruction) == cot
    if part == "internal":
        assert all(label in instruction for label in CATEGORIES)
        assert '"error"' in instruction
    else:
        assert "three times" in instruction and "FinishAction" in instruction


def test_the_conversation_is_kept_and_tool_results_go_as_user_turns(samples: list[Sample]) -> None:
    sample = _pick(samples, "internal", None, False)
    prompt = build_prompt(sample)
    assert [m.role for m in prompt] == ["system", "user", "assistant", "user"]
    assert [m.content for m in prompt[1:]] == [m.content for m in sample.messages[1:]]
    assert [m.role for m in build_prompt(sample, tool_role="tool")][-1] == "tool"
    # The sample itself is not modified.
    assert ANCHOR in sample.messages[0].content and "tool_select_error" not in sample.messages[0].content


def test_user_template_replaces_ours(samples: list[Sample]) -> None:
    mine = Instructions(finish="CUSTOM FINISH RULES\n")
    bench = CriticToolBenchmark(prompt_template=mine)
    sample = _pick(samples, "external", "finish", False)
    system = bench.prompt(sample)[0].content
    assert "CUSTOM FINISH RULES\n" + ANCHOR in system
    assert "three times" not in system


def test_insert_without_anchor_appends() -> None:
    assert insert_instruction("Tools: []", "Do X.") == "Tools: []\nDo X."
    assert insert_instruction("", "Do X.") == "Do X."
