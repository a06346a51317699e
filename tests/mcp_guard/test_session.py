"""The MCP guard's judgement on its own (:class:`~toolmend.mcp.McpSession`): JSON-RPC messages as
bytes in and out, for what a real server rarely sends (schemas the checker cannot use, pages of
tools, odd ids) and what a broken peer may send."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from toolmend.guard import GuardPolicy
from toolmend.mcp import McpSession
from toolmend.serve import Budget, BudgetExceeded, Limits

ADD = {
    "name": "add",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
}


def _b(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _listed(session: McpSession, tools: list[Any], rid: Any = 1, cursor: str | None = None) -> bytes:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    if cursor:
        request["params"] = {"cursor": cursor}
    assert session.from_client(_b(request)).forward is not None
    answer = _b({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    out = session.from_server(answer)
    assert out is answer  # passed on as it came
    return out


def _call(session: McpSession, name: str, arguments: Any, rid: Any = 9) -> Any:
    params: dict[str, Any] = {"name": name}
    if arguments is not ...:
        params["arguments"] = arguments
    step = session.from_client(_b({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}))
    return step, json.loads(step.forward or step.reply)


def test_unusable_schemas_are_warnings_and_their_calls_pass_unchecked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = McpSession()
    broken = {
        "name": "broken",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "no-such-type"}}},
    }
    with caplog.at_level(logging.WARNING, logger="toolmend.mcp"):
        _listed(
            s, [ADD, broken, {"name": "bare"}, {"name": "listy", "inputSchema": {"type": "array"}}, "junk"]
        )
    text = caplog.text
    assert "tool 'broken'" in text and "tool 'bare': it has no inputSchema" in text
    assert "tool 'listy': its inputSchema has type 'array'" in text and "tools[4] has no name" in text
    step, msg = _call(s, "broken", {"a": "anything"})
    assert step.forward is not None and msg["params"]["arguments"] == {"a": "anything"}
    step, msg = _call(s, "add", {})
    assert step.reply is not None and msg["result"]["isError"] is True


def test_pages_of_tools_add_up_and_a_new_list_replaces_them() -> None:
    s = McpSession()
    _listed(s, [ADD], rid=1)
    _listed(s, [{**ADD, "name": "sub"}], rid=2, cursor="page2")
    assert s.tool_names == ["add", "sub"]
    _listed(s, [{**ADD, "name": "mul"}], rid=3)
    assert s.tool_names == ["mul"]


def test_before_any_tools_list_calls_pass_unchecked() -> None:
    s = McpSession()
    step, msg = _call(s, "anything", {"x": 1})
    assert step.forward is not None and s.counts == {"unchecked": 1}


def test_request_ids_keep_their_type() -> None:
    s = McpSession(GuardPolicy(max_repeated_failures=1))
    _listed(s, [ADD])
    _call(s, "add", {"a": 1}, rid="7")
    # The answer to id 7 (a number) is not the answer to "7": it settles nothing.
    s.from_server(_b({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": True}}))
    assert s.conversation.failures("add", {"a": 1}) == 0
    s.from_server(_b({"jsonrpc": "2.0", "id": "7", "result": {"content": [], "isError": True}}))
    assert s.conversation.failures("add", {"a": 1}) == 1
    step, msg = _call(s, "add", {"a": 1})
    assert step.reply is not None and "failed 1 time in a row" in msg["result"]["content"][0]["text"]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xff\xfe", -32700),
        (b"{", -32700),
        (b"[]", -32600),
        (b'"text"', -32600),
        (b'{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"add"}}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["add"]}', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', -32602),
    ],
)
def test_malformed_client_messages_are_answered_never_forwarded(raw: bytes, code: int) -> None:
    s = McpSession()
    _listed(s, [ADD])
    step = s.from_client(raw)
    assert step.forward is None and json.loads(step.reply)["error"]["code"] == code


def test_arguments_that_are_not_an_object_are_a_tool_error() -> None:
    s = McpSession()
    _listed(s, [ADD])
    step, msg = _call(s, "add", [1, 2])
    assert (
        msg["result"]["isError"] and "must be a JSON object, got list" in msg["result"]["content"][0]["text"]
    )
    step, msg = _call(s, "add", ...)  # no arguments at all: the required 'a' is missing
    assert msg["result"]["isError"] and "'a'" in msg["result"]["content"][0]["text"]


def test_other_messages_and_broken_server_lines_pass_as_they_came() -> None:
    s = McpSession()
    _listed(s, [ADD])
    for raw in (b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}',
                b'{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"x://y"}}'):  # fmt: skip
        assert s.from_client(raw).forward is raw
    _call(s, "add", {"a": 1}, rid=4)
    for raw in (
        b"not json",
        b"[1]",
        b'{"jsonrpc":"2.0","id":4}',
        b'{"jsonrpc":"2.0","id":4,"error":{"code":1}}',
    ):
        assert s.from_server(raw) is raw


def test_strict_refuses_what_it_would_repair() -> None:
    s = McpSession(GuardPolicy(strict=True))
    _listed(s, [ADD])
    step, msg = _call(s, "add", {"a": "1"})
    text = msg["result"]["content"][0]["text"]
    assert step.reply is not None and "strict mode" in text and "will not be" in text


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize(
    ("limits", "flag"),
    [
        (Limits(max_tools=1), "--max-tools"),
        (Limits(max_schema_bytes=len(json.dumps(ADD)) + 10), "--max-schema-bytes"),
        (Limits(max_schema_depth=4), "--max-schema-depth"),
    ],
    ids=["tools", "schema-bytes", "schema-depth"],
)
def test_a_tool_over_the_limits_is_a_warning_and_its_calls_pass_unchecked(
    caplog: pytest.LogCaptureFixture, limits: Limits, flag: str
) -> None:
    deep = {
        "name": "deep",
        "inputSchema": {"type": "object", "properties": {"v": _nested(6)}, "required": ["v"]},
    }
    s = McpSession(limits=limits)
    with caplog.at_level(logging.WARNING, logger="toolmend.mcp"):
        _listed(s, [ADD, deep])
    warned = [r.getMessage() for r in caplog.records if "'deep'" in r.getMessage()]
    assert len(warned) == 1 and flag in warned[0] and "pass unchecked" in warned[0], warned
    step, _ = _call(s, "deep", {})  # breaks its schema: passes, as nothing checks it
    assert step.forward is not None
    assert s.counts.get("unchecked") == 1
    step, msg = _call(s, "add", {}, rid=10)  # the tool within the limits is still checked
    assert step.forward is None and msg["result"]["isError"] is True


def test_a_message_over_the_size_or_depth_limit_is_a_json_rpc_error() -> None:
    s = McpSession(limits=Limits(max_body_bytes=200, max_json_depth=4))
    _listed(s, [ADD])
    big = s.from_client(_b({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "add", "arguments": {"a": "1" * 300}}}))  # fmt: skip
    assert big.forward is None
    error = json.loads(big.reply)["error"]
    assert (
        error["code"] == -32600 and "200 bytes" in error["message"] and "--max-body-bytes" in error["message"]
    )
    deep = s.from_client(_b({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "add", "arguments": {"a": [[[1]]]}}}))  # fmt: skip
    answer = json.loads(deep.reply)
    assert deep.forward is None and answer["id"] == 2
    assert answer["error"]["code"] == -32600 and "--max-json-depth" in answer["error"]["message"]


# An interrupted step may be inside a garbage collector's callback, which reports the
# interruption as "ignored": not a fault of the test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.usefixtures("steps_end")
def test_a_tool_list_past_the_budget_leaves_calls_unchecked(caplog: pytest.LogCaptureFixture) -> None:
    # 20,000 patterned properties: compiling them takes the checker far past a 0.2 s budget.
    costly = {"name": "costly", "inputSchema": {"type": "object", "patternProperties": {
        f"^p{i}_[a-z]+$": {"type": "integer"} for i in range(20_000)}}}  # fmt: skip
    s = McpSession()
    assert s.from_client(_b({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).forward is not None
    answer = _b({"jsonrpc": "2.0", "id": 1, "result": {"tools": [ADD, costly]}})

    async def read() -> bytes:
        return await Budget(0.2).run(s.from_server, answer, what="the tool list")

    with caplog.at_level(logging.WARNING, logger="toolmend.mcp"):
        with pytest.raises(BudgetExceeded):
            asyncio.run(read())
        s.server_too_costly(0.2)
    assert any("--check-seconds" in r.getMessage() for r in caplog.records)
    step, _ = _call(s, "add", {})  # nothing to check against: passes as it came
    assert step.forward is not None and s.counts.get("unchecked") == 1


def test_a_message_past_the_budget_while_the_list_is_awaited_leaves_calls_unchecked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The budget may run out while the answer is parsed, before it is known to be the list.
    s = McpSession()
    _listed(s, [ADD])
    assert s.from_client(_b({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).forward is not None
    with caplog.at_level(logging.WARNING, logger="toolmend.mcp"):
        s.server_too_costly(0.2)
    assert any("--check-seconds" in r.getMessage() for r in caplog.records)
    step, _ = _call(s, "add", {})
    assert step.forward is not None and s.counts.get("unchecked") == 1
    s.from_server(_b({"jsonrpc": "2.0", "id": 2, "result": {"tools": [ADD]}}))  # the list, when it comes
    step, _ = _call(s, "add", {}, rid=10)
    assert step.forward is None


def test_a_costly_message_with_no_list_awaited_changes_nothing() -> None:
    s = McpSession()
    _listed(s, [ADD])
    s.server_too_costly(0.2)
    step, _ = _call(s, "add", {})
    assert step.forward is None
