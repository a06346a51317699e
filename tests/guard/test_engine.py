"""The guard's decisions, one behaviour per test."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._errors import ConfigError
from toolmend._schema import ToolCall
from toolmend.check import ungrounded
from toolmend.guard import Guard, GuardPolicy, Turn

TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
    {
        "name": "send_mail",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    },
]


def native(*calls: tuple[str, object]) -> Turn:
    return Turn.from_native(
        "",
        [
            {"id": f"call_{i}", "name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}
            for i, (n, a) in enumerate(calls)
        ],
    )


def test_valid_call_is_accepted_unchanged() -> None:
    d = Guard(TOOLS).decide(native(("get_weather", {"city": "Oslo", "days": 3})))
    assert d.action == "accept" and d.calls[0].arguments == {"city": "Oslo", "days": 3} and not d.messages


@pytest.mark.parametrize(
    ("args", "name", "action", "code"),
    [
        ({"city": "Oslo", "days": "3"}, "get_weather", "repaired", "invalid_type"),
        ({"City": "Oslo"}, "get_weather", "repaired", "redundant_parameter"),
        ({"city": "Oslo", "unit": "Celsius"}, "get_weather", "repaired", "invalid_value"),
        ({"city": "Oslo"}, "get_wether", "repaired", "wrong_tool_name"),
        ({"city": "Oslo", "unit": ""}, "get_weather", "repaired", "empty_value"),
        ({"days": 3}, "get_weather", "reask", "missing_required"),
        ({"city": "Oslo", "days": 30}, "get_weather", "reask", "invalid_value"),
        ({"city": "Oslo", "unit": "kelvin"}, "get_weather", "reask", "invalid_value"),
        ({"city": ""}, "get_weather", "reask", "empty_value"),
        ({"city": {"name": "Oslo"}}, "get_weather", "reask", "invalid_type"),
        ({"city": "Oslo"}, "fly_to_moon", "reask", "wrong_tool_name"),
    ],
)
def test_each_code_leads_to_its_action(args: dict[str, object], name: str, action: str, code: str) -> None:
    d = Guard(TOOLS).decide(native((name, args)))
    assert d.action == action
    assert code in d.codes


def test_unreadable_arguments_are_reasked_with_an_echo() -> None:
    d = Guard(TOOLS).decide(native(("get_weather", '{"city": "Os')))
    assert d.action == "reask" and d.reask == [0]
    text = d.messages[1].content
    assert "could not be read" in text and '{"city": "Os' in text and "Nothing was executed" in text


def test_single_quoted_arguments_are_read_leniently_and_recorded() -> None:
    d = Guard(TOOLS).decide(native(("get_weather", "{'city': 'Oslo'}")))
    assert d.action == "repaired" and d.fixes[0].action == "parse_lenient"
    assert d.calls[0].arguments == {"city": "Oslo"}


def test_reask_message_is_targeted() -> None:
    d = Guard(TOOLS).decide(
        native(("send_mail", {"to": "a@b.c"}), ("get_weather", {"city": "Oslo", "unit": "kelvin"}))
    )
    mail, weather = d.messages[1].content, d.messages[2].content
    assert "Call 0 (send_mail)" in mail and "'body'" in mail and "missing" in mail
    assert "Call 1 (get_weather)" in weather and "'unit' must be one of" in weather and "celsius" in weather
    # only the failing tool's schema is quoted
    assert "Schema of send_mail" in mail and "get_weather" not in mail
    assert "Nothing was executed" in mail


def test_did_you_mean_for_unknown_tool() -> None:
    d = Guard(TOOLS, GuardPolicy(repair=False)).decide(native(("get_wether", {"city": "Oslo"})))
    assert "Did you mean 'get_weather'?" in d.messages[1].content


def test_repair_never_invents_a_required_value() -> None:
    d = Guard(TOOLS).decide(native(("send_mail", {"to": "x@y.z"})))
    assert d.action == "reask"
    assert all(fix.action != "add" for fix in d.fixes)
    assert d.calls == []  # the bad call is not passed on


@settings(max_examples=60, deadline=None)
@given(
    city=st.text(min_size=1, max_size=20),
    days=st.integers(min_value=1, max_value=7),
    unit=st.sampled_from(["celsius", "fahrenheit"]),
)
def test_valid_json_in_gives_identical_value_out(city: str, days: int, unit: str) -> None:
    args = {"city": city, "days": days, "unit": unit}
    d = Guard(TOOLS).decide(native(("get_weather", args)))
    assert d.action == "accept" and d.calls[0].arguments == args


@pytest.mark.parametrize("parallel", ["keep_valid", "hold_all"])
def test_pairing_invariant_for_parallel_calls(parallel: str) -> None:
    turn = native(("get_weather", {"city": "Oslo"}), ("send_mail", {"to": "x"}), ("get_weather", {"days": 2}))
    d = Guard(TOOLS, GuardPolicy(parallel=parallel)).decide(turn)  # type: ignore[arg-type]
    assistant, *rest = d.messages
    ids = [c.id for c in assistant.tool_calls]
    assert ids == ["call_0", "call_1", "call_2"]
    assert [m.tool_call_id for m in rest if m.role == "tool"] == ids
    if parallel == "keep_valid":
        assert d.keep == [0] and [c.arguments for c in d.calls] == [{"city": "Oslo"}]
    else:
        assert d.keep == [] and d.calls == [] and "held back" in rest[0].content


def test_kept_calls_lead_and_a_resent_copy_is_dropped() -> None:
    guard = Guard(TOOLS)
    first = guard.decide(native(("get_weather", {"city": "Oslo"}), ("send_mail", {"to": "x"})))
    second = guard.decide(
        native(("get_weather", {"city": "Oslo"}), ("send_mail", {"to": "x", "body": "hi"})),
        attempt=1,
        kept=first.calls,
    )
    assert second.action == "repaired"
    assert [c.name for c in second.calls] == ["get_weather", "send_mail"]


def test_text_turn_reask_is_one_user_message() -> None:
    d = Guard(TOOLS).decide(Turn.from_text("[get_weather(days=2)]"))
    assert [m.role for m in d.messages] == ["assistant", "user"]
    assert "Call 0 (get_weather)" in d.messages[1].content


def test_unparsable_text_is_a_whole_turn_reask() -> None:
    d = Guard(TOOLS).decide(Turn.from_text('[get_weather(city="Oslo"'))
    assert d.action == "reask" and "invalid_format" in d.codes


def test_prose_answer_is_accepted() -> None:
    assert Guard(TOOLS).decide(Turn.from_text("I cannot help with that.")).action == "accept"


def test_turn_budget_then_abort() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_turn=1, escalate_after=5))
    bad = native(("send_mail", {"to": "x"}))
    assert guard.decide(bad, attempt=0).action == "reask"
    d = guard.decide(native(("send_mail", {"body": "x"})), attempt=1)
    assert d.action == "abort" and "turn's budget" in d.reason and d.calls == []


def test_run_budget_spans_turns() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_run=1))
    bad = native(("send_mail", {"to": "x"}))
    assert guard.decide(bad).action == "reask"
    d = guard.decide(bad)
    assert d.action == "abort" and "run's budget" in d.reason
    guard.reset()
    assert guard.decide(bad).action == "reask"


def test_repeated_identical_failure_escalates_then_ends() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_turn=5, escalate_after=1))
    bad = native(("send_mail", {"to": "x"}))
    first = guard.decide(bad, attempt=0)
    second = guard.decide(bad, attempt=1)
    third = guard.decide(bad, attempt=2)
    assert (first.escalated, second.escalated) == (False, True)
    assert "same mistake" in second.messages[1].content
    assert third.action == "abort" and "repeated" in third.reason


def test_fail_to_model_when_reask_is_off() -> None:
    guard = Guard(TOOLS, GuardPolicy(reask=False))
    d = guard.decide(native(("get_weather", {"city": "Oslo"}), ("send_mail", {"to": "x"})))
    assert d.action == "fail_to_model"
    assert [c.name for c in d.calls] == ["get_weather"]
    assert [(m.role, m.tool_call_id) for m in d.messages] == [("tool", "call_1")]
    assert "will not be" in d.messages[0].content


def test_exhausted_budget_can_fail_to_model() -> None:
    guard = Guard(TOOLS, GuardPolicy(max_reasks_per_turn=0, on_exhausted="fail_to_model"))
    assert guard.decide(native(("send_mail", {"to": "x"}))).action == "fail_to_model"


def test_expected_count_holds_the_whole_turn() -> None:
    guard = Guard(TOOLS, GuardPolicy(expected_count=2))
    d = guard.decide(native(("get_weather", {"city": "Oslo"})))
    assert d.action == "reask" and "wrong_tool_count" in d.codes and d.keep == []
    assert d.messages[-1].role == "user"


def test_event_is_json_able() -> None:
    d = Guard(TOOLS).decide(native(("send_mail", {"to": "x"})))
    event = d.event(tokens=3)
    assert json.loads(json.dumps(event))["codes"] == ["missing_required"] and event["tokens"] == 3


def test_bad_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        GuardPolicy(max_reasks_per_run=-2)


def test_calls_as_toolcall_objects() -> None:
    d = Guard(TOOLS).decide(Turn.from_text('[get_weather(city="Oslo")]'))
    assert d.calls == [ToolCall(name="get_weather", arguments={"city": "Oslo"})]


def test_cut_off_reply_is_reasked_not_rewritten_from_its_complete_part() -> None:
    text = '[{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_weather", "arguments": {"city": "Ber'
    turn = Turn.from_text(text)
    assert len(turn.calls) == 1  # the parser kept the complete call
    d = Guard(TOOLS).decide(turn)
    assert d.action == "reask" and "invalid_format" in d.codes


def test_python_quoted_json_is_rewritten() -> None:
    d = Guard(TOOLS).decide(Turn.from_text("[{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}]"))
    assert d.action == "repaired" and [f.action for f in d.fixes] == ["rewrite"]


REQUEST = [{"role": "user", "content": "Weather in Paris for 3 days, and mail ana@example.org the summary."}]


def test_ground_reasks_a_value_the_conversation_never_mentions_once() -> None:
    guard = Guard(TOOLS, GuardPolicy(ground=True))
    turn = native(
        ("get_weather", {"city": "London", "days": 3}), ("send_mail", {"to": "ana@example.org", "body": "x"})
    )
    d = guard.decide(turn, context=REQUEST)
    assert d.action == "reask" and d.reask == [0] and d.keep == [1] and d.codes == ["invalid_value"]
    text = "\n".join(m.content for m in d.messages)
    assert "'London', which appears nowhere" in text and "send the call again unchanged" in text
    # The model keeps the value: the check is a heuristic, so the answer goes ahead.
    again = guard.decide(
        native(("get_weather", {"city": "London", "days": 3})), attempt=1, kept=d.calls, context=REQUEST
    )
    assert again.action == "accept" and [c.arguments.get("city") for c in again.calls] == [None, "London"]


def test_ground_checks_a_clean_turn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The hot path's grounding findings are the re-ask's: the same calls are not matched again.
    import toolmend.guard._engine as engine

    seen: list[int] = []

    def counted(calls: Any, context: Any, tools: Any, **kw: Any) -> Any:
        seen.append(len(calls))
        return ungrounded(calls, context, tools, **kw)

    monkeypatch.setattr(engine, "ungrounded", counted)
    turn = native(
        ("get_weather", {"city": "London", "days": 3}), ("send_mail", {"to": "ana@example.org", "body": "x"})
    )
    assert Guard(TOOLS, GuardPolicy(ground=True)).decide(turn, context=REQUEST).reask == [0]
    assert seen == [2]


def test_ground_is_off_without_the_policy_or_the_conversation() -> None:
    turn = native(("get_weather", {"city": "London"}))
    assert Guard(TOOLS).decide(turn, context=REQUEST).action == "accept"
    assert Guard(TOOLS, GuardPolicy(ground=True)).decide(turn).action == "accept"
    assert (
        Guard(TOOLS, GuardPolicy(ground=True))
        .decide(native(("get_weather", {"city": "paris"})), context=REQUEST)
        .action
        == "accept"
    )


@pytest.mark.parametrize("policy", [{"max_reasks_per_turn": 0}, {"reask": False}, {"max_reasks_per_run": 0}])
def test_ground_never_ends_a_turn_without_a_reask_left(policy: dict[str, object]) -> None:
    guard = Guard(TOOLS, GuardPolicy(ground=True, **policy))  # type: ignore[arg-type]
    d = guard.decide(native(("get_weather", {"city": "London"})), context=REQUEST)
    assert d.action == "accept" and d.findings == []


def test_ground_joins_a_reask_the_checklist_asks_for() -> None:
    guard = Guard(TOOLS, GuardPolicy(ground=True))
    d = guard.decide(
        native(("get_weather", {"city": "London"}), ("send_mail", {"to": "ana@example.org"})), context=REQUEST
    )
    assert (
        d.action == "reask" and d.reask == [0, 1] and sorted(d.codes) == ["invalid_value", "missing_required"]
    )


def test_a_reask_about_arguments_answered_with_another_tool_is_asked_again() -> None:
    # SmolLM2 on the critic suite (issue 35): re-asked for a missing argument, it called another
    # tool with clean arguments, and the guard took that as the turn's recovery.
    guard = Guard(TOOLS)
    assert guard.decide(native(("send_mail", {"to": "x"}))).action == "reask"
    d = guard.decide(native(("get_weather", {"city": "Oslo"})), attempt=1)
    assert d.action == "reask" and d.reask == [0]
    (f,) = d.findings
    assert (f.code, f.data["rule"], f.data["asked"]) == ("wrong_tool_name", "reask_switch", ["send_mail"])
    assert "send_mail" in d.messages[-1].content and "get_weather" in d.messages[-1].content
    # The constraint lasts the turn: a second switch is no recovery either.
    assert guard.decide(native(("get_weather", {"city": "Oslo"})), attempt=2).action == "abort"
    assert guard.decide(native(("get_weather", {"city": "Oslo"}))).action == "accept"  # a new turn


def test_a_reask_answer_may_switch_tools_where_the_tool_was_in_question() -> None:
    guard = Guard(TOOLS)
    assert guard.decide(native(("fly_to_the_moon", {"to": "x"}))).action == "reask"
    assert guard.decide(native(("get_weather", {"city": "Oslo"})), attempt=1).action == "accept"
    # keep_tool=False accepts any valid answer to a re-ask about arguments.
    guard = Guard(TOOLS, GuardPolicy(keep_tool=False))
    assert guard.decide(native(("send_mail", {"to": "x"}))).action == "reask"
    assert guard.decide(native(("get_weather", {"city": "Oslo"})), attempt=1).action == "accept"


def test_a_corrected_call_beside_its_kept_sibling_is_no_switch() -> None:
    guard = Guard(TOOLS)
    d = guard.decide(native(("get_weather", {"city": "Oslo"}), ("send_mail", {"to": "x"})))
    assert (d.action, d.keep) == ("reask", [0])
    d = guard.decide(native(("send_mail", {"to": "x", "body": "hi"})), attempt=1, kept=d.calls)
    assert d.action == "accept" and [c.name for c in d.calls] == ["get_weather", "send_mail"]


def test_a_reask_answer_that_moves_the_same_values_to_another_tool_is_no_switch() -> None:
    # The wrong tool with the right values: its findings are about arguments, and the answer
    # that moves the values to the right tool is the recovery.
    guard = Guard(TOOLS)
    assert guard.decide(native(("send_mail", {"to": "Oslo"}))).action == "reask"
    assert guard.decide(native(("get_weather", {"city": "oslo"})), attempt=1).action == "accept"


def test_a_call_in_a_native_answer_s_text_to_a_misspelt_tool_is_rescued_and_renamed() -> None:
    # The simulation in native mode wrote "[solve_quadratics_equation(a=2, b=6, c=5)]" as its
    # text: a call, to a near miss of the offered name, which the guard took for prose.
    text = Turn.from_native('[get_wether(city="Oslo")]', [])
    d = Guard(TOOLS).decide(text)
    assert d.action == "repaired" and [f.action for f in d.fixes] == ["rescue", "rename_tool"]
    assert [(c.name, c.arguments) for c in d.calls] == [("get_weather", {"city": "Oslo"})]
    # A name close to none stays prose.
    assert Guard(TOOLS).decide(Turn.from_native('[fly_to_the_moon(city="Oslo")]', [])).calls == []
