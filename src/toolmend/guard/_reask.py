"""The self-refine re-ask: the checker's feedback on a turn, and the short "keep it" answer.

Inference (the ``self-refine`` strategy) and training data (``build refine``, ``train iterate``)
both build the re-ask here, so a refine-trained model is asked at inference in the words it was
trained on. A model keeps a right answer by replying :data:`KEEP_IT` alone: ToolACE-R stops when
two answers are identical, but re-typing every value of a right answer is where a model breaks
it, and it costs a whole answer's tokens.

>>> from toolmend.guard import Turn
>>> print(refine_reask(Turn.from_text('[get_weather(city="Oslo")]', "python"), None))  # doctest: +NORMALIZE_WHITESPACE
Review your previous answer against the request and the tool descriptions. A schema check of your
calls found no problem; check that each call and each value is what the request asks for. If your
answer is right, reply only with: The calls above are correct; no change is needed. Otherwise answer
with the corrected calls, in the same format, and add nothing else.
>>> is_keep("The calls above are correct; no change is needed.")
True
"""

from __future__ import annotations

from toolmend._schema import Finding
from toolmend.check import Checker, ungrounded
from toolmend.check._ground import Context
from toolmend.guard._messages import finding_line
from toolmend.guard._turn import Turn

__all__ = ["KEEP_IT", "describe_findings", "is_keep", "refine_reask", "turn_findings"]

KEEP_IT = "The calls above are correct; no change is needed."
_ASK = "Review your previous answer against the request and the tool descriptions."
_CLEAN = "A schema check of your calls found no problem; check that each call and each value is what the request asks for."
_DO = (
    f"If your answer is right, reply only with: {KEEP_IT} Otherwise answer with the corrected calls,"
    " in the same format, and add nothing else."
)


def turn_findings(turn: Turn, checker: Checker | None, context: Context | None = None) -> list[Finding]:
    """The parser's findings (prose around calls aside) and the checklist's, no repair. With the
    conversation before the turn as ``context``, also the values it never mentions
    (:func:`toolmend.check.ungrounded`) where the checklist found nothing at the same place."""
    found = [f for f in turn.findings if f.code != "redundant_information" or not turn.calls]
    if checker is not None and turn.calls:
        calls = turn.tool_calls()
        found += checker.check(calls)
        if context is not None:
            found += ungrounded(calls, context, checker, besides=found)
    return found


def describe_findings(findings: list[Finding], checker: Checker | None, turn: Turn) -> str:
    """One line per finding, naming the call and tool."""
    lines = []
    tools = checker.tools if checker is not None else {}
    for f in findings:
        name = turn.calls[f.call].name if f.call is not None and f.call < len(turn.calls) else None
        where = f"call {f.call} ({name}): " if name is not None else ""
        lines.append(f"- {where}{finding_line(f, tools.get(name or ''), list(tools))[2:]}")
    return "\n".join(lines)


def refine_reask(
    turn: Turn,
    checker: Checker | None,
    feedback: str = "checker",
    found: list[Finding] | None = None,
    context: Context | None = None,
) -> str:
    """The re-ask sent after ``turn``: with ``feedback="checker"`` the checker's findings (or that
    it found none), with ``"model"`` only the request to review. ``found``: the turn's
    :func:`turn_findings`, when the caller has them already; ``context``: the conversation
    before the turn, to name the values it never mentions."""
    if feedback == "model":
        return f"{_ASK} {_DO}"
    found = turn_findings(turn, checker, context) if found is None else found
    if found:
        return f"{_ASK} A check of your calls found:\n{describe_findings(found, checker, turn)}\n{_DO}"
    return f"{_ASK} {_CLEAN} {_DO}"


def is_keep(reply: str) -> bool:
    """Whether ``reply`` keeps the previous answer (it opens with :data:`KEEP_IT`)."""
    return reply.strip().startswith(KEEP_IT)
