"""``reflect``: Tool-Reflection-Bench's structured reflection at inference. When the checker finds
a problem in a reply (or the last tool result is an error), the model is shown what is wrong and
answers ``<reflect>…</reflect><call>…</call>``; the loop ends at a clean call, at ``<final>``, or
when ``max_rounds`` is spent."""

from __future__ import annotations

from toolmend._errors import ConfigError
from toolmend._schema import Message
from toolmend.check import Checker
from toolmend.guard import classify_fault
from toolmend.guard._reask import describe_findings, turn_findings
from toolmend.strategies._base import Generate, SolveState
from toolmend.strategies._reply import read_answer, read_reply, reply_format, write_reply

__all__ = ["Reflect"]

REFLECT_PROMPT = (
    "Your last step has a problem:\n{problems}\n\n"
    "Think about what went wrong, then act. Answer in this form:\n"
    "<reflect>what was wrong and how to fix it</reflect>\n"
    '<call>the corrected call(s) as JSON: {{"name": ..., "arguments": {{...}}}}</call>\n'
    "If no call is needed any more, answer <reflect>…</reflect><final>your answer</final> instead."
)


class Reflect:
    """See the module docstring."""

    name = "reflect"

    def __init__(self, max_rounds: int = 2) -> None:
        if max_rounds < 1:
            raise ConfigError(f"reflect: max_rounds must be at least 1, got {max_rounds}")
        self.max_rounds = max_rounds

    def wrap(self, generate: Generate, state: SolveState) -> Generate:
        fmt = reply_format(state.benchmark)
        checker = Checker(state.sample.tools) if state.sample.tools else None

        async def reflect(messages: list[Message], *, epoch: int | None = None) -> str:
            reply = await generate(messages, epoch=epoch)
            history = list(messages)
            # A tool error the model caused (a bad argument, an unknown id) is reflected on; a
            # transient or permission fault is the environment's (env-policy), not a mistake.
            last = messages[-1] if messages else None
            fault = (
                classify_fault(last.content)[0]
                if last is not None and last.role in ("tool", "user")
                else None
            )
            tool_error = fault in ("other", "not_found")
            rounds, ended = 0, "clean"
            while rounds < self.max_rounds:
                turn = read_reply(reply, fmt) if rounds else read_answer(reply, fmt, state)
                if turn.final is not None and rounds:
                    ended = "final"
                    break
                findings = turn_findings(turn, checker)
                problems = describe_findings(findings, checker, turn)
                if not findings and not (tool_error and rounds == 0 and turn.calls):
                    break
                if not findings:
                    problems = f"- The tool answered with an error: {messages[-1].content[:300]}"
                history += [
                    Message(role="assistant", content=reply),
                    Message(role="user", content=REFLECT_PROMPT.format(problems=problems)),
                ]
                answer = await generate(history, epoch=epoch)
                rounds += 1
                parsed = read_reply(answer, "tags")
                if fmt == "tags":
                    reply = answer
                elif parsed.final is not None:
                    reply, ended = parsed.final, "final"
                    break
                elif parsed.calls:
                    reply = write_reply(parsed.tool_calls(), fmt, turn, state.sample.tools)
                else:
                    reply = answer
                ended = "budget" if rounds >= self.max_rounds else "clean"
            state.events.append({"kind": "reflect", "rounds": rounds, "requests": rounds, "ended": ended})
            return reply

        return reflect
