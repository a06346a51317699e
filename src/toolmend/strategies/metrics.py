"""What a strategy did, measured: recovery per finding code from the guard's telemetry,
regressions and improvements between two runs' per-sample scores, and extra requests.

>>> events = [
...     {"kind": "guard", "action": "reask", "fixed": ["invalid_type"], "unfixed": ["missing_required"]},
...     {"kind": "guard", "action": "accept", "fixed": [], "unfixed": []},
...     {"kind": "guard", "action": "abort", "fixed": [], "unfixed": ["wrong_tool_name"]},
... ]
>>> recovery_by_code(events)["missing_required"]
{'found': 1, 'repair': 0, 'reask': 1, 'gave_up': 0}
>>> recovery_by_code(events)["wrong_tool_name"]["gave_up"]
1
>>> compare_scores({"a": 1.0, "b": 0.0, "c": 1.0}, {"a": 0.0, "b": 1.0, "c": 1.0})
{'regressions': ['a'], 'improvements': ['b'], 'both': 3}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["compare_scores", "extra_requests", "recovery_by_code"]


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


def compare_scores(before: Mapping[str, float | None], after: Mapping[str, float | None]) -> dict[str, Any]:
    """Samples right before and wrong after (``regressions``), the reverse (``improvements``),
    over the samples both runs scored; "right" is a full score."""
    both = [k for k in before if k in after and before[k] is not None and after[k] is not None]
    regressions = [k for k in both if before[k] == 1.0 and after[k] != 1.0]
    improvements = [k for k in both if before[k] != 1.0 and after[k] == 1.0]
    return {"regressions": regressions, "improvements": improvements, "both": len(both)}


def extra_requests(events: Iterable[Mapping[str, Any]]) -> int:
    """Model requests the strategies added (each event says how many it made)."""
    return sum(int(e.get("requests") or 0) for e in events if e.get("kind") != "guard")
