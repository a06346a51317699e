"""The noisy backend: labelled, seeded mistakes and explicit reactions to feedback."""

from __future__ import annotations

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.formats import parse_calls
from toolmend.guard import Guard, Turn
from toolmend.models import Completion, get_model
from toolmend.strategies._noisy import NoisyModel

TOOLS = [
    Tool(
        name="get_weather",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    )
]
GOLD = '[get_weather(city="Oslo", days=3)]'


def noisy(**kw: object) -> NoisyModel:
    model = get_model("noisy/scripted", script=lambda messages: GOLD, tools=TOOLS, **kw)
    assert isinstance(model, NoisyModel)
    return model


def prompt(i: int) -> list[Message]:
    return [Message(role="user", content=f"question {i}")]


async def test_same_seed_same_answers_and_rate_is_calibrated() -> None:
    a, b = noisy(noise=0.5, seed=3), noisy(noise=0.5, seed=3)
    outs_a = [(await a.generate(prompt(i))).text for i in range(200)]
    outs_b = [(await b.generate(prompt(i))).text for i in range(200)]
    assert outs_a == outs_b
    wrong = sum(o != GOLD for o in outs_a)
    assert 70 <= wrong <= 130  # 0.5 of 200, with room for the binomial spread
    assert sum(a.labels.values()) == a.stats["injected"] == wrong


async def test_zero_noise_is_the_inner_model() -> None:
    m = noisy(noise=0.0)
    assert {(await m.generate(prompt(i))).text for i in range(20)} == {GOLD}


async def reask(m: NoisyModel, i: int, feedback: str) -> str:
    first = await m.generate(prompt(i))
    return (
        await m.generate(
            [
                *prompt(i),
                Message(role="assistant", content=first.text),
                Message(role="user", content=feedback),
            ]
        )
    ).text


async def test_precise_feedback_is_honoured_more_than_vague() -> None:
    m = noisy(rates={"hitec_missing_required": 1.0}, p_fix_precise=1.0, p_fix_vague=0.0)
    first = (await m.generate(prompt(0))).text
    guard_text = Guard(TOOLS).decide(Turn.from_text(first)).messages[-1].content
    assert await reask(m, 0, guard_text) == GOLD
    assert await reask(m, 1, "Something is wrong, please fix your mistakes.") != GOLD


async def test_fixing_follows_the_given_probability() -> None:
    m = noisy(rates={"hitec_missing_required": 1.0}, p_fix_precise=0.5)
    fixed = 0
    for i in range(100):
        first = (await m.generate(prompt(i))).text
        text = Guard(TOOLS).decide(Turn.from_text(first)).messages[-1].content
        fixed += await reask(m, i, text) == GOLD
    assert 30 <= fixed <= 70


async def test_refine_request_breaks_a_correct_answer_with_p_break() -> None:
    m = noisy(rates={"hitec_invalid_type": 0.0, "hitec_missing_required": 0.0}, p_break=1.0)
    out = await reask(m, 0, "Check your answer and improve it if needed.")
    assert out != GOLD and m.stats["broken"] == 1
    never = noisy(rates={"hitec_missing_required": 0.0}, p_break=0.0)
    assert await reask(never, 0, "Check your answer again.") == GOLD


async def test_tool_messages_alone_are_a_new_step() -> None:
    calls: list[int] = []

    def script(messages: list[Message]) -> str:
        calls.append(len(messages))
        return GOLD

    m = NoisyModel(get_model("scripted", script=script), noise=0.0, tools=TOOLS)
    first = await m.generate(prompt(0))
    await m.generate(
        [*prompt(0), Message(role="assistant", content=first.text), Message(role="tool", content="{}")]
    )
    assert calls == [1, 3]  # the inner model was asked again for the next step


async def test_native_mode_corrupts_tool_calls() -> None:
    gold = Completion(
        tool_calls=[ToolCall(name="get_weather", arguments={"city": "Oslo", "days": 3}, id="c0")]
    )
    m = NoisyModel(get_model("scripted", script=lambda ms: gold), rates={"hitec_invalid_format": 1.0})
    out = await m.generate(prompt(0), tools=TOOLS)
    assert out.raw_tool_calls[0].error and not out.tool_calls


def test_text_errors_keep_the_reply_format() -> None:
    m = noisy(rates={"hitec_wrong_tool_name": 1.0})
    import asyncio

    out = asyncio.run(m.generate(prompt(0))).text
    assert parse_calls(out).format == "python" and parse_calls(out).calls[0].name != "get_weather"


@pytest.mark.parametrize(
    "kw",
    [
        {"rates": {"no_such_operator": 0.1}},
        {"rates": {"hitec_missing_required": 0.8, "hitec_invalid_type": 0.8}},
        {"p_fix_precise": 1.5},
        {"noise": 0.1, "rates": {"hitec_missing_required": 0.1}},
    ],
)
def test_bad_parameters_are_config_errors(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        noisy(**kw)


def test_noisy_needs_an_inner_model() -> None:
    with pytest.raises(ConfigError, match="inner backend"):
        get_model("noisy")


def test_label_names_every_parameter() -> None:
    text = noisy(noise=0.2, seed=4).describe()
    assert text.startswith("simulation: noisy/scripted") and "p_break=0.05" in text and "seed=4" in text
