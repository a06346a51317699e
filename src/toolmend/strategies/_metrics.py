"""What a strategy did, measured: recovery per finding code from the guard's telemetry, and the
extra requests the strategies report. (Regressions between runs are the report's paired
comparison: right → wrong.)

>>> events = [
...     {"kind": "guard", "action": "reask", "fixed": ["invalid_type"], "unfixed": ["missing_required"]},
...     {"kind": "guard", "action": "accept", "fixed": [], "unfixed": []},
...     {"kind": "guard", "action": "abort", "fixed": [], "unfixed": ["wrong_tool_name"]},
... ]
>>> recovery_by_code(events)["missing_required"]
{'found': 1, 'repair': 0, 'reask': 1, 'gave_up': 0}
>>> recovery_by_code(events)["wrong_tool_name"]["gave_up"]
1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["extra_requests", "recovery_by_code"]


def recovery_by_code(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per finding code, over guarded turns: how often found, fixed by repair alone, recovered
    after a re-ask, or given up (the turn ended in ``abort`` or ``fail_to_model``)."""
    out: dict[str, dict[str, int]] = {}
    fixed: set[str] = set()
    unfixed: set[str] = set()
    for e in events:
        if e.get("kind") != "guard":
            continue
        fixed.update(e.get("fixed") or [])
        unfixed.update(e.get("unfixed") or [])
        if e.get("action") == "reask":
            continue
        ok = e.get("action") in ("accept", "repaired")
        for code in sorted(fixed | unfixed):
            row = out.setdefault(code, {"found": 0, "repair": 0, "reask": 0, "gave_up": 0})
            row["found"] += 1
            row["repair" if code not in unfixed else ("reask" if ok else "gave_up")] += 1
        fixed, unfixed = set(), set()
    return out


def extra_requests(events: Iterable[Mapping[str, Any]]) -> int:
    """Model requests the strategies added (each event says how many it made)."""
    return sum(int(e.get("requests") or 0) for e in events if e.get("kind") != "guard")
