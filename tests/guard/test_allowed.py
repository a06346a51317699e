"""tool_choice and parallel_tool_calls in the guard itself (AllowedCalls), the driver starting
from a decision already made, and the openai adapter enforcing both for a server that ignores them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolmend._errors import ConfigError
from toolmend.guard import AllowedCalls, Guard, GuardPolicy, Reply, Turn, drive
from toolmend.guard._driver import drive_sync

TOOLS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                           "required": ["city"]}},
    {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
]  # fmt: skip


def native(*calls: tuple[str, dict[str, Any]], text: str = "") -> Turn:
    return Turn.from_native(text, [{"id": f"c{i}", "name": n, "arguments": json.dumps(a)}
                                   for i, (n, a) in enumerate(calls)])  # fmt: skip


OSLO = ("get_weather", {"city": "Oslo"})
ROME = ("get_weather", {"city": "Rome"})
UTC = ("get_time", {"tz": "UTC"})


@pytest.mark.parametrize(
    ("request_", "want"),
    [
        ({}, AllowedCalls()),
        ({"tool_choice": "auto", "parallel_tool_calls": True}, AllowedCalls()),
        ({"tool_choice": "none"}, AllowedCalls(mode="none")),
        ({"tool_choice": "required", "parallel_tool_calls": False}, AllowedCalls(mode="required", parallel=False)),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, AllowedCalls("required", ("f",))),
        (
            {"tool_choice": {"type": "allowed_tools", "allowed_tools": {
                "mode": "required", "tools": [{"type": "function", "function": {"name": "g"}}]}}},
            AllowedCalls("required", ("g",)),
        ),
        ({"tool_choice": {"type": "function"}}, AllowedCalls()),  # unreadable: nothing to enforce
        ({"tool_choice": 7}, AllowedCalls()),
    ],
)  # fmt: skip
def test_from_openai(request_: dict[str, Any], want: AllowedCalls) -> None:
    assert AllowedCalls.from_openai(request_) == want


def test_none_drops_every_call_and_keeps_the_text() -> None:
    d = Guard(TOOLS).decide(native(OSLO, UTC, text="Here."), allowed=AllowedCalls(mode="none"))
    assert (d.action, d.calls) == ("repaired", [])
    assert [(f.code, f.action, f.call, f.before) for f in d.fixes] == [
        ("tool_choice_none", "drop_call", 0, "get_weather"),
        ("tool_choice_none", "drop_call", 1, "get_time"),
    ]


def test_parallel_false_keeps_the_first_call_only() -> None:
    d = Guard(TOOLS).decide(native(OSLO, ROME), allowed=AllowedCalls(parallel=False))
    assert d.action == "repaired" and [c.arguments for c in d.calls] == [{"city": "Oslo"}]
    assert [(f.code, f.call) for f in d.fixes] == [("parallel_tool_calls", 1)]
    # One call is fine as it is.
    assert Guard(TOOLS).decide(native(OSLO), allowed=AllowedCalls(parallel=False)).action == "accept"


def test_a_named_tool_makes_other_tools_unknown() -> None:
    guard = Guard(TOOLS)
    only_weather = AllowedCalls(mode="required", names=("get_weather",))
    d = guard.decide(native(UTC), allowed=only_weather)
    assert d.action == "reask" and d.findings[0].code == "wrong_tool_name"
    assert (
        "get_weather" in d.messages[-1].content
        and "get_time" not in d.messages[-1].content.split("one of")[-1]
    )
    assert guard.decide(native(OSLO), allowed=only_weather).action == "accept"
    # Without the choice the same call is valid.
    assert guard.decide(native(UTC)).action == "accept"


def test_required_without_a_call_is_reasked_then_aborted() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_turn=1, escalate_after=5))
    required = AllowedCalls(mode="required")
    d = guard.decide(Turn.from_native("It is sunny.", []), allowed=required)
    assert d.action == "reask" and d.findings[0].code == "wrong_tool_count"
    assert [m.role for m in d.messages] == ["assistant", "user"]
    assert "tool call is required" in d.messages[-1].content
    d = guard.decide(Turn.from_native("Still sunny.", []), attempt=1, allowed=required)
    assert d.action == "abort" and d.calls == []
    # auto: no call is a fine answer.
    assert Guard(TOOLS).decide(Turn.from_native("It is sunny.", [])).action == "accept"


async def test_drive_applies_the_choice_to_every_answer() -> None:
    answers = iter([native(OSLO, ROME)])

    async def respond(_messages: Any) -> Turn:
        return next(answers)

    out = await drive(Guard(TOOLS), respond, [], first=Turn.from_native("", []),
                      allowed=AllowedCalls(mode="required", parallel=False))  # fmt: skip
    assert out.status == "recovered" and [c.arguments for c in out.calls] == [{"city": "Oslo"}]
    assert [d.action for d in out.decisions] == ["reask", "repaired"]


def test_drive_starts_from_a_decision_without_checking_again() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_turn=1, max_reasks_per_run=1))
    first = native(("get_weather", {}))
    decision = guard.decide(first)
    assert decision.action == "reask" and guard.reasks_used == 1
    seen: list[Any] = []

    def respond(messages: Any) -> Reply:
        seen.append(messages)
        return Reply(turn=native(OSLO))

    out = drive_sync(guard, respond, [], first=first, decision=decision)
    # The re-ask was the given decision's; had the driver decided again, the run's budget of one
    # re-ask would have been spent twice and the turn aborted.
    assert out.status == "recovered" and out.decisions[0] is decision and len(seen) == 1
    assert seen[0] == decision.messages


def test_drive_needs_the_answer_a_given_decision_is_about() -> None:
    decision = Guard(TOOLS).decide(native(OSLO))
    with pytest.raises(ConfigError, match="first="):
        drive_sync(Guard(TOOLS), lambda _m: Turn(), [], decision=decision)
