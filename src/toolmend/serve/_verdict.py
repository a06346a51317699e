"""The guard on the way back: what the proxy does with one assistant answer.

:func:`judge` takes the upstream's answer (assembled, when it was streamed), applies what the
request asked for and the backend may have ignored (per-tool ``strict``; ``tool_choice`` and
``parallel_tool_calls`` are the guard's own :class:`~toolmend.guard.AllowedCalls`), rescues tool
calls printed as text, cuts calls that ``max_tokens`` cut off, then lets :class:`~toolmend.guard.Guard` decide — unchanged — and runs hidden re-asks
upstream through :func:`~toolmend.guard.drive`. The result is a :class:`Verdict`: the message the
client gets, an honest ``finish_reason``, and everything that happened (for headers, metrics and
traces).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from toolmend._schema import Message, ToolCall
from toolmend.formats import to_openai_tool_calls
from toolmend.guard import AllowedCalls, Conversation, Guard, GuardPolicy, Reply, Turn, drive
from toolmend.serve._assembler import ContentGate
from toolmend.serve._protocol import openai_error, request_checker, tool_names

__all__ = ["Answer", "Reask", "Verdict", "answer_of", "judge", "split_content", "usage_of"]

Outcome = Literal[
    "passthrough", "accepted", "repaired", "recovered", "failed_to_model", "aborted", "rejected", "cut"
]


@dataclass(slots=True)
class Answer:
    """One assistant answer as the upstream gave it: ``sent`` is content already forwarded to the
    client (streaming), ``held`` content that may still be a tool call printed as text."""

    sent: str
    held: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str | None
    usage: dict[str, Any] | None = None

    @property
    def content(self) -> str:
        return self.sent + self.held


@dataclass
class Verdict:
    """What the client gets, and why (see the module docstring)."""

    outcome: Outcome
    content: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    changed: bool = False
    findings: list[str] = field(default_factory=list)
    repairs: int = 0
    reasks: int = 0
    reask_usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    events: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    """An OpenAI-shaped error to send instead (strict mode, or the guard gave up): status 422."""
    upstream: list[Any] = field(default_factory=list)
    """The hidden re-ask answers, for traces."""
    shadow: str | None = None
    """In shadow mode: the action the guard would have taken."""
    recovery_s: float = 0.0

    def headers(self) -> dict[str, str]:
        """The ``x-toolmend-*`` response headers."""
        out = {
            "x-toolmend-outcome": self.outcome,
            "x-toolmend-findings": ",".join(self.findings) or "none",
            "x-toolmend-repairs": str(self.repairs),
            "x-toolmend-reasks": str(self.reasks),
        }
        if self.reasks:
            u = self.reask_usage
            out["x-toolmend-reask-usage"] = (
                f"prompt_tokens={u['prompt_tokens']},completion_tokens={u['completion_tokens']}"
            )
        if self.shadow is not None:
            out["x-toolmend-shadow"] = self.shadow
        return out

    def summary(self) -> dict[str, Any]:
        """What the client's answer says of the guard's work, under ``toolmend`` (every route)."""
        return {"outcome": self.outcome, "findings": self.findings, "repairs": self.repairs,
                "reasks": self.reasks, "reask_usage": dict(self.reask_usage)}  # fmt: skip

    def message(self) -> dict[str, Any]:
        """The assistant message the client gets."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


Reask = Callable[[list[dict[str, Any]]], Awaitable[dict[str, Any]]]
"""A hidden re-ask: the messages to append to the request, in; the upstream's completion, out."""


