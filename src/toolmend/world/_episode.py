"""One episode of a model acting in the world: the loop shared by the benchmark and RL.

:class:`WorldSession` executes calls in a fresh world behind a fault schedule.
:class:`Episode` turns model replies into calls, executes them, keeps a provider-correct
history (an assistant message whose ``tool_calls`` carry ids, answered by one ``tool`` message
per id) and, at the end, says what became of each injected fault and of each invalid call.

An episode is a pure function of the task, the fault schedule and the replies, so the benchmark
scores a run by replaying the saved replies — no state is kept between solving and scoring.

>>> from toolmend.world import generate_tasks
>>> from toolmend.world._grading import gold_run
>>> task = next(t for t in generate_tasks(0) if t.template == "todo_add")
>>> gold = gold_run(task)
>>> ep = Episode(task, [], max_turns=6)
>>> ep.observe(write_reply(gold.calls))
False
>>> ep.observe(gold.answer)
True
>>> ep.grade(gold).success
True
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from toolmend._schema import Finding, Message, Tool, ToolCall
from toolmend.check._checker import Checker
from toolmend.env._environment import Environment
from toolmend.env._response import ToolResponse
from toolmend.env._validate import CheckFn
from toolmend.formats._result import ParseResult
from toolmend.formats._tags import parse_tagged_calls, write_tagged_calls
from toolmend.world._grading import GoldRun, Grade, grade
from toolmend.world._schedule import ScheduledFault, scheduled_fault_response
from toolmend.world._tasks import Task
from toolmend.world._world import World
from toolmend.world.domains import WORLD_TOOLS

__all__ = [
    "Episode",
    "FaultOutcome",
    "InvalidOutcome",
    "Step",
    "WorldSession",
    "gold_replies",
    "parse_reply",
    "write_reply",
]

_MENTIONS = re.compile(
    r"error|fail|unable|could ?n[o']t|cannot|can't|unavailable|permission|denied|access|timed? ?out|"
    r"rate.?limit|try again|later|not (?:be )?available|removed|no longer|sorry|problem|issue|outage|reset",
    re.IGNORECASE,
)


def _with_id(call: ToolCall, call_id: str | None) -> ToolCall:
    # Building a new call is cheaper than ``model_copy``, and on pydantic 2.x validating these few
    # fields is cheaper than ``model_construct`` (whose per-field loop is Python).
    return ToolCall(
        name=call.name,
        arguments=call.arguments,
        id=call_id,
        outputs=call.outputs,
        output_fields=call.output_fields,
    )


def write_reply(calls: list[ToolCall], text: str = "") -> str:
    """A reply in the world benchmark's format: optional prose, then one ``<tool_call>`` per call."""
    body = write_tagged_calls(calls)
    return f"{text.rstrip()}\n{body}" if text.strip() else body


@lru_cache(maxsize=1)
def _world_checker() -> CheckFn:
    """The checklist compiled once for the world's tools: the same findings as
    :func:`toolmend.check.check` (what :meth:`World.environment` uses), which compiles every tool
    schema again for every call."""
    compiled = Checker(WORLD_TOOLS.tools)

    def check(calls: list[ToolCall], tools: list[Tool]) -> list[Finding]:
        if len(calls) == 1 and not calls[0].outputs:
            # What check() finds for one call that binds no outputs, by the shorter way: no
            # list, no binding table, the proven-clean test looked up first.
            return compiled.check_call(calls[0])
        return compiled.check(calls)

    return check


_NAME_AND_ARGUMENTS = frozenset({"name", "arguments"})
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def parse_reply(reply: str) -> ParseResult:
    """Read a reply in the benchmark's format. A reply made only of well-formed ``<tool_call>``
    JSON objects (and prose without braces or tags) is read directly; anything else goes through
    the lenient :func:`~toolmend.formats._tags.parse_tagged_calls`, which gives the same calls for
    such replies and also recovers and flags broken ones."""
    return _parse(reply)[0]


