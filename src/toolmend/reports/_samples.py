"""The data behind the report's sample browser: every sample of every run, compact.

Long texts (prompts, tool lists, gold answers, outputs) go into one string pool and are referred
to by index, so a system prompt or a tool list shared by 20,000 samples is stored once. The
prompt, the offered tools and the gold answer are not in the run directory; they are rebuilt from
the run's dataset (the manifest's path, checked against its SHA-256), and left out with a note
when the data is gone or changed.

Per sample: ``{"id", "g": {category, depth, …}, "p": prompt, "t": tools, "gold", "fb" (the
message a multi-turn episode sends back before each later turn), "r": [one
entry per run or null]}``; a run's entry holds ``s`` (headline score, 0–100), ``v`` (every
per-sample metric, 0–100), ``o`` (outputs), ``c`` (parsed calls), ``f`` (findings), ``why`` (the
scorer's reason), ``d`` (other details), ``u`` (tokens, requests, retries, cache hits, latency),
``e`` (strategy events), ``x`` (infrastructure error), ``g`` (the answer's error type / outcome).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from toolmend._errors import ToolmendError
from toolmend._schema import Message
from toolmend.reports._data import RunView
from toolmend.runs import SampleRecord

__all__ = ["REASON_KEYS", "browser_data", "dataset_samples", "is_correct"]

REASON_KEYS: tuple[str, ...] = ("error", "reason", "explanation", "checker", "message", "verdict")
"""``details`` keys that hold the scorer's explanation of a sample's score."""

RUN_KEYS: frozenset[str] = frozenset({"error_type", "outcome"})
"""Breakdown keys that describe a run's answer rather than the sample (filtered per run)."""

_SECRET_WORDS = ("key", "token", "secret", "password", "authorization")


def is_correct(score: float | None) -> bool:
    """A sample counts as right when its headline score is full marks (for flips between runs)."""
    return score is not None and score >= 1.0 - 1e-9


class _Pool:
    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        i = self._index.get(text)
        if i is None:
            i = self._index[text] = len(self.items)
            self.items.append(text)
        return i


def dataset_samples(view: RunView) -> tuple[dict[str, dict[str, Any]], str | None]:
    """``id → {prompt, tools, gold}`` rebuilt from the run's dataset, and a note when that failed
    (read once per view: the worst samples and the browser both ask)."""
    cached: tuple[dict[str, dict[str, Any]], str | None] | None = view.__dict__.get("_dataset_samples")
    if cached is None:
        cached = view.__dict__["_dataset_samples"] = _dataset_samples(view)
    return cached


def _dataset_samples(view: RunView) -> tuple[dict[str, dict[str, Any]], str | None]:
    m = view.manifest
    settings = dict((m.config.get("bench") or {}) if m else {})
    if m is None or m.dataset is None or not settings:
        return {}, "prompts, tools and gold answers need a run written by toolmend bench"
    path = Path(m.dataset.path)
    try:
        from toolmend._bench import BenchSettings, samples_of_run
        from toolmend.runs._manifest import dataset_fingerprint

        if not path.exists():
            return {}, f"prompts, tools and gold answers are not shown: {path} is gone"
        if dataset_fingerprint(path) != m.dataset.sha256:
            return {}, f"prompts, tools and gold answers are not shown: {path} changed since the run"
        bench, samples = samples_of_run(view.benchmark, BenchSettings.model_validate(settings), path)
        out: dict[str, dict[str, Any]] = {}
        for s in samples:
            try:
                gold: Any = bench.gold(s)
            except ToolmendError:
                gold = None
            out[s.id] = {"prompt": bench.prompt(s), "tools": s.tools, "gold": gold}
            feedback = bench.turn_feedback(s)
            if feedback is not None:
                out[s.id]["feedback"] = feedback
        return out, None
    except (ToolmendError, OSError, ValueError, KeyError, TypeError) as exc:
        return {}, f"prompts, tools and gold answers are not shown: {exc}"


def _message(m: Message, pool: _Pool) -> list[Any]:
    calls = [[c.name, json.dumps(c.arguments, ensure_ascii=False)] for c in m.tool_calls]
    return [m.role, pool(m.content), calls, m.name or ""]


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return None
    return round(100.0 * float(v), 1)


def _group_value(raw: Any) -> str | None:
    if isinstance(raw, dict | list):
        return None
    return "none" if raw in ("", None) else str(raw)


