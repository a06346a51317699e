"""The decision engine: :class:`Guard` looks at one assistant turn and returns a
:class:`~toolmend.guard._decision.Decision`. It never calls a model or a tool; the driver
(:mod:`toolmend.guard._driver`) and the adapters act on its decisions.

>>> from toolmend.guard import Guard, Turn
>>> tools = [{"name": "get_weather", "parameters": {"type": "object",
...     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}]
>>> guard = Guard(tools)
>>> guard.decide(Turn.from_text('[get_weather(city="Oslo")]')).action
'accept'
>>> d = guard.decide(Turn.from_text('[get_wether(city="Oslo", days="3")]'))
>>> d.action, [f.action for f in d.fixes], d.calls[0].arguments
('repaired', ['rename_tool', 'coerce'], {'city': 'Oslo', 'days': 3})
>>> d = guard.decide(Turn.from_text('[get_weather(days=3)]'))
>>> d.action, d.reask, d.findings[0].code
('reask', [0], 'missing_required')
"""

from __future__ import annotations

import json
import secrets
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolmend._schema import Finding, Message, Tool, ToolCall, resolve
from toolmend.check import Checker, repair, ungrounded
from toolmend.check._ground import Context
from toolmend.check._names import best_match
from toolmend.formats import load_lenient, parse_calls
from toolmend.guard._allowed import AllowedCalls
from toolmend.guard._conversation import Conversation
from toolmend.guard._decision import Action, Decision, GuardFix
from toolmend.guard._messages import NOTHING_RAN, call_problem_text, turn_problem_text
from toolmend.guard._policy import GuardPolicy
from toolmend.guard._turn import Turn, TurnCall

__all__ = ["Guard"]

# Parser findings that a rewrite of the parsed calls removes: prose around calls, and a
# call-like block the parser could still read.
_TEXT_FIXABLE = {"redundant_information"}
# How formats.lenient read text that was not strict JSON but held whole values.
_COMPLETE_READS = {"python", "repaired"}
_ANY = AllowedCalls()
# A grounding finding may be wrong (a computed date): the model can confirm the value, once.
_CONFIRM = "If the value is right as it is, send the call again unchanged."
# Checkers of a tool list's subsets (a named tool_choice), kept as long as the full checker:
# compiling a schema costs far more than deciding a clean turn.
_SUBSETS: weakref.WeakKeyDictionary[Checker, dict[tuple[str, ...], Checker]] = weakref.WeakKeyDictionary()
# Findings about a call's arguments: a re-ask about these alone names the tools to call (keep_tool).
_ARGUMENT_CODES = {"missing_required", "invalid_type", "empty_value", "redundant_parameter", "invalid_value",
                   "positional_argument"}  # fmt: skip


@dataclass
class _Work:
    """The turn being judged: per turn index, the call (None when unreadable) and its problems."""

    turn: Turn
    calls: list[ToolCall | None]
    checker: Checker
    allowed: AllowedCalls = _ANY
    kept: list[ToolCall] = field(default_factory=list)
    parse_errors: dict[int, str] = field(default_factory=dict)
    fixes: list[GuardFix] = field(default_factory=list)
    per_call: dict[int, list[Finding]] = field(default_factory=dict)
    whole: list[Finding] = field(default_factory=list)