def _parse(reply: str, id_prefix: str | None = None) -> tuple[ParseResult, bool]:
    """:func:`parse_reply`, and whether the calls already carry the ids ``<id_prefix><k>`` (the
    direct reading sets them as it builds each call, which saves building every call twice)."""
    calls: list[ToolCall] = []
    prose: list[str] = []
    pos = 0
    while (start := reply.find(_OPEN, pos)) >= 0:
        end = reply.find(_CLOSE, start)
        body = reply[start + len(_OPEN) : end].strip() if end >= 0 else ""
        if not (body.startswith("{") and body.endswith("}")):
            return parse_tagged_calls(reply), False
        prose.append(reply[pos:start])
        pos = end + len(_CLOSE)
        # Read and validated in one pass by pydantic-core ({"$ref": ...} becomes a Ref). Only an
        # object of exactly a string "name" and an object "arguments" is read here (pydantic
        # does not turn other JSON values into a string or a dict); anything else goes to the
        # lenient reader (tests assert that both readers agree wherever this one reads).
        try:
            call = ToolCall.model_validate_json(body)
        except ValidationError:
            return parse_tagged_calls(reply), False
        if call.model_fields_set != _NAME_AND_ARGUMENTS:
            return parse_tagged_calls(reply), False
        if id_prefix is not None:
            call.id = f"{id_prefix}{len(calls)}"
        calls.append(call)
    prose.append(reply[pos:])
    text = "\n".join(p.strip() for p in prose if p.strip())
    if not calls or "<" in text or "{" in text or "[" in text:
        return parse_tagged_calls(reply), False
    result = ParseResult(
        format="tags",
        calls=calls,
        text=text,
        findings=[],
        think=None,
        reflect=None,
        final=None,
        extras=[{}] * len(calls),
        final_extras={},
    )
    return result, id_prefix is not None


def gold_replies(gold: GoldRun) -> list[str]:
    """The replies of a perfect agent: the gold calls (neighbours of one dependency level in one
    reply, so that calls depending on each other through the state keep their order), then an
    answer stating every fact."""
    replies: list[str] = []
    group: list[ToolCall] = []
    level: int | None = None
    for call, lvl in zip(gold.calls, gold.levels, strict=True):
        if group and lvl != level:
            replies.append(write_reply(group))
            group = []
        group.append(call)
        level = lvl
    if group:
        replies.append(write_reply(group))
    return [*replies, gold.answer]


class WorldSession:
    """A fresh world for one task, behind its fault schedule.

    >>> s = WorldSession(0, [ScheduledFault(step=0, kind="timeout", tool="maps_geocode", call=1)])
    >>> s.execute(ToolCall(name="maps_geocode", arguments={"city": "Paris"}))[0].error
    'timeout'
    >>> s.execute(ToolCall(name="maps_geocode", arguments={"city": "Paris"}))[0].ok
    True
    """

    def __init__(self, seed: int, faults: Sequence[ScheduledFault] = (), *, checker: Any = "auto") -> None:
        self.world = World.create(seed)
        # No response cache, so no cache scope: World.environment() would fingerprint (hash) the
        # whole state after every write to key a cache that is not there.
        self.env = Environment(
            WORLD_TOOLS,
            context={"state": self.world.state},
            checker=_world_checker() if checker == "auto" else checker,
        )
        self.faults = list(faults)
        self.calls: Counter[str] = Counter()

    def execute(self, call: ToolCall) -> tuple[ToolResponse, int | None]:
        """The response to ``call`` and the index of the scheduled fault that answered it, if any."""
        self.calls[call.name] += 1
        n = self.calls[call.name]
        for index, fault in enumerate(self.faults):
            if fault.fires(call.name, n):
                return self._faulted(fault, call), index
        return self.env.execute(call), None

    def _faulted(self, fault: ScheduledFault, call: ToolCall) -> ToolResponse:
        if fault.kind == "wrong_shape":
            real = self.env.execute(call)
            if not real.ok:
                return real
            # The right data in a shape the spec does not describe: a double-encoded payload
            # under an undocumented envelope, as a misconfigured gateway returns it.
            body = {
                "status": "OK",
                "payload": json.dumps(real.data, ensure_ascii=False, separators=(",", ":")),
                "schema": "v2-beta",
            }
            return ToolResponse(
                content=json.dumps(body, ensure_ascii=False),
                data=body,
                error=None,
                source="fault",
                tool=call.name,
            )
        return scheduled_fault_response(fault.kind, call.name)


