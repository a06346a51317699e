"""What the guard may do, and how much of it: :class:`GuardPolicy`.

>>> GuardPolicy().max_reasks_per_turn, GuardPolicy().parallel
(2, 'keep_valid')
>>> GuardPolicy(max_reasks_per_turn=-1)
Traceback (most recent call last):
...
toolmend._errors.ConfigError: max_reasks_per_turn must be at least 0, got -1
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from toolmend._errors import ConfigError

__all__ = ["GuardPolicy"]


class GuardPolicy(BaseModel):
    """The guard's settings. Budgets count *re-asks* (extra model requests), not attempts.

    - ``repair``: apply the checker's safe repairs before anything else;
    - ``lenient_json``: read native arguments that are not strict JSON with toolmend's small
      lenient reader (single quotes, trailing commas; never completes cut-off text), recorded
      as a fix;
    - ``reask``: may the model be asked again? With ``False`` the bad calls get a tool result
      that says what went wrong (``fail_to_model``) and the valid ones go ahead;
    - ``parallel``: ``keep_valid`` keeps valid sibling calls and re-asks only the bad ones;
      ``hold_all`` holds the whole turn until every call is valid;
    - ``max_reasks_per_turn`` / ``max_reasks_per_run``: the budgets; when one is spent the turn
      ends with ``on_exhausted`` (``abort``: an explicit terminal state; ``fail_to_model``:
      tell the model and let it go on without the bad calls);
    - ``escalate_after``: the number of times the *same* failure (same codes at the same places)
      may repeat; the first repeat gets an escalated re-ask with the full schema, a repeat past
      this number ends the turn as if the budget were spent;
    - ``transport_retries``: how often the driver re-sends the *same* request after a
      retryable transport error (never shown to the model);
    - ``expected_count``: the number of calls the turn must have, when known;
    - ``ground``: also re-ask, once per turn, for string values that the conversation never
      mentions (:func:`toolmend.check.ungrounded`; the caller passes the conversation to
      :meth:`Guard.decide <toolmend.guard.Guard.decide>`). The check is a heuristic (a date
      computed from "tomorrow" is not in the conversation either), so a re-asked answer that
      keeps such a value is accepted, and it never ends a turn when no re-ask is left;
    - ``rescue``: a native turn with no calls whose text holds tool calls in a format toolmend
      reads (``<tool_call>`` tags, a JSON or Python call list), each naming an offered tool or a
      near miss that repair renames, is taken as those calls (a fix ``tool_call_in_content`` /
      ``rescue``; the turn's text keeps only the prose around them). Never where the request
      allows no call;
    - ``max_repeated_failures``: the loop breaker. A call (same tool, same arguments) that
      already failed this many times in a row in the conversation (its tool reported an error,
      or the guard refused it) is refused as a ``duplicate_call`` that tells the model to stop
      (:class:`~toolmend.guard.Conversation`); 0 turns it off;
    - ``keep_tool``: an answer to a re-ask about calls' arguments must call the tools it was
      asked about; a call to another tool in their place that carries none of their values over
      is a ``wrong_tool_name`` finding (rule ``reask_switch``) and is asked again. Where a re-ask
      is about the tool itself (an unknown name, the call count, a repeat), any tool may answer
      it; ``False`` accepts any valid answer;
    - ``strict``: never change an answer. A turn the guard would repair, rescue or re-ask ends
      as ``abort`` instead, with what it found and would have fixed in the decision.

    The same policy makes :func:`~toolmend.guard.wrap`, the LangChain middleware and
    ``toolmend serve`` decide alike.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    repair: bool = True
    lenient_json: bool = True
    reask: bool = True
    parallel: Literal["keep_valid", "hold_all"] = "keep_valid"
    max_reasks_per_turn: int = 2
    max_reasks_per_run: int = 8
    on_exhausted: Literal["abort", "fail_to_model"] = "abort"
    escalate_after: int = 1
    transport_retries: int = 2
    expected_count: int | None = None
    ground: bool = False
    max_echo_chars: int = 300
    """How much of a broken call's raw arguments the re-ask quotes back."""
    rescue: bool = True
    max_repeated_failures: int = 3
    keep_tool: bool = True
    strict: bool = False

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in (
                "max_reasks_per_turn",
                "max_reasks_per_run",
                "escalate_after",
                "transport_retries",
                "max_repeated_failures",
            ):
                value = data.get(key)
                if isinstance(value, int) and value < 0:
                    raise ConfigError(f"{key} must be at least 0, got {value}")
            parallel = data.get("parallel")
            if parallel is not None and parallel not in ("keep_valid", "hold_all"):
                raise ConfigError(f"parallel must be keep_valid or hold_all, got {parallel!r}")
        return data
