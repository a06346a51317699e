"""The rule-based checklist critic: signals, categories, corrections, retry-then-finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._bench import arun_bench
from toolmend._schema import Message
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critictool import CriticToolBenchmark
from toolmend.benchmarks.critictool._checklist import ChecklistCritic, critique, read_signal
from toolmend.benchmarks.critictool._prompts import Instructions, insert_instruction
from toolmend.models import get_model

SYSTEM = (
    'Tools:\n[{"name": "weather_now", "description": "Weather.", "required_parameters": '
    '[{"name": "city", "type": "string"}], "optional_parameters": [{"name": "days", "type": "integer"}]}]'
    "\nTo use a tool, reply in JSON.\nRemember: only generate ONE step each time."
)


def _msgs(mode: str, call: dict[str, object], response: str, repeats: int = 1) -> list[Message]:
    part = "internal" if mode == "internal" else "external"
    text = Instructions().for_sample(part, None if part == "internal" else mode, cot=False)  # type: ignore[arg-type]
    out = [
        Message(role="system", content=insert_instruction(SYSTEM, text)),
        Message(role="user", content="Oslo?"),
    ]
    for _ in range(repeats):
        out += [Message(role="assistant", content=json.dumps(call)), Message(role="user", content=response)]
    return out


@pytest.mark.parametrize(
    ("content", "signal"),
    [
        ('{"error": {"code": 429, "type": "rate_limit", "message": "slow down"}}', "environment"),
        ('{"error": {"code": null, "type": "connection_reset", "message": "reset"}}', "environment"),
        ('{"error": {"code": 404, "type": "not_found", "message": "no tool named \'x\'"}}', "unknown_tool"),
        (
            '{"error": {"code": 400, "type": "invalid_request", "message": "unknown parameter \'town\'"}}',
            "key",
        ),
        ('{"error": {"code": 400, "type": "invalid_request", "message": "date must match"}}', "value"),
        ("Invalid parameter key: 'content'.", "key"),
        ("Request timed out", "environment"),
        ('{"temp": 3}', "ok"),
    ],
)
def test_read_signal(content: str, signal: str) -> None:
    assert read_signal(content) == signal


def test_internal_key_error_is_named_and_repaired() -> None:
    reply = json.loads(
        critique(_msgs("internal", {"name": "weather_now", "args": {"City": "Oslo"}}, '{"t": 1}'))
    )
    assert reply == {"error": "parameters_key_error", "name": "weather_now", "args": {"city": "Oslo"}}


def test_internal_hallucinated_tool_goes_to_the_closest_offered_one() -> None:
    reply = json.loads(
        critique(_msgs("internal", {"name": "weather_current", "args": {"city": "Oslo"}}, "{}"))
    )
    assert reply["error"] == "tool_hallucination_error" and reply["name"] == "weather_now"


def test_internal_value_error_and_no_error() -> None:
    bad = json.loads(
        critique(_msgs("internal", {"name": "weather_now", "args": {"city": "Oslo", "days": "x"}}, "{}"))
    )
    assert bad["error"] == "parameters_value_error"
    fine = json.loads(
        critique(_msgs("internal", {"name": "weather_now", "args": {"city": "Oslo"}}, '{"t": 1}'))
    )
    assert fine["error"] == "" and fine["name"] == "FinishAction"


@pytest.mark.parametrize("mode", ["skip", "finish"])
def test_external_retries_once_then_finishes(mode: str) -> None:
    call = {"name": "weather_now", "args": {"city": "Oslo"}}
    fault = '{"error": {"code": 504, "type": "timeout", "message": "no answer"}}'
    first = json.loads(critique(_msgs(mode, call, fault)))
    assert first == call
    second = json.loads(critique(_msgs(mode, call, fault, repeats=2)))
    assert second["name"] == "FinishAction" and "weather_now" in second["args"]


async def test_registered_backend_answers() -> None:
    model = get_model("checklist", cache=False)
    assert isinstance(model, ChecklistCritic)
    out = await model.generate(_msgs("internal", {"name": "nope", "args": {}}, "{}"))
    assert json.loads(out.text)["error"] == "tool_hallucination_error"


async def test_critic_scores_on_a_world_suite(tmp_path: Path) -> None:
    build_suite("world", seed=1, out=tmp_path / "suite", limit=40)
    exact = CriticToolBenchmark(similarity=lambda a, b: float(a == b))
    result = await arun_bench(
        exact, "checklist", data=tmp_path / "suite", runs_dir=tmp_path / "runs", progress=False
    )
    m = result.summary.metrics
    assert m["parse_rate"] == 100.0
    assert m["retry"] == 100.0 and m["break"] == 100.0 and m["finish_tool"] == 100.0
    assert m["parameters_key_error/detect"] == 100.0
    assert m["tool_hallucination_error/category"] == 100.0
    assert m["tool_select_error/category"] == 0.0  # the documented blind spot
    assert 0.0 < m["overall"] < 100.0
    # That the replies never depend on gold is tested with decoy gold in
    # tests/benchmarks/test_critic_suite_validity.py.
