"""``self-refine``: ToolACE-R's adaptive self-refinement at inference. The model is asked to
refine its own answer until it keeps it (the short "keep it" reply of :mod:`toolmend.guard._reask`,
or the same answer again: a fixed point) or ``max_refine`` rounds are spent. An empty reply
keeps the answer too (event ``stop: "empty"``): it corrects nothing, and small models answer a
re-ask with nothing when they see nothing to change. The feedback comes
from the checker (default: its findings, or that it found none) or from the model alone
(``feedback="model"``: a request to review).

Self-refinement can break a correct answer; runs report those regressions. ``when="findings"``
re-asks only while the checker faults the reply: a reply it passes is returned as it is, so the
strategy cannot break it, and costs no request. (Re-asking every reply is ToolACE-R's form: a
model that re-checks values itself gains from it; one that cannot only loses right answers.)
``ground=True`` adds to the checker's findings the string values that the conversation never
mentions (:func:`toolmend.check.ungrounded`): the wrong values a schema cannot see.
``accept="no_worse"`` takes a refined reply only when the checker finds no more problems in it
than in the reply before, and no more schema problems: a re-ask that breaks a call ends the loop
with the reply it had (event ``stop: "worse"``)."""

from __future__ import annotations

from typing import Literal

from toolmend._errors import ConfigError
from toolmend._schema import Finding, Message
from toolmend.check import Checker
from toolmend.guard import Turn
from toolmend.guard._reask import is_keep, refine_reask, turn_findings
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_answer, read_reply, reply_format

__all__ = ["SelfRefine"]


def _same(a: Turn, b: Turn, a_text: str, b_text: str) -> bool:
    if a.calls or b.calls:
        return [(c.name, c.arguments) for c in a.calls] == [
            (c.name, c.arguments) for c in b.calls
        ] and a.final == b.final
    return a_text.strip() == b_text.strip()


def _worse(new: list[Finding], old: list[Finding]) -> bool:
    def schema(found: list[Finding]) -> int:
        return sum(not f.data.get("ungrounded") for f in found)

    return len(new) > len(old) or schema(new) > schema(old)


class SelfRefine:
    """See the module docstring."""

    name = "self-refine"

    def __init__(
        self,
        max_refine: int = 3,
        feedback: Literal["checker", "model"] = "checker",
        when: Literal["always", "findings"] = "always",
        ground: bool = False,
        accept: Literal["any", "no_worse"] = "any",
    ) -> None:
        if max_refine < 1:
            raise ConfigError(f"--max-refine must be at least 1, got {max_refine}")
        if feedback not in ("checker", "model"):
            raise ConfigError(f"self-refine feedback must be checker or model, got {feedback!r}")
        if when not in ("always", "findings"):
            raise ConfigError(f"self-refine when must be always or findings, got {when!r}")
        if not isinstance(ground, bool):
            raise ConfigError(f"self-refine ground must be true or false, got {ground!r}")
        if accept not in ("any", "no_worse"):
            raise ConfigError(f"self-refine accept must be any or no_worse, got {accept!r}")
        on = [name for name, set_ in (("when=findings", when == "findings"), ("ground=true", ground),
                                      ("accept=no_worse", accept == "no_worse")) if set_]  # fmt: skip
        if on and feedback != "checker":
            raise ConfigError(
                f"self-refine {on[0]} needs feedback=checker: it works on the checker's findings"
            )
        self.max_refine = max_refine
        self.ground = ground
        self.accept = accept
        self.feedback = feedback
        self.when = when

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        fmt = reply_format(state.benchmark)
        checker = Checker(state.sample.tools) if state.sample.tools and self.feedback == "checker" else None

        async def refine(messages: list[Message], *, epoch: int | None = None) -> str:
            reply = await generate(messages, epoch=epoch)
            turn = read_answer(reply, fmt, state)
            history = list(messages)
            # The conversation before the reply: later re-asks quote the values they question.
            context = messages if self.ground else None
            rounds, stop = 0, "max_refine"
            found = turn_findings(turn, checker, context)
            while rounds < self.max_refine:
                if not found and self.when == "findings":
                    stop = "clean"
                    break
                ask = refine_reask(turn, checker, self.feedback, found)
                history += [Message(role="assistant", content=reply), Message(role="user", content=ask)]
                new = await generate(history, epoch=epoch)
                rounds += 1
                if is_keep(new) or not new.strip():
                    stop = "kept" if new.strip() else "empty"
                    break
                new_turn = read_reply(new, fmt)
                if _same(turn, new_turn, reply, new):
                    stop = "fixed_point"
                    break
                new_found = turn_findings(new_turn, checker, context)
                if self.accept == "no_worse" and _worse(new_found, found):
                    stop = "worse"
                    break
                reply, turn, found = new, new_turn, new_found
            state.events.append({"kind": "self-refine", "rounds": rounds, "requests": rounds, "stop": stop})
            return reply

        return refine
