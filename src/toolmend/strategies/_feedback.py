"""Checker feedback shared by the strategies that show findings to the model."""

from __future__ import annotations

from toolmend._schema import Finding
from toolmend.check import Checker
from toolmend.guard import Turn
from toolmend.guard._messages import finding_line

__all__ = ["describe_findings", "turn_findings"]


def turn_findings(turn: Turn, checker: Checker | None) -> list[Finding]:
    """The parser's findings (prose around calls aside) and the checklist's, no repair."""
    found = [f for f in turn.findings if f.code != "redundant_information" or not turn.calls]
    if checker is not None and turn.calls:
        found += checker.check(turn.tool_calls())
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