class Guard:
    """The guard for one run (one conversation): the tools, the policy, and the run's budget.

    Call :meth:`decide` on every assistant turn, passing ``attempt`` (how many re-asks this turn
    has had). :meth:`reset` starts a new run (budget and repeat tracking cleared).

    ``conversation`` (a :class:`~toolmend.guard.Conversation`) carries the run across guards: a
    proxy that makes one guard per request passes the request's conversation, so the per-run
    budget is the conversation's, and a call that already failed
    ``policy.max_repeated_failures`` times in a row there is refused as a ``duplicate_call``
    (the loop breaker):

    >>> conv = Conversation()
    >>> for _ in range(3):
    ...     conv.record("add", {"a": 1}, ok=False)
    >>> d = Guard([{"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}],
    ...     conversation=conv).decide(Turn.from_native("", [{"id": "c", "name": "add", "arguments": '{"a": 1}'}]))
    >>> d.action, d.findings[0].code, conv.reasks_used
    ('reask', 'duplicate_call', 1)
    """

    def __init__(
        self,
        tools: Checker | Iterable[Tool | Mapping[str, Any]],
        policy: GuardPolicy | None = None,
        *,
        conversation: Conversation | None = None,
    ) -> None:
        self.checker = tools if isinstance(tools, Checker) else Checker(tools)
        self.policy = policy or GuardPolicy()
        self.conversation = conversation if conversation is not None else Conversation()
        self._last: tuple[Any, ...] | None = None
        self._repeats = 0
        self._asked: frozenset[str] | None = None
        """The tools this turn's re-asks are about, when they are about arguments only (keep_tool)."""
        self._carried: frozenset[tuple[str, Any]] = frozenset()
        """The values of the calls those re-asks are about: a call to another tool that carries one
        over moves the same request to the right tool, which is no switch."""

    @property
    def reasks_used(self) -> int:
        """The re-asks this run (its conversation) has used."""
        return self.conversation.reasks_used

    @reasks_used.setter
    def reasks_used(self, value: int) -> None:
        self.conversation.reasks_used = value

    @property
    def tool_names(self) -> list[str]:
        """The names of the offered tools."""
        return list(self.checker.tools)

    def reset(self) -> None:
        """Start a new run: the per-run budget and the repeat tracking start again."""
        self.conversation.reset()
        self._last = None
        self._repeats = 0
        self._asked, self._carried = None, frozenset()

    def decide(
        self,
        turn: Turn,
        *,
        attempt: int = 0,
        kept: Sequence[ToolCall] = (),
        allowed: AllowedCalls | None = None,
        context: Context | None = None,
    ) -> Decision:
        """The decision for ``turn``; ``attempt`` is 0 for the model's first answer.

        ``kept`` are calls of earlier rounds of this turn that were valid and kept (the previous
        decision's ``calls``); ``turn`` then holds the model's corrections only. Kept calls are
        checked with the new ones for list-level problems (count, repeats) and lead the
        decision's ``calls``; a re-sent copy of a kept call is dropped as a repeat.

        ``allowed`` is what the request allows (:class:`~toolmend.guard.AllowedCalls`: OpenAI's
        ``tool_choice`` and ``parallel_tool_calls``); calls it forbids are dropped or re-asked.

        ``context`` is the conversation before the turn (messages or a text). With the policy's
        ``ground``, a first answer whose string values it never mentions is re-asked once:

        >>> guard = Guard([{"name": "get_weather", "parameters": {"type": "object",
        ...     "properties": {"city": {"type": "string"}}}}], GuardPolicy(ground=True))
        >>> request = [{"role": "user", "content": "Weather in Paris?"}]
        >>> d = guard.decide(Turn.from_text('[get_weather(city="London")]'), context=request)
        >>> d.action, d.findings[0].message
        ('reask', "'city' is 'London', which appears nowhere in the conversation")
        >>> guard.decide(Turn.from_text('[get_weather(city="London")]'), attempt=1, context=request).action
        'accept'
        """
        allowed = allowed or _ANY
        rescued: list[GuardFix] = []
        text: str | None = None
        if self.policy.rescue and turn.native and not turn.calls and not kept and allowed.mode != "none":
            found = self._rescue(turn)
            if found is not None:
                turn, fix = found
                rescued, text = [fix], turn.text
        decision = self._allowed(turn, attempt, kept, allowed, context, rescued)
        if text is not None:
            decision.text = text
        if self.policy.strict and decision.action != "accept":
            return self._refuse(decision)
        return decision

    def _allowed(
        self,
        turn: Turn,
        attempt: int,
        kept: Sequence[ToolCall],
        allowed: AllowedCalls,
        context: Context | None,
        fixes: list[GuardFix],
    ) -> Decision:
        # Grounding is a heuristic: it asks once, and only while a re-ask is left to ask with.
        ground = context if self.policy.ground and attempt == 0 and not self._spent(attempt) else None
        if allowed.unrestricted:
            return self._decide(turn, attempt, kept, self.checker, _ANY, fixes, ground)
        dropped: list[GuardFix] = list(fixes)
        if allowed.mode == "none":
            # Nothing may be called: the answer's text stands and its calls go.
            dropped += [GuardFix(code="tool_choice_none", action="drop_call", call=i, before=c.name)
                        for i, c in enumerate(turn.calls)]  # fmt: skip
            turn, kept = replace(turn, calls=[]), ()
        elif not allowed.parallel and len(kept) + len(turn.calls) > 1:
            room = max(0, 1 - len(kept))
            dropped += [GuardFix(code="parallel_tool_calls", action="drop_call", call=i, before=c.name)
                        for i, c in enumerate(turn.calls) if i >= room]  # fmt: skip
            turn = replace(turn, calls=turn.calls[:room])
        return self._decide(turn, attempt, kept, self._checker_for(allowed.names), allowed, dropped, ground)

    def _rescue(self, turn: Turn) -> tuple[Turn, GuardFix] | None:
        """``turn`` with the tool calls its text holds as native calls, when it holds some and
        each names an offered tool or a near miss of one (prose that merely mentions a name is
        not a call)."""
        if not turn.text.strip():
            return None
        parsed = parse_calls(turn.text)
        # A near miss of an offered name is a call that repair renames, as it does a native one.
        tools = self.checker.tools
        if not parsed.calls or any(
            c.name not in tools and best_match(c.name, tools) is None for c in parsed.calls
        ):
            return None
        calls = []
        for c in parsed.calls:
            # Arguments as a provider would have sent them: plain JSON, a {"$ref": ...} literal.
            args = resolve(c.arguments, lambda ref: ref.model_dump())
            calls.append(TurnCall(name=c.name, arguments=args, id="call_" + secrets.token_hex(12),
                                  raw_arguments=json.dumps(args, ensure_ascii=False)))  # fmt: skip
        fix = GuardFix(code="tool_call_in_content", action="rescue", before=turn.text)
        return Turn(text=parsed.text or "", calls=calls, format="native"), fix

    def _refuse(self, decision: Decision) -> Decision:
        """Strict mode: the turn ends, unchanged, with what the guard found and would have fixed."""
        if decision.action == "reask":
            self.reasks_used -= 1  # never sent
        detail = [f"{f.code}: {f.message}" for f in decision.findings]
        detail += [f"{fx.code}: {fx.action} {fx.path}".rstrip() for fx in decision.fixes]
        return Decision(action="abort", fixes=decision.fixes, findings=decision.findings, attempt=decision.attempt,
                        reason="strict mode: the answer would need changes: " + "; ".join(detail),
                        text=decision.text)  # fmt: skip

    def _spent(self, attempt: int) -> str:
        """Why no re-ask may be sent now ("" when one may)."""
        if not self.policy.reask:
            return "re-asking is off"
        if attempt >= self.policy.max_reasks_per_turn:
            return f"the turn's budget of {self.policy.max_reasks_per_turn} re-ask(s) is spent"
        if self.reasks_used >= self.policy.max_reasks_per_run:
            return f"the run's budget of {self.policy.max_reasks_per_run} re-ask(s) is spent"
        return ""

    def _checker_for(self, names: tuple[str, ...] | None) -> Checker:
        """The checker of the tools ``names`` allows (all of them for ``None``)."""
        if names is None:
            return self.checker
        subsets = _SUBSETS.setdefault(self.checker, {})
        hit = subsets.get(names)
        if hit is None:
            tools = self.checker.tools
            hit = subsets[names] = Checker([tools[n] for n in names if n in tools])
        return hit

    def _decide(
        self,
        turn: Turn,
        attempt: int,
        kept: Sequence[ToolCall],
        checker: Checker,
        allowed: AllowedCalls,
        fixes: list[GuardFix],
        ground: Context | None = None,
    ) -> Decision:
        if attempt == 0:
            self._last, self._repeats, self._asked, self._carried = None, 0, None, frozenset()
        clean: list[Finding] | None = None  # the grounding findings of a turn the checklist passed
        # An empty answer to a re-ask corrects nothing: it is never the turn's recovery.
        empty = bool(attempt) and _empty(turn)
        if (
            not empty
            and not kept
            and not turn.findings
            and all(c.arguments is not None for c in turn.calls)
            and (self._asked is None or not self._switches([(c.name, c.arguments) for c in turn.calls]))
        ):
            # The hot path: a clean turn costs its calls and one check.
            calls = [c.to_call() for c in turn.calls]
            if (
                not checker.check(calls, self.policy.expected_count)
                and (calls or not (self.policy.expected_count or allowed.mode == "required"))
                and not (self.conversation.has_failures and self._loops(calls))
            ):
                clean = [] if ground is None else ungrounded(calls, ground, checker)
                if not clean:
                    return Decision(action="repaired" if fixes else "accept", calls=calls, fixes=list(fixes),
                                    keep=list(range(len(calls))), attempt=attempt)  # fmt: skip
        work = self._read(turn, checker, allowed)
        work.fixes[:0] = fixes
        work.kept = list(kept)
        self._check(work)
        if self.conversation.has_failures:
            passing = {i: c for i, c in enumerate(work.calls) if c is not None and i not in work.per_call}
            for f in self._loops(list(passing.values())):
                i = list(passing)[f.call or 0]
                work.per_call.setdefault(i, []).append(f.model_copy(update={"call": i}))
        if empty and not work.whole:
            work.whole.append(_EMPTY)
        names = _names(work)
        at = list(names)
        for k in self._switches([(names[i], c.arguments if (c := work.calls[i]) else None) for i in at]):
            i = at[k]
            if not any(f.code == "wrong_tool_name" for f in work.per_call.get(i, [])):
                work.per_call.setdefault(i, []).append(self._switch(i, names[i]))
        if ground is not None:
            # The calls the checklist passed (after repair), each against the conversation.
            passed = {i: c for i, c in enumerate(work.calls) if c is not None and i not in work.per_call}
            at = list(passed)
            # A clean turn's calls all pass again, unchanged: its findings are already known.
            if clean is None or len(at) != len(turn.calls):
                clean = ungrounded(list(passed.values()), ground, checker)
            for f in clean:
                i = at[f.call or 0]
                confirm = f"{f.suggestion} {_CONFIRM}"
                work.per_call.setdefault(i, []).append(
                    f.model_copy(update={"call": i, "suggestion": confirm})
                )
        if not work.per_call and not work.parse_errors and not work.whole:
            action: Action = "repaired" if work.fixes else "accept"
            calls = [*work.kept, *(c for c in work.calls if c is not None)]
            return Decision(
                action=action,
                calls=calls,
                fixes=work.fixes,
                keep=list(range(len(turn.calls))),
                attempt=attempt,
            )
        bad = sorted(set(work.per_call) | set(work.parse_errors))
        findings = [f for i in bad for f in work.per_call.get(i, [])] + work.whole
        valid = [i for i, c in enumerate(work.calls) if c is not None and i not in bad]
        signature = tuple(sorted((f.code, f.call, f.path) for f in findings)) + tuple(
            ("parse", i) for i in sorted(work.parse_errors)
        )
        self._repeats = self._repeats + 1 if signature == self._last else 0
        self._last = signature
        escalated = self._repeats > 0
        reason = "re-asking is off" if not self.policy.reask else ""
        if not reason and self._repeats > self.policy.escalate_after:
            reason = f"the same failure repeated {self._repeats} time(s)"
        reason = reason or self._spent(attempt)
        # A count problem concerns the whole list, so nothing can go ahead on its own.
        keep = valid if self.policy.parallel == "keep_valid" and not work.whole else []
        common: dict[str, Any] = {"fixes": work.fixes, "findings": findings, "attempt": attempt, "reask": bad}
        if reason and (not self.policy.reask or self.policy.on_exhausted == "fail_to_model"):
            return Decision(
                action="fail_to_model",
                calls=work.kept + [c for i in valid if (c := work.calls[i]) is not None],
                keep=valid,
                messages=self._tool_results(work, bad),
                reason=reason,
                **common,
            )
        if reason:
            return Decision(action="abort", calls=[], keep=[], reason=reason, **common)
        self.reasks_used += 1
        if (
            self.policy.keep_tool
            and self._asked is None
            and not work.whole
            and all(f.code in _ARGUMENT_CODES for f in findings)
            and all(n in checker.tools for n in names.values())
        ):
            self._asked = frozenset([c.name for c in work.kept] + list(names.values()))
            self._carried = frozenset(v for i in bad if (c := work.calls[i]) for v in _values(c.arguments))
        return Decision(
            action="reask",
            calls=(work.kept if keep or not work.whole else [])
            + [c for i in keep if (c := work.calls[i]) is not None],
            keep=keep,
            messages=self._reask_messages(work, bad, keep, escalated),
            escalated=escalated,
            **common,
        )

    # -- reading and checking ------------------------------------------------------------

    def _switches(self, calls: Sequence[tuple[str, Any]]) -> list[int]:
        """The positions in ``calls`` (name, arguments) of calls to tools other than the ones this
        turn's re-asks are about, that carry none of their values over (none when the re-asks
        are about more than arguments)."""
        asked = self._asked
        if asked is None:
            return []
        return [
            i for i, (n, args) in enumerate(calls) if n not in asked and not self._carried & _values(args)
        ]

    def _switch(self, i: int, name: str) -> Finding:
        asked = sorted(self._asked or ())
        which = ", ".join(asked)
        return Finding(
            code="wrong_tool_name",
            message=f"Call {i} calls '{name}', but you were asked to correct the arguments of {which}",
            suggestion=f"Call {which} again with its arguments corrected; a call to another tool corrects nothing.",
            call=i,
            data={"rule": "reask_switch", "asked": asked, "got": name},
        )

    def _loops(self, calls: Sequence[ToolCall]) -> list[Finding]:
        """The loop breaker's findings: calls that already failed too often in a row."""
        limit = self.policy.max_repeated_failures
        out = []
        for i, c in enumerate(calls):
            f = self.conversation.loop_finding(c.name, c.arguments, limit=limit, call=i)
            if f is not None:
                out.append(f)
        return out

    def _read(self, turn: Turn, checker: Checker, allowed: AllowedCalls) -> _Work:
        work = _Work(turn=turn, calls=[], checker=checker, allowed=allowed)
        for i, c in enumerate(turn.calls):
            if c.arguments is not None:
                work.calls.append(c.to_call())
                continue
            value = None
            if self.policy.lenient_json and c.raw_arguments:
                try:
                    loaded, _method = load_lenient(c.raw_arguments)
                except ValueError:
                    loaded = None
                value = loaded if isinstance(loaded, dict) else None
            if value is None:
                work.calls.append(None)
                work.parse_errors[i] = c.error or "arguments could not be read"
            else:
                work.calls.append(ToolCall(name=c.name, arguments=value, id=c.id))
                work.fixes.append(GuardFix(code="invalid_format", action="parse_lenient", call=i,
                                           before=c.raw_arguments, after=value))  # fmt: skip
        for f in turn.findings:
            if f.code in _TEXT_FIXABLE and turn.calls:
                work.fixes.append(GuardFix(code=f.code, action="strip_text", call=f.call, before=f.message))
            elif f.code == "invalid_format" and turn.calls and f.data.get("method") in _COMPLETE_READS:
                # Read whole by a lenient reader (quoting, trailing commas): writing it out again
                # is the fix. A cut-off reply keeps only its complete calls, so it is re-asked.
                work.fixes.append(GuardFix(code=f.code, action="rewrite", call=f.call, before=f.message))
            elif f.code == "invalid_format":
                work.whole.append(f)
        return work

    def _check(self, work: _Work) -> None:
        # Kept calls lead the list (positions -k..-1), so count and repeat checks see the whole turn.
        if not work.kept and not work.parse_errors:
            index, calls = list(range(len(work.calls))), work.calls
        else:
            index = [-len(work.kept) + j for j in range(len(work.kept))]
            index += [i for i, c in enumerate(work.calls) if c is not None]
            calls = [*work.kept, *(c for c in work.calls if c is not None)]
        expected = self.policy.expected_count
        checker = work.checker
        if not calls:
            if work.parse_errors or work.whole:
                return
            if expected and work.turn.final is None:
                work.whole.extend(checker.check([], expected))
            elif work.allowed.mode == "required":
                names = ", ".join(checker.tools)
                work.whole.append(Finding(
                    code="wrong_tool_count", message="A tool call is required here (tool_choice), and the answer has none",
                    suggestion=f"Call one of: {names}. Answer with the tool call only.",
                    data={"expected": "at least 1", "got": 0, "rule": "tool_choice"}))  # fmt: skip
            return
        findings = checker.check(calls, expected)  # type: ignore[arg-type]
        where = index
        if self.policy.repair and findings:
            # Repair only what has findings: a clean turn (the common case) costs one check.
            result = repair(calls, checker, expected)  # type: ignore[arg-type]
            dropped = {index[fx.call] for fx in result.fixes if fx.action == "drop_call"}
            for fx in result.fixes:
                work.fixes.append(GuardFix(code=fx.finding.code, action=fx.action, call=index[fx.call],
                                           path=fx.path, before=fx.before, after=fx.after))  # fmt: skip
            where = [i for i in index if i not in dropped]
            for i in dropped:
                if i >= 0:
                    work.calls[i] = None
            for i, call in zip(where, result.calls, strict=True):
                if i >= 0:
                    work.calls[i] = call.model_copy(update={"id": work.turn.calls[i].id})
                else:
                    work.kept[i] = call
            work.kept = [c for j, c in enumerate(work.kept) if j - len(work.kept) not in dropped]
            findings = result.findings
        for f in findings:
            if f.call is None or f.call >= len(where) or where[f.call] < 0:
                work.whole.append(f)
            else:
                i = where[f.call]
                work.per_call.setdefault(i, []).append(f.model_copy(update={"call": i}))

    # -- messages --------------------------------------------------------------------------

    def _problem(self, work: _Work, i: int, escalated: bool) -> str:
        tc = work.turn.calls[i] if i < len(work.turn.calls) else None
        call = work.calls[i]
        name = call.name if call is not None else (tc.name if tc is not None else "?")
        return call_problem_text(
            i,
            name,
            work.per_call.get(i, []),
            work.checker.tools.get(name),
            list(work.checker.tools),
            raw=tc.raw_arguments if tc is not None else None,
            parse_error=work.parse_errors.get(i),
            escalated=escalated,
            max_echo=self.policy.max_echo_chars,
        )

    def _assistant(self, work: _Work) -> Message:
        turn = work.turn
        if not turn.native:
            return Message(role="assistant", content=turn.text)
        # Unreadable arguments go back as {} so that the provider accepts the history (a raw,
        # broken string would make some providers reject the whole request).
        calls = [
            ToolCall(name=c.name, arguments=dict(c.arguments or {}), id=c.id or f"call_{i}")
            for i, c in enumerate(turn.calls)
        ]
        return Message(role="assistant", content=turn.text, tool_calls=calls)

    def _tool_results(self, work: _Work, bad: Sequence[int]) -> list[Message]:
        problems = {i: self._problem(work, i, False) + " It was not run and will not be." for i in bad}
        whole = turn_problem_text(work.whole) if work.whole else ""
        if not work.turn.native:
            text = "\n\n".join([*problems.values(), whole]).strip()
            return [Message(role="user", content=f"{text}\nThe calls above were not run.")]
        out = []
        for i in bad:
            tc = work.turn.calls[i]
            out.append(
                Message(role="tool", tool_call_id=tc.id or f"call_{i}", name=tc.name, content=problems[i])
            )
        if whole:
            out.append(Message(role="user", content=whole))
        return out

    def _reask_messages(
        self, work: _Work, bad: Sequence[int], keep: Sequence[int], escalated: bool
    ) -> list[Message]:
        turn = work.turn
        held = [i for i, c in enumerate(work.calls) if c is not None and i not in bad and i not in keep]
        if keep:
            ask = (
                f"Reply with the corrected version of call(s) {_ids(bad)} only; "
                f"call(s) {_ids(keep)} are valid and are kept."
            )
        elif work.whole and not bad:
            ask = "Reply with the complete, corrected list of calls."
        else:
            ask = "Reply with the complete list of calls, corrected."
        per_call = {i: self._problem(work, i, escalated) for i in bad}
        whole = turn_problem_text(work.whole, _FORMAT_HINT.get(turn.format, "")) if work.whole else ""
        messages = [self._assistant(work)]
        if turn.native:
            for i, tc in enumerate(turn.calls):
                cid = tc.id or f"call_{i}"
                if i in per_call:
                    content = f"{per_call[i]}\n{NOTHING_RAN} {ask}"
                elif i in keep:
                    content = (
                        f"Call {i} ({tc.name}) is valid; it is kept and will run with the corrected calls."
                    )
                else:
                    content = (f"Call {i} ({tc.name}) is valid but was held back: {NOTHING_RAN} "
                               "Repeat it unchanged in your next answer.")  # fmt: skip
                messages.append(Message(role="tool", tool_call_id=cid, name=tc.name, content=content))
            if whole:
                messages.append(Message(role="user", content=f"{whole}\n{NOTHING_RAN} {ask}"))
            return messages
        parts = ["Your reply was checked before anything ran. " + NOTHING_RAN]
        parts.extend(per_call[i] for i in bad)
        if whole:
            parts.append(whole)
        if held and not keep:
            parts.append(f"Call(s) {_ids(held)} are valid; include them again unchanged.")
        parts.append(ask + " Use the same format as before and add nothing else.")
        messages.append(Message(role="user", content="\n\n".join(parts)))
        return messages