class Step(BaseModel):
    """One executed call of an episode."""

    turn: int
    call: ToolCall
    ok: bool
    error: str | None = None
    source: str = "execution"
    codes: list[str] = Field(default_factory=list)
    """Finding codes of an invalid call (the model's own mistake)."""
    fault: int | None = None
    """Index of the scheduled fault that answered this call."""
    content: str = ""


class FaultOutcome(BaseModel):
    """What became of one injected fault (only faults that fired are reported).

    ``detected``: the model retried the call or told the user about the failure;
    ``retried``: it made the same call (tool and arguments) again; ``recovered``: such a repeat
    succeeded;
    ``outcome``: ``recovered``, ``told_user`` (ended with a message naming the problem),
    ``skipped`` (went on with other calls), ``abandoned`` (ended without saying), or ``budget``
    (ran out of turns).
    """

    kind: str
    tool: str
    step: int
    turn: int
    hits: int
    detected: bool
    retried: bool
    recovered: bool
    outcome: str


class InvalidOutcome(BaseModel):
    """What became of one invalid call of the model's own: its first finding code, and whether a
    later call of the same tool (any tool, for an unknown name or a broken format) succeeded."""

    code: str
    tool: str
    turn: int
    fixed: bool


class Episode:
    """The agent loop over one task (see the module docstring).

    ``max_turns`` bounds the model's replies (default ``3 × gold length + 4``). Feed replies to
    :meth:`observe`; :attr:`messages` is what the model is sent next.
    """

    def __init__(
        self,
        task: Task,
        faults: list[ScheduledFault],
        *,
        messages: list[Message] | None = None,
        max_turns: int | None = None,
        checker: Any = "auto",
    ) -> None:
        self.task = task
        self.faults = list(faults)
        self.session = WorldSession(task.seed, self.faults, checker=checker)
        self.messages: list[Message] = list(messages or [Message(role="user", content=task.query)])
        self.max_turns = max_turns if max_turns is not None else 3 * len(task.calls) + 4
        self.turns = 0
        self.steps: list[Step] = []
        self.format_errors: list[int] = []
        """Turns whose reply tried to call a tool but could not be read."""
        self.answer: str | None = None

    @property
    def done(self) -> bool:
        """Whether the model answered, or the turn budget is spent."""
        return self.answer is not None or self.turns >= self.max_turns

    def observe(self, reply: str) -> bool:
        """Take one model reply: execute its calls (answered in :attr:`messages`) or take it as the
        final answer. Returns :attr:`done`."""
        if self.done:
            return True
        turn = self.turns
        self.turns += 1
        parsed, named = _parse(reply if isinstance(reply, str) else "", f"call_{turn}_")
        calls = (
            parsed.calls if named else [_with_id(c, f"call_{turn}_{k}") for k, c in enumerate(parsed.calls)]
        )
        broken = [f for f in parsed.findings if f.code == "invalid_format"]
        if not calls:
            if broken:
                self.format_errors.append(turn)
                self.messages.append(Message(role="assistant", content=reply))
                problem = broken[0].message
                self.messages.append(
                    Message(
                        role="user",
                        content=f"Your tool call could not be read ({problem}). Write each call as "
                        '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.',
                    )
                )
                return self.done
            text = parsed.final if parsed.final is not None else parsed.text
            self.answer = text.strip() if text else reply.strip()
            self.messages.append(Message(role="assistant", content=reply))
            return True
        self.act(calls, parsed.text, turn=turn)
        return self.done

    def act(self, calls: list[ToolCall], text: str = "", *, turn: int | None = None) -> list[Message]:
        """Execute ``calls`` (one assistant turn) and return the tool messages that answer them.

        Calls without an id get ``call_<turn>_<k>``; the assistant message and the answers are
        appended to :attr:`messages`. :meth:`observe` uses this after parsing a reply; RL code can
        call it with calls it already holds (it counts as a turn then).
        """
        if turn is None:
            turn = self.turns
            self.turns += 1
        calls = [c if c.id else _with_id(c, f"call_{turn}_{k}") for k, c in enumerate(calls)]
        self.messages.append(Message(role="assistant", content=text, tool_calls=calls))
        answers: list[Message] = []
        for call in calls:
            answers.append(self.execute(call, turn))
        self.messages.extend(answers)
        return answers

    def execute(self, call: ToolCall, turn: int) -> Message:
        """Execute one call in the session, record the step, and return the tool message."""
        # The id only pairs the call with its answer in the history; the step keeps the call as is.
        bare = call
        response, fault = self.session.execute(bare)
        codes = [str(f.get("code")) for f in response.findings if f.get("code")]
        if response.source == "invalid" and not codes:
            codes = [str(response.error)]
        # Validated rather than model_construct: for a few fields, pydantic-core validating is
        # cheaper than model_construct's Python loop (call instances are not revalidated).
        self.steps.append(
            Step(
                turn=turn,
                call=bare,
                ok=response.ok,
                error=response.error,
                source=response.source,
                codes=codes if response.source == "invalid" else [],
                fault=fault,
                content=response.content,
            )
        )
        return Message(
            role="tool", content=response.content, tool_calls=[], tool_call_id=call.id, name=call.name
        )

    # -- results ------------------------------------------------------------------------------

    def grade(self, gold: GoldRun) -> Grade:
        """Grade the world's state and the answer against ``gold``."""
        results = [s.content for s in self.steps if s.ok]
        return grade(gold, self.session.world.snapshot(), self.answer or "", results)

    def fault_outcomes(self) -> list[FaultOutcome]:
        """One entry per scheduled fault that fired."""
        out: list[FaultOutcome] = []
        mentions = self.answer is not None and bool(_MENTIONS.search(self.answer))
        for index, fault in enumerate(self.faults):
            hits = [i for i, s in enumerate(self.steps) if s.fault == index]
            if not hits:
                continue
            first = hits[0]
            failed = self.steps[first].call
            later = self.steps[first + 1 :]
            # A retry is the same call again; another call of the same tool (the second city of
            # a parallel weather lookup) is not.
            again = [s for s in later if s.call.name == failed.name and s.call.arguments == failed.arguments]
            retried = bool(again)
            recovered = any(s.ok and s.fault is None for s in again)
            if recovered:
                outcome = "recovered"
            elif mentions:
                outcome = "told_user"
            elif len(again) < len(later):
                outcome = "skipped"
            elif self.answer is not None:
                outcome = "abandoned"
            else:
                outcome = "budget"
            out.append(
                FaultOutcome(
                    kind=fault.kind,
                    tool=fault.tool,
                    step=fault.step,
                    turn=self.steps[first].turn,
                    hits=len(hits),
                    detected=retried or mentions,
                    retried=retried,
                    recovered=recovered,
                    outcome=outcome,
                )
            )
        return out

    def invalid_outcomes(self) -> list[InvalidOutcome]:
        """One entry per invalid call and per unreadable reply."""
        out: list[InvalidOutcome] = []
        for i, step in enumerate(self.steps):
            if not step.codes:
                continue
            code = step.codes[0]
            later = self.steps[i + 1 :]
            anywhere = code == "wrong_tool_name"
            fixed = any(s.ok and (anywhere or s.call.name == step.call.name) for s in later)
            out.append(InvalidOutcome(code=code, tool=step.call.name, turn=step.turn, fixed=fixed))
        for turn in self.format_errors:
            fixed = any(s.ok and s.turn > turn for s in self.steps)
            out.append(InvalidOutcome(code="invalid_format", tool="", turn=turn, fixed=fixed))
        return out
