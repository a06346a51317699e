"""The driver loop and the environment policy."""

from __future__ import annotations

import pytest

from toolmend._errors import ModelError
from toolmend._schema import Message
from toolmend.guard import EnvPolicy, Guard, GuardPolicy, Reply, Turn, classify_fault, drive

TOOLS = [
    {
        "name": "f",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    }
]


class Script:
    def __init__(self, *replies: object) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> Turn | Reply:
        self.seen.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Reply(turn=Turn.from_text(str(reply)), input_tokens=10, output_tokens=2)


async def test_transport_errors_are_retried_unseen() -> None:
    script = Script(ModelError("429", retryable=True), "[f(a=1)]")
    out = await drive(Guard(TOOLS), script, [Message(role="user", content="go")])
    assert out.status == "accepted" and out.transport_retries == 1 and out.extra_requests == 0
    assert script.seen[0] == script.seen[1]  # the same request, nothing shown to the model


async def test_non_retryable_transport_error_propagates() -> None:
    with pytest.raises(ModelError):
        await drive(Guard(TOOLS), Script(ModelError("401")), [])


async def test_reask_is_a_second_request_with_the_feedback() -> None:
    script = Script("[f()]", "[f(a=2)]")
    out = await drive(Guard(TOOLS), script, [Message(role="user", content="go")])
    assert out.status == "recovered" and out.extra_requests == 1 and out.extra_tokens == 12
    assert [m.role for m in script.seen[1]] == ["user", "assistant", "user"]
    assert "'a'" in script.seen[1][-1].content
    assert [e["action"] for e in out.events] == ["reask", "accept"]


async def test_abort_is_terminal_and_has_no_calls() -> None:
    out = await drive(
        Guard(TOOLS, GuardPolicy(max_reasks_per_turn=1, escalate_after=9)),
        Script("[f()]", "[f(a='many')]"),
        [],
    )
    assert out.status == "aborted" and out.calls == []


async def test_first_answer_can_be_given() -> None:
    out = await drive(Guard(TOOLS), Script(), [], first=Turn.from_text('[f(a="3")]'))
    assert out.status == "repaired" and out.calls[0].arguments == {"a": 3}


@pytest.mark.parametrize(
    ("result", "fault", "action"),
    [
        ({"error": {"code": 504, "type": "timeout", "message": "x"}}, "timeout", "retry"),
        ('{"error": {"code": 503, "message": "down for maintenance"}}', "service_unavailable", "retry"),
        ("Connection reset by peer (ECONNRESET)", "connection_reset", "retry"),
        ({"error": {"code": 403, "message": "no"}}, "permission_denied", "finish"),
        ({"error": "No such file"}, "not_found", "proceed"),
        ({"error": {"code": 400, "message": "invalid argument 'x'"}}, "other", "proceed"),
        ({"ok": True}, None, "proceed"),
    ],
)
def test_env_policy_per_fault(result: object, fault: str | None, action: str) -> None:
    d = EnvPolicy().decide(result, attempt=0)
    assert (d.fault, d.action) == (fault, action)


def test_env_retry_after_and_backoff_and_budget() -> None:
    policy = EnvPolicy(max_retries=2, max_retries_per_run=3, backoff_s=1.0)
    assert classify_fault({"error": {"type": "rate_limit", "retry_after_s": 7}}) == ("rate_limit", 7.0)
    timeout = {"error": {"type": "timeout"}}
    assert [policy.decide(timeout, attempt=k).wait_s for k in (0, 1)] == [1.0, 2.0]
    assert policy.decide(timeout, attempt=2).action == "skip"  # per-call retries spent
    assert policy.decide(timeout, attempt=0).action == "retry"  # third retry of the run
    assert policy.decide(timeout, attempt=0).action == "skip"  # run budget spent


def test_a_tool_result_nested_too_deep_is_read_as_text() -> None:
    # A tool's output is untrusted: JSON nested past the reader's limit is text, not a crash.
    assert classify_fault("[" * 100_000) == (None, None)
    assert classify_fault("[" * 100_000 + "error: service unavailable")[0] == "service_unavailable"


async def test_corrected_call_goes_back_to_its_place() -> None:
    tools = [
        *TOOLS,
        {
            "name": "g",
            "parameters": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        },
    ]
    first = Turn.from_text("[f(), g(b=2)]")  # f is bad, g is kept
    out = await drive(Guard(tools), Script("[f(a=1)]"), [], first=first)
    assert [c.name for c in out.calls] == ["f", "g"] and out.status == "recovered"


async def test_calls_rescued_from_a_native_answer_s_text_keep_their_places() -> None:
    # A native answer with no calls whose text holds two, one of them bad (the simulation on BFCL
    # parallel): the guard keeps the good one by its place among the rescued calls, which the
    # driver once sized by the answer's native calls (none) and failed with an IndexError.
    tools = [
        *TOOLS,
        {
            "name": "g",
            "parameters": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        },
    ]
    first = Turn.from_native("[f(), g(b=2)]", [])
    out = await drive(Guard(tools), Script("[f(a=1)]"), [], first=first)
    assert [(c.name, c.arguments) for c in out.calls] == [("f", {"a": 1}), ("g", {"b": 2})]
    assert out.status == "recovered"


async def test_abort_returns_no_kept_calls() -> None:
    tools = [
        *TOOLS,
        {"name": "g", "parameters": {"type": "object", "properties": {"b": {"type": "integer"}}}},
    ]
    policy = GuardPolicy(max_reasks_per_turn=1, escalate_after=9)
    out = await drive(Guard(tools, policy), Script("[f(a='x')]"), [], first=Turn.from_text("[f(), g(b=2)]"))
    assert out.status == "aborted" and out.calls == []


async def test_an_empty_reply_to_a_reask_is_not_a_recovery() -> None:
    from toolmend.strategies._metrics import recovery_by_code

    # A real model answered every re-ask with '' and the turn counted as recovered (issue 35).
    script = Script("[f()]", "", "")
    out = await drive(Guard(TOOLS), script, [Message(role="user", content="go")])
    assert out.status == "aborted" and out.calls == [] and out.extra_requests == 2
    assert [d.action for d in out.decisions] == ["reask", "reask", "abort"]
    assert out.decisions[1].findings[0].data["rule"] == "empty_reply"
    # The re-ask after the empty reply says so and asks again.
    assert script.seen[2][-2].content == "" and "empty" in script.seen[2][-1].content
    table = recovery_by_code(out.events)
    assert table["missing_required"] == {"found": 1, "repair": 0, "reask": 0, "gave_up": 1}


async def test_an_empty_reply_then_a_fix_recovers() -> None:
    out = await drive(Guard(TOOLS), Script("[f()]", " ", "[f(a=1)]"), [Message(role="user", content="go")])
    assert out.status == "recovered" and [c.arguments for c in out.calls] == [{"a": 1}]


async def test_an_empty_reply_after_kept_calls_asks_for_the_whole_list() -> None:
    # Call 0 was valid and kept, call 1 re-asked; an empty answer does not make the turn whole.
    script = Script("[f(a=1), f()]", "", "[f(a=1), f(a=2)]")
    out = await drive(Guard(TOOLS), script, [Message(role="user", content="go")])
    assert out.status == "recovered" and [c.arguments for c in out.calls] == [{"a": 1}, {"a": 2}]
    assert "complete, corrected list" in script.seen[2][-1].content


async def test_an_empty_first_answer_is_still_an_answer() -> None:
    out = await drive(Guard(TOOLS), Script(""), [Message(role="user", content="go")])
    assert out.status == "accepted" and out.calls == []
