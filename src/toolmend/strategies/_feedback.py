"""Checker feedback shared by the strategies that show findings to the model (built in the
guard, where training data builds it too)."""

from __future__ import annotations

from toolmend.guard._reask import describe_findings, turn_findings

__all__ = ["describe_findings", "turn_findings"]