def usage_of(body: Any) -> tuple[int, int]:
    """(prompt, completion) tokens of a completion or chunk body (0 where absent)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def split_content(content: str, rescue: bool) -> tuple[str, str]:
    """(sent, held) for a whole content string, exactly as a stream would split it."""
    if not rescue or not content:
        return content, ""
    gate = ContentGate()
    sent = gate.feed(content)
    return sent + gate.flush(), gate.held


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def _truncated(raw: str) -> bool:
    """Whether ``raw`` is JSON cut off before its end (not JSON that is wrong in the middle)."""
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(raw.rstrip()) or exc.msg.startswith("Unterminated string")
    return False


@lru_cache(maxsize=16)
def _variant(policy: GuardPolicy, strict: bool, rescue: bool) -> GuardPolicy:
    """``policy`` with ``strict`` and ``rescue`` as given (made once per policy and setting:
    the proxy asks for the same few with every request)."""
    if (policy.strict, policy.rescue) == (strict, rescue):
        return policy
    return policy.model_copy(update={"strict": strict, "rescue": rescue})


def _to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """toolmend messages (the guard's re-ask exchange) as OpenAI chat messages."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            # content "" rather than null, which some upstreams refuse (see models._openai_wire).
            out.append({"role": "assistant", "content": m.content,
                        "tool_calls": to_openai_tool_calls(m.tool_calls)})  # fmt: skip
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _turn(text: str, calls: Sequence[Mapping[str, Any]]) -> Turn:
    return Turn.from_native(text, [{"id": c["id"], "name": c["function"]["name"],
                                    "arguments": c["function"]["arguments"]} for c in calls])  # fmt: skip


def answer_of(body: Any, rescue: bool) -> Answer:
    """The :class:`Answer` in a non-streamed completion body (content split as a stream would be)."""
    msg = (body.get("choices") or [{}])[0] if isinstance(body, dict) else {}
    message = msg.get("message") or {}
    content = message.get("content")
    sent, held = split_content(content if isinstance(content, str) else "", rescue)
    return Answer(sent=sent, held=held, tool_calls=list(message.get("tool_calls") or []),
                  finish_reason=msg.get("finish_reason"), usage=body.get("usage"))  # fmt: skip


async def judge(
    body: Mapping[str, Any],
    answer: Answer,
    reask: Reask,
    *,
    policy: GuardPolicy,
    shadow: bool = False,
    strict: bool = False,
    conversation: Conversation | None = None,
) -> Verdict:
    """The verdict on ``answer`` to the request ``body`` (see the module docstring). Never raises
    on model output; a failed re-ask raises the :class:`~toolmend._errors.ModelError` it got.

    ``conversation`` is the request's :class:`~toolmend.guard.Conversation`: its re-ask budget
    is the policy's per-run one, and the failures its history shows feed the loop breaker.

    ``strict`` (``--strict``) is the policy's ``strict``; rescuing calls printed as text is the
    policy's ``rescue``, applied to what the answer held back from the client (``answer.held``).
    """
    names = tool_names(body)
    allowed = AllowedCalls.from_openai(body)
    original = [_wire_call(c) for c in answer.tool_calls]
    if not names:
        return Verdict("passthrough", answer.content or None, original, answer.finish_reason or "stop")
    # Shadow mode never changes an answer, so it neither refuses nor rescues.
    policy = _variant(policy, (strict or policy.strict) and not shadow, policy.rescue and not shadow)
    strict = policy.strict
    # In the first answer only content still held back can become calls (what was streamed is
    # the client's already); a re-ask's answer is never streamed.
    first = policy if not original and answer.held.strip() else _variant(policy, strict, False)
    fixes: list[dict[str, Any]] = []
    calls = list(original)
    content = answer.content
    finish = answer.finish_reason
    cap = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(cap, int) and usage_of({"usage": answer.usage})[1] >= cap:
        finish = "length"  # some servers report a call cut off by max_tokens as complete
    cut = [c for c in calls if finish in ("length", None) and _truncated(c["function"]["arguments"])]
    if cut:
        calls = [c for c in calls if c not in cut]
        fixes.extend(
            {"code": "truncated_call", "action": "drop_call", "before": c["function"]["name"]} for c in cut
        )
        finish = "length"
        if allowed.mode == "required":
            # The model did call; max_tokens cut the call off. The answer ends as "length".
            allowed = replace(allowed, mode="auto")
    if conversation is not None and policy.max_repeated_failures:
        conversation.observe_openai(body.get("messages") or ())
    guard = Guard(request_checker(body["tools"]), first, conversation=conversation)
    turn = _turn(content or "", calls)
    verdict = Verdict("accepted", content or None, calls, finish or "stop")
    verdict.fixes = fixes
    # tool_choice and parallel_tool_calls are the guard's to enforce (toolmend.guard.AllowedCalls).
    decision = guard.decide(turn, allowed=allowed, context=body.get("messages") if policy.ground else None)
    guard.policy = policy
    if any(fx.action == "rescue" for fx in decision.fixes):
        content = answer.sent  # the prose streamed before the calls
        verdict.content = content or None
    if not (shadow or strict) and decision.action == "accept" and not fixes:
        # The common case: a clean answer costs one decision, and nothing is rewritten.
        verdict.events.append(decision.event())
        _finish(verdict, original, decision.calls, answer, same=True)
        return verdict
    if shadow or strict:
        verdict.events.append(decision.event())
        verdict.findings = list(dict.fromkeys([f["code"] for f in fixes] + decision.codes))
        if shadow:
            verdict.outcome = "passthrough"
            verdict.content, verdict.tool_calls = answer.content or None, original
            verdict.finish_reason = answer.finish_reason or "stop"
            verdict.shadow = "accept" if not verdict.findings else decision.action
            return verdict
        if verdict.findings:
            detail = [f"{f.code}: {f.message}" for f in decision.findings]
            detail += [f"{fx.code}: {fx.action} {fx.path}".rstrip() for fx in decision.fixes]
            detail += [f"{f['code']}: {f['action']}" for f in fixes]
            verdict.outcome = "rejected"
            verdict.error = openai_error(
                "strict mode: the model's answer would need changes: " + "; ".join(detail),
                type="tool_call_error", code="invalid_tool_call", findings=verdict.findings,
            )  # fmt: skip
            return verdict
        verdict.outcome = "cut" if cut else "accepted"
        _finish(verdict, original, decision.calls if decision.action == "accept" else [], answer)
        return verdict

    started = time.perf_counter()

    async def respond(messages: list[Message]) -> Reply:
        got = await reask(_to_wire(messages))
        verdict.upstream.append(got)
        verdict.reasks += 1
        p, c = usage_of(got)
        verdict.reask_usage["prompt_tokens"] += p
        verdict.reask_usage["completion_tokens"] += c
        reply = answer_of(got, False)
        calls = [_wire_call(c) for c in reply.tool_calls]
        return Reply(turn=_turn(reply.content if not calls else "", calls), input_tokens=p, output_tokens=c)

    # The first answer's decision is acted on as it is: it is not checked twice, and its
    # re-ask counts once against the budget.
    outcome = await drive(guard, respond, [], first=Reply(turn=turn), decision=decision, allowed=allowed)
    verdict.events.extend(outcome.events)
    codes = [f["code"] for f in fixes]
    for d in outcome.decisions:
        codes.extend(d.codes)
    verdict.findings = list(dict.fromkeys(codes))
    verdict.repairs = len(fixes) + sum(len(d.fixes) for d in outcome.decisions)
    verdict.fixes.extend(
        {"code": fx.code, "action": fx.action, "call": fx.call, "path": fx.path}
        for d in outcome.decisions
        for fx in d.fixes
    )
    if outcome.status == "aborted":
        verdict.outcome = "aborted"
        verdict.error = openai_error(
            f"tool-call guard gave up: {outcome.final.reason} (findings: {', '.join(outcome.final.codes)})",
            type="tool_call_error", code="tool_call_guard_gave_up", findings=verdict.findings,
        )  # fmt: skip
        return verdict
    if (
        outcome.status == "failed_to_model"
        and not outcome.calls
        and (not content or allowed.mode == "required")
    ):
        # Nothing valid to hand on: no call, and no text (or text where tool_choice asked for a call).
        verdict.outcome = "failed_to_model"
        verdict.error = openai_error(
            f"tool-call guard gave up: {outcome.final.reason}", type="tool_call_error",
            code="tool_call_guard_gave_up", findings=verdict.findings,
        )  # fmt: skip
        return verdict
    verdict.outcome = "cut" if cut else outcome.status
    if outcome.status == "accepted" and fixes and not cut:
        verdict.outcome = "repaired" if not verdict.reasks else "recovered"
    if verdict.reasks and outcome.status in ("accepted", "repaired"):
        verdict.outcome = "recovered"
    verdict.recovery_s = time.perf_counter() - started
    if verdict.reasks and not outcome.calls and outcome.turn.text:
        # The model answered a re-ask in words (the loop breaker asks it to stop calling): that is
        # the answer the client gets.
        verdict.content = outcome.turn.text
    _finish(verdict, original, outcome.calls, answer)
    return verdict


def _wire_call(c: Mapping[str, Any]) -> dict[str, Any]:
    fn = c.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):
        args = "" if args is None else json.dumps(args)
    return {"id": c.get("id") or _new_id(), "type": c.get("type") or "function",
            "function": {"name": fn.get("name") or "", "arguments": args}}  # fmt: skip