def _values(args: Any) -> set[tuple[str, Any]]:
    """The strings and numbers in a call's arguments, at any depth (flags say too little)."""
    if isinstance(args, dict):
        return {v for x in args.values() for v in _values(x)}
    if isinstance(args, list):
        return {v for x in args for v in _values(x)}
    if isinstance(args, str) and args.strip():
        return {("s", args.strip().casefold())}
    if isinstance(args, int | float) and not isinstance(args, bool):
        return {("n", float(args))}
    return set()


def _names(work: _Work) -> dict[int, str]:
    """The tool each call of the turn names, by position (after repair; unreadable calls too,
    calls that repair dropped not)."""
    return {
        i: c.name if c is not None else work.turn.calls[i].name
        for i, c in enumerate(work.calls)
        if c is not None or i in work.parse_errors
    }


def _empty(turn: Turn) -> bool:
    """Whether ``turn`` says nothing at all: no call, no text, no final answer."""
    return not turn.calls and not turn.text.strip() and turn.final is None and not turn.findings


_EMPTY = Finding(
    code="wrong_tool_count",
    message="The reply was empty: no call and no text",
    suggestion="Answer with the corrected call(s) as asked.",
    data={"got": 0, "rule": "empty_reply"},
)


def _ids(indices: Sequence[int]) -> str:
    return ", ".join(str(i) for i in indices)


_FORMAT_HINT = {
    "none": "Answer with tool calls in the format the instructions give, and nothing around them.",
}
