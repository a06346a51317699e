"""Conversations: a budget that outlives one guard, the loop breaker, and how a conversation is
found (a session name, or the earlier turns)."""

from __future__ import annotations

from typing import Any

import pytest

from toolmend._errors import ConfigError
from toolmend.guard import Conversation, Conversations, Guard, GuardPolicy, Turn

ADD = [{"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
        "required": ["a"]}}]  # fmt: skip


def _turn(args: str, cid: str = "c1") -> Turn:
    return Turn.from_native("", [{"id": cid, "name": "add", "arguments": args}])


def test_guards_of_one_conversation_share_the_run_budget() -> None:
    conv = Conversation("x")
    policy = GuardPolicy(max_reasks_per_run=1)
    assert Guard(ADD, policy, conversation=conv).decide(_turn("{}")).action == "reask"
    # A new guard (the next request) of the same conversation has no re-ask left.
    second = Guard(ADD, policy, conversation=conv).decide(_turn("{}"))
    assert second.action == "abort" and "run's budget of 1" in second.reason
    assert Guard(ADD, policy).decide(_turn("{}")).action == "reask"  # another conversation
    assert conv.reasks_used == 1


def test_the_loop_breaker_counts_failures_in_a_row_and_a_success_clears_them() -> None:
    conv = Conversation()
    guard = Guard(ADD, GuardPolicy(max_repeated_failures=2), conversation=conv)
    conv.record("add", {"a": 1}, ok=False)
    assert guard.decide(_turn('{"a": 1}')).action == "accept"
    conv.record("add", {"a": 1}, ok=False)
    d = guard.decide(_turn('{"a": 1}'))
    assert d.action == "reask" and d.findings[0].data["rule"] == "loop"
    assert "failed 2 times in a row" in d.messages[-1].content
    assert guard.decide(_turn('{"a": 2}')).action == "accept"  # other arguments, another call
    conv.record("add", {"a": 1}, ok=True)
    assert guard.decide(_turn('{"a": 1}')).action == "accept"


def test_a_repaired_call_is_looked_up_as_repaired() -> None:
    conv = Conversation()
    for _ in range(3):
        conv.record("add", {"a": 1}, ok=False)
    d = Guard(ADD, conversation=conv).decide(_turn('{"a": "1"}'))
    assert d.action == "reask" and [f.code for f in d.findings] == ["duplicate_call"]


def test_the_loop_breaker_off_and_bad_settings() -> None:
    conv = Conversation()
    for _ in range(9):
        conv.record("add", {"a": 1}, ok=False)
    assert (
        Guard(ADD, GuardPolicy(max_repeated_failures=0), conversation=conv).decide(_turn('{"a": 1}')).action
        == "accept"
    )
    with pytest.raises(ConfigError, match="max_repeated_failures must be at least 0"):
        GuardPolicy(max_repeated_failures=-1)


def test_strict_refuses_a_looping_call_rather_than_re_asking() -> None:
    conv = Conversation()
    for _ in range(3):
        conv.record("add", {"a": 1}, ok=False)
    d = Guard(ADD, GuardPolicy(strict=True), conversation=conv).decide(_turn('{"a": 1}'))
    assert d.action == "abort" and "duplicate_call" in d.reason and conv.reasks_used == 0


def test_history_failures_read_list_content_and_only_answered_calls() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "add one"}]
    for i in range(3):
        history.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}]})  # fmt: skip
        history.append({"role": "tool", "tool_call_id": f"c{i}",
                        "content": [{"type": "text", "text": "Error: permission denied"}]})  # fmt: skip
    history.append({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "add", "arguments": "not json"}}]})  # fmt: skip
    conv = Conversation.from_openai(history)
    assert conv.failures("add", {"a": 1}) == 3 and conv.failures("add", "not json") == 0
    history.append({"role": "tool", "tool_call_id": "c9", "content": '{"result": 2}'})
    conv.observe_openai(history)
    assert conv.failures("add", {"a": 1}) == 3 and conv.failures("add", "not json") == 0


def test_the_store_is_bounded_and_keys_are_sessions_or_histories() -> None:
    store = Conversations(limit=2)
    a, b = store.get("a"), store.get("b")
    store.get("c")
    assert len(store) == 2 and store.get("b") is b and store.get("a") is not a
    first = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    answer = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_x", "type": "function",
              "function": {"name": "add", "arguments": "{}"}}]}  # fmt: skip
    conv = store.for_request(first)
    store.remember(first, answer, conv)
    # The client echoes the answer with fields of its own; the ids and text are what count.
    echoed = {**answer, "refusal": None, "content": ""}
    assert store.for_request([*first, echoed, {"role": "user", "content": "more"}]) is conv
    other = {**answer, "tool_calls": [{**answer["tool_calls"][0], "id": "call_y"}]}
    assert store.for_request([*first, other]) is not conv
    assert store.for_request([{"role": "user"}, "not a message"]).key is None
