"""The error every client adapter raises when the guard's budget runs out (one class, so one
``except`` catches it whichever client was wrapped)."""

from __future__ import annotations

from typing import Any

from toolmend._errors import ToolmendError
from toolmend.guard._driver import GuardOutcome

__all__ = ["GuardAborted"]


class GuardAborted(ToolmendError):
    """The guard's budget was spent before the model gave valid calls. ``outcome`` holds every
    decision; ``last_response`` is the model's last (invalid) answer."""

    def __init__(self, outcome: GuardOutcome, last_response: Any) -> None:
        super().__init__(
            f"tool-call guard gave up: {outcome.final.reason} (codes: {', '.join(outcome.final.codes)})"
        )
        self.outcome = outcome
        self.last_response = last_response