def _finish(
    verdict: Verdict,
    original: list[dict[str, Any]],
    calls: Sequence[ToolCall],
    answer: Answer,
    *,
    same: bool = False,
) -> None:
    """The final ``tool_calls``: an unchanged call keeps its original bytes; honest finish_reason.
    ``same``: the guard accepted the original calls as they are (nothing to compare)."""
    by_id = {c["id"]: c for c in original}
    out = list(original) if same else []
    for c in calls if not same else ():
        orig = by_id.get(c.id or "")
        if orig is not None and orig["function"]["name"] == c.name and _same_args(orig, c):
            out.append(orig)
        else:
            args = json.dumps(c.model_dump(mode="json")["arguments"], ensure_ascii=False)
            out.append(
                {"id": c.id or _new_id(), "type": "function", "function": {"name": c.name, "arguments": args}}
            )
    verdict.tool_calls = out
    if verdict.outcome == "cut":
        verdict.finish_reason = "length"
    elif out:
        verdict.finish_reason = "tool_calls"
    elif verdict.finish_reason == "tool_calls":
        verdict.finish_reason = "stop"
    verdict.changed = (
        out != original
        or (verdict.content or None) != (answer.content or None)
        or verdict.finish_reason != (answer.finish_reason or "stop")
    )


def _same_args(orig: Mapping[str, Any], call: ToolCall) -> bool:
    raw = orig["function"]["arguments"]
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return False
    return bool(value == call.model_dump(mode="json")["arguments"])
