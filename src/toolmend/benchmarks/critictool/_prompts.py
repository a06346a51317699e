"""The mode instructions CriticTool adds to the system prompt, in toolmend's own words.

The official runner inserts one instruction into the system prompt just before the sentence
"Remember: only generate ONE step each time", chosen by the task: internal errors (reflect and
correct), external errors with the *skip* policy, or external errors with the *finish* policy, each
with or without chain of thought. The reply formats and the four category labels are what the
scorer reads, so a replacement template should keep asking for them.

>>> instr = Instructions()
>>> "tool_hallucination_error" in instr.for_sample("internal", None, cot=False)
True
>>> custom = Instructions(skip="Retry at most 3 times, then move on. Reply as JSON.")
>>> custom.for_sample("external", "skip", cot=False)
'Retry at most 3 times, then move on. Reply as JSON.'
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from toolmend._schema import Message, Role, Sample

__all__ = ["ANCHOR", "Instructions", "build_prompt", "insert_instruction"]

ANCHOR = "Remember: only generate ONE step each time"
"""The sentence the instruction is inserted in front of, as in the official runner."""

_LABELS = (
    "- tool_select_error: the tool called exists, but it is not the one this step needs;\n"
    "- tool_hallucination_error: the tool called is not in the tool list at all;\n"
    "- parameters_value_error: an argument value has the wrong format or the wrong content;\n"
    "- parameters_key_error: an argument name is not a parameter of the tool, or a required "
    "parameter is missing.\n"
)
_INTERNAL = (
    "Before you act, look again at the last tool call in this conversation and at what the tool "
    "returned. If that call was a mistake, say which kind of mistake it was with exactly one of "
    "these labels, and give the corrected call as your step:\n" + _LABELS + "If the last call was "
    "right, leave the label empty and give the next step of the task.\nAnswer with a single JSON "
    "object and nothing else:\n"
)
_INTERNAL_FORMAT = '{"error": "<label, or empty if the last call was right>", "name": "<tool name>", "args": {<arguments>}}\n'
_INTERNAL_FORMAT_COT = (
    '{"error": "<label, or empty if the last call was right>", "thought": "<what this step is meant '
    'to achieve>", "name": "<tool name>", "args": {<arguments>}}\n'
)
_RETRY = (
    "A tool may fail for reasons outside your control (a timeout, a service that is down, a rate "
    "limit). When a tool reports such a failure you may send the same call again, but no more "
    "than three times in total. "
)
_SKIP = (
    _RETRY + "If it keeps failing, leave that step aside and carry on with the remaining parts of "
    "the task.\nAnswer with a single JSON object and nothing else, either a tool call:\n"
)
_FINISH = (
    _RETRY + "If it keeps failing, stop calling tools: tell the user what went wrong and ask how "
    "they would like to go on.\nAnswer with a single JSON object and nothing else, either a tool "
    "call:\n"
)
_CALL = '{"name": "<tool name>", "args": {<arguments>}}\n'
_CALL_COT = (
    '{"thought": "<what this step is meant to achieve>", "name": "<tool name>", "args": {<arguments>}}\n'
)
_SKIP_END = 'or, once you have the final answer:\n{%s"name": "FinishAction", "args": "<final answer>"}\n'
_FINISH_END = (
    'or, to hand back to the user:\n{%s"name": "FinishAction", "args": "<your message to the user>"}\n'
)
_THOUGHT = '"thought": "<what this step is meant to achieve>", '


class Instructions(BaseModel):
    """The six mode instructions; pass any of them to replace toolmend's wording with your own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    internal: str = _INTERNAL + _INTERNAL_FORMAT
    internal_cot: str = _INTERNAL + _INTERNAL_FORMAT_COT
    skip: str = _SKIP + _CALL + _SKIP_END % ""
    skip_cot: str = _SKIP + _CALL_COT + _SKIP_END % _THOUGHT
    finish: str = _FINISH + _CALL + _FINISH_END % ""
    finish_cot: str = _FINISH + _CALL_COT + _FINISH_END % _THOUGHT

    def for_sample(
        self,
        part: Literal["internal", "external"],
        external_mode: Literal["skip", "finish"] | None,
        *,
        cot: bool,
    ) -> str:
        """The instruction for one task kind."""
        key = "internal" if part == "internal" else (external_mode or "skip")
        text: str = getattr(self, f"{key}_cot" if cot else key)
        return text


def insert_instruction(system_prompt: str, instruction: str) -> str:
    """``system_prompt`` with ``instruction`` placed just before :data:`ANCHOR` (appended at the
    end when the prompt lacks that sentence).

    >>> insert_instruction("Tools: [...]\\nRemember: only generate ONE step each time.", "BE BRIEF.\\n")
    'Tools: [...]\\nBE BRIEF.\\nRemember: only generate ONE step each time.'
    """
    idx = system_prompt.find(ANCHOR)
    if idx == -1:
        sep = "" if not system_prompt or system_prompt.endswith("\n") else "\n"
        return system_prompt + sep + instruction
    return system_prompt[:idx] + instruction + system_prompt[idx:]


def build_prompt(
    sample: Sample,
    instructions: Instructions | None = None,
    *,
    tool_role: Literal["tool", "user"] = "user",
) -> list[Message]:
    """The messages a model is sent for a CriticTool sample.

    The system prompt gets the instruction for the sample's part and mode. Tool results have no
    call id in CriticTool (the protocol is plain text), so by default they are sent as ``user``
    messages — what the official runner means to do (its chat templates render them like user
    turns); pass ``tool_role="tool"`` to keep them as tool messages.
    """
    instructions = instructions or Instructions()
    meta = sample.metadata
    text = instructions.for_sample(
        "external" if meta.get("part") == "external" else "internal",
        meta.get("external_mode"),
        cot=bool(meta.get("cot")),
    )
    out: list[Message] = []
    inserted = False
    for msg in sample.messages:
        if msg.role == "system" and not inserted:
            msg = msg.model_copy(update={"content": insert_instruction(msg.content, text)})
            inserted = True
        elif msg.role == "tool" and tool_role == "user":
            role: Role = "user"
            msg = msg.model_copy(update={"role": role, "name": None})
        out.append(msg)
    if not inserted:
        out.insert(0, Message(role="system", content=text))
    return out