def _entry(view: RunView, r: SampleRecord, pool: _Pool) -> dict[str, Any]:
    score = view.score_of(r)
    details = r.details
    entry: dict[str, Any] = {
        "s": None if score is None else round(100.0 * score, 1),
        "v": {k: _num(v) for k, v in r.scores.items()},
        "o": [pool(o) for o in r.outputs],
        "c": [[c.name, json.dumps(c.arguments, ensure_ascii=False, default=repr)] for c in r.calls],
        "f": [[f.code, f.message] for f in r.findings],
        "u": [
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.requests,
            r.retries,
            r.cache_hits,
            round(r.latency_s, 3),
        ],  # fmt: skip
    }
    why = [f"{k}: {details[k]}" for k in REASON_KEYS if details.get(k) not in (None, "", [], {})]
    if why:
        entry["why"] = pool("\n".join(why))
    rest = {
        k: v
        for k, v in details.items()
        if k not in REASON_KEYS
        and k not in view.detail_keys
        and not any(w in k.lower() for w in _SECRET_WORDS)
    }
    if rest:
        entry["d"] = pool(json.dumps(rest, ensure_ascii=False, default=repr, sort_keys=True)[:4000])
    events = r.events
    if events:
        entry["e"] = [e for e in events if isinstance(e, dict)][:200]
    if r.error is not None:
        entry["x"] = f"{r.error.type}: {r.error.message}"[:1000]
    return entry


def browser_data(views: list[RunView], *, with_dataset: bool = True) -> dict[str, Any]:
    """The JSON object the sample browser reads (see the module docstring)."""
    pool = _Pool()
    notes: list[str] = []
    ref: dict[str, dict[str, Any]] = {}
    if with_dataset:
        loaded: set[tuple[str, str, str]] = set()
        for v in views:
            m = v.manifest
            # Runs of one dataset with the same settings share their prompts: read it once.
            ident = None
            if m is not None and m.dataset is not None:
                settings = {k: v for k, v in (m.config.get("bench") or {}).items() if k != "model"}
                ident = (m.dataset.path, m.dataset.sha256, repr(sorted(settings.items())))
            if ident in loaded:
                continue
            if ident is not None:
                loaded.add(ident)
            found, note = dataset_samples(v)
            for k, val in found.items():
                ref.setdefault(k, val)
            if note and note not in notes:
                notes.append(note)
    order: list[str] = []
    by_id: list[dict[str, SampleRecord]] = []
    seen: set[str] = set()
    for v in views:
        ids: dict[str, SampleRecord] = {}
        for r in v.records:
            ids[r.id] = r
            if r.id not in seen:
                seen.add(r.id)
                order.append(r.id)
        by_id.append(ids)
    samples = []
    # Samples of one suite share their tool objects (50 tools in every critic prompt): render
    # each list once. Keyed by the objects' identity, which holds while ``ref`` keeps them.
    tool_text: dict[tuple[int, ...], int] = {}
    for sid in order:
        groups: dict[str, str] = {}
        entries: list[dict[str, Any] | None] = []
        for v, ids in zip(views, by_id, strict=True):
            rec = ids.get(sid)
            if rec is None:
                entries.append(None)
                continue
            entry = _entry(v, rec, pool)
            for key in v.detail_keys:
                if key not in rec.details or (g := _group_value(rec.details[key])) is None:
                    continue
                if key in RUN_KEYS:
                    entry.setdefault("g", {})[key] = g
                else:
                    groups.setdefault(key, g)
            entries.append(entry)
        item: dict[str, Any] = {"id": sid, "g": groups, "r": entries}
        extra = ref.get(sid)
        if extra:
            item["p"] = [_message(m, pool) for m in extra["prompt"]]
            tools_id = tuple(map(id, extra["tools"]))
            if tools_id not in tool_text:
                tool_text[tools_id] = pool(
                    json.dumps(
                        [t.model_dump(exclude_none=True) for t in extra["tools"]],
                        ensure_ascii=False,
                        indent=1,
                    )
                )
            item["t"] = tool_text[tools_id]
            if "feedback" in extra:
                item["fb"] = _message(extra["feedback"], pool)
            gold = extra["gold"]
            if gold is not None:
                item["gold"] = [pool(g) for g in ([gold] if isinstance(gold, str) else gold)]
        samples.append(item)
    runs = [
        {"label": v.label, "name": v.name, "primary": v.primary or "score", "status": v.status} for v in views
    ]
    return {"runs": runs, "samples": samples, "pool": pool.items, "notes": notes}
