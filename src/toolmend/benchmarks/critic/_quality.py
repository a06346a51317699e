"""A built critique suite's quality report: what it holds, what was dropped, what it overlaps.

For each variant found under a suite folder (``base``, ``evolved``) the report gives

- samples per error type × domain (external samples as ``external/<fault>``), and per evolution;
- planned samples and the share dropped by each label check (from the build's
  :class:`~toolmend.benchmarks.critic._build.SuiteInfo`), and the FinishAction share of external golds;
- duplicate tasks (the same request after normalising case and punctuation) and near-duplicates
  (cosine similarity of sentence embeddings at or above ``near``, default 0.95);
- contamination: requests that equal, or share an 8-word run with, a test item of BFCL, NesTools
  or Tool-Reflection-Bench in the shared data folder (a suite built *from* one of them overlaps
  it by construction, and the report says so);
- the checklist critic's scores, when the caller ran it (the runner lives above this layer).

>>> normalise("Hello,  WORLD!")
'hello world'
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolmend._errors import ConfigError
from toolmend._jsontext import loads, read_text
from toolmend._shared import shared_dir
from toolmend.benchmarks.critic._build import SuiteInfo
from toolmend.benchmarks.critic._verify import CHECKS
from toolmend.benchmarks.critictool._records import data_file

__all__ = ["NGRAM", "QualityReport", "VariantQuality", "normalise", "reference_queries", "suite_quality"]

NGRAM = 8
"""Word-run length for contamination: a shared run of this many words counts as overlap."""

_PREFIX = {"base": "base", "evolved": "evol"}
_HEADLINE = ("overall", "detect", "category", "tool", "args", "retry", "break", "skip_finish_tool",
             "skip_finish_args")  # fmt: skip
_TYPES = ("tool_select_error", "tool_hallucination_error", "parameters_key_error", "parameters_value_error")


def normalise(text: str) -> str:
    """Lower case, words only, single spaces."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _grams(text: str) -> set[str]:
    words = normalise(text).split()
    return {" ".join(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


class Overlap(BaseModel):
    """How many of the suite's distinct requests overlap one reference set."""

    reference_items: int
    exact: int
    ngram: int
    """Requests sharing an ``NGRAM``-word run with a reference item (exact ones included)."""
    note: str = ""


class VariantQuality(BaseModel):
    """The report for one variant."""

    samples: int
    counts: dict[str, dict[str, int]]
    """Error type (or ``error_free``, ``external/<fault>``) → domain → samples."""
    evolution: dict[str, int] = Field(default_factory=dict)
    """Samples per evolution strategy (a ``mixed`` sample counts for each of its strategies)."""
    planned: int | None = None
    dropped: dict[str, int] = Field(default_factory=dict)
    dropped_share: dict[str, float] = Field(default_factory=dict)
    finish_share: float
    tasks: int
    duplicate_tasks: int
    """Distinct requests that occur more than once after normalising (counted once each)."""
    near_duplicate_pairs: int
    near_duplicate_tasks: int
    contamination: dict[str, Overlap] = Field(default_factory=dict)
    critic: dict[str, float] = Field(default_factory=dict)
    """The checklist critic's metrics (percent), when given."""


class QualityReport(BaseModel):
    """The suite-quality report of every variant built under one folder."""

    root: Path
    source: str
    near: float
    variants: dict[str, VariantQuality]

    def critic_drop(self) -> float | None:
        """How much the checklist critic's Overall falls from base to evolved (points), if both ran."""
        base = self.variants.get("base")
        evolved = self.variants.get("evolved")
        if base is None or evolved is None or "overall" not in base.critic or "overall" not in evolved.critic:
            return None
        return round(base.critic["overall"] - evolved.critic["overall"], 2)

    def markdown(self) -> str:
        """The report as Markdown tables."""
        names = list(self.variants)
        rows = [f"# Suite quality: {self.source} ({self.root})", ""]
        rows += ["| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]

        def line(label: str, values: Iterable[Any]) -> None:
            rows.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")

        vs = [self.variants[n] for n in names]
        line("samples", [v.samples for v in vs])
        line("planned", [v.planned if v.planned is not None else "-" for v in vs])
        for check in CHECKS:
            if any(v.dropped.get(check) for v in vs):
                line(
                    f"dropped: {check}",
                    [f"{v.dropped.get(check, 0)} ({v.dropped_share.get(check, 0):.1%})" for v in vs],
                )
        line("FinishAction share of external golds", [f"{v.finish_share:.1%}" for v in vs])
        line("distinct tasks", [v.tasks for v in vs])
        line("duplicate tasks", [v.duplicate_tasks for v in vs])
        line(f"near-duplicate pairs (cosine >= {self.near})", [v.near_duplicate_pairs for v in vs])
        line("tasks in a near-duplicate pair", [v.near_duplicate_tasks for v in vs])
        for ref in sorted({r for v in vs for r in v.contamination}):
            line(f"contamination {ref}: exact / {NGRAM}-gram",
                 [f"{v.contamination[ref].exact} / {v.contamination[ref].ngram}" if ref in v.contamination else "-"
                  for v in vs])  # fmt: skip
        keys = [k for k in (*_HEADLINE, *(f"{t}/{m}" for t in _TYPES for m in ("detect", "category")))
                if any(k in v.critic for v in vs)]  # fmt: skip
        for key in keys:
            line(f"checklist critic: {key}", [f"{v.critic[key]:.2f}" if key in v.critic else "-" for v in vs])
        drop = self.critic_drop()
        if drop is not None:
            rows += ["", f"The checklist critic's Overall falls by {drop:.2f} points on the evolved variant."]
        notes = sorted({o.note for v in vs for o in v.contamination.values() if o.note})
        rows += ["", *notes] if notes else []
        for name, v in zip(names, vs, strict=True):
            rows += ["", f"## {name}: samples per type and domain", ""]
            domains = sorted({d for per in v.counts.values() for d in per})
            rows += ["| type | " + " | ".join(domains) + " |", "|---|" + "---:|" * len(domains)]
            for kind, per in v.counts.items():
                rows.append(f"| {kind} | " + " | ".join(str(per.get(d, 0)) for d in domains) + " |")
            if v.evolution:
                rows += ["", "Samples per evolution strategy: "
                         + ", ".join(f"{k} {n}" for k, n in v.evolution.items())]  # fmt: skip
        return "\n".join(rows) + "\n"


def _records(root: Path, variant: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in ("internal", "external"):
        path = data_file(root, part, _PREFIX[variant], False)
        if path.exists():
            out += [dict(r, _part=part) for r in loads(read_text(path)).values()]
    return out


def _query(record: dict[str, Any]) -> str:
    # The request is the last user turn before the first call (earlier ones are long context).
    users = [m["content"] for m in record["query_prompt"] if m["role"] == "user"]
    return users[-1] if users else ""


def reference_queries(data: str | Path | None = None) -> dict[str, list[str]]:
    """The user requests of the BFCL, NesTools and Tool-Reflection-Bench test items found under
    ``data`` (default: the shared data folder); a dataset that is absent is left out."""
    root = Path(data) if data is not None else shared_dir() / "data"
    out: dict[str, list[str]] = {}
    if (root / "bfcl").is_dir():
        from toolmend.benchmarks.bfcl._data import load_bfcl

        out["bfcl"] = [
            "\n".join(m.content for m in s.messages if m.role == "user") for s in load_bfcl(root / "bfcl")
        ]
    if (root / "nestools" / "test_data.jsonl").exists():
        from toolmend.benchmarks.nestools import load_nestools

        out["nestools"] = [s.messages[-1].content for s in load_nestools(root / "nestools")]
    bench = root / "tool-reflection-bench"
    if bench.is_dir():
        from toolmend.benchmarks.reflection_bench import load_reflection_bench

        out["tool-reflection-bench"] = [
            next((m.content for m in s.messages if m.role == "user"), "")
            for path in sorted(bench.glob("*.jsonl"))
            for s in load_reflection_bench(path)
        ]
    return out


def _contamination(
    tasks: Sequence[str], references: Mapping[str, list[str]], source: str
) -> dict[str, Overlap]:
    out: dict[str, Overlap] = {}
    for name, items in references.items():
        exact_set = {normalise(t) for t in items}
        gram_set = {g for t in items for g in _grams(t)}
        exact = sum(1 for t in tasks if normalise(t) in exact_set)
        ngram = sum(1 for t in tasks if normalise(t) in exact_set or _grams(t) & gram_set)
        note = (
            f"{name}: the suite is built from its test items, so it overlaps them by construction."
            if name == source
            else ""
        )
        out[name] = Overlap(reference_items=len(items), exact=exact, ngram=ngram, note=note)
    return out


def _near_duplicates(tasks: Sequence[str], near: float) -> tuple[int, int]:
    if len(tasks) < 2:
        return 0, 0
    from toolmend.benchmarks.critic._evolve import _embedder

    vectors = _embedder().encode(list(tasks))
    sims = vectors @ vectors.T
    pairs = [(i, j) for i in range(len(tasks)) for j in range(i + 1, len(tasks)) if sims[i, j] >= near]
    return len(pairs), len({i for p in pairs for i in p})


def _info(root: Path, variant: str) -> SuiteInfo | None:
    path = root / f"suite_{variant}.json"
    return SuiteInfo.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None


def suite_quality(
    root: str | Path,
    *,
    infos: Mapping[str, SuiteInfo] | None = None,
    critic: Mapping[str, Mapping[str, float]] | None = None,
    references: Mapping[str, list[str]] | None = None,
    near: float = 0.95,
) -> QualityReport:
    """The quality report of the variants built under ``root``.

    ``infos``: the build's :class:`SuiteInfo` per variant (default: the ``suite_<variant>.json``
    that :func:`~toolmend.benchmarks.critic.build_suite` writes next to the files); ``critic``:
    the checklist critic's metrics per variant; ``references``: requests to check for overlap
    (default: :func:`reference_queries`).
    """
    root = Path(root)
    refs = reference_queries() if references is None else references
    variants: dict[str, VariantQuality] = {}
    source = ""
    for variant in _PREFIX:
        records = _records(root, variant)
        if not records:
            continue
        info = (infos or {}).get(variant) or _info(root, variant)
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        evolution: Counter[str] = Counter()
        for record in records:
            meta = record.get("toolmend", {})
            source = source or str(meta.get("source", ""))
            kind = (
                f"external/{meta.get('fault')}"
                if record["_part"] == "external"
                else (record["error_type"] or "error_free")
            )
            counts[kind][str(meta.get("domain", "?"))] += 1
            evolution.update(meta.get("evolution", []))
        tasks = sorted({_query(r) for r in records})
        # One trajectory gives several samples with the same request; only different ones duplicate.
        traces: dict[str, set[str]] = defaultdict(set)
        for record in records:
            traces[normalise(_query(record))].add(str(record.get("toolmend", {}).get("trace")))
        pairs, in_pairs = _near_duplicates(tasks, near)
        planned = info.planned if info else None
        dropped = dict(info.dropped) if info else {}
        external = [r for r in records if r["_part"] == "external"]
        finish = sum(1 for r in external if r["ground_truth"][1]["name"] == "FinishAction")
        variants[variant] = VariantQuality(
            samples=len(records),
            counts={k: dict(sorted(v.items())) for k, v in sorted(counts.items())},
            evolution=dict(sorted(evolution.items())),
            planned=planned,
            dropped=dropped,
            dropped_share={k: round(n / planned, 4) for k, n in dropped.items()} if planned else {},
            finish_share=round(finish / len(external), 4) if external else 0.0,
            tasks=len(traces),
            duplicate_tasks=sum(1 for ids in traces.values() if len(ids) > 1),
            near_duplicate_pairs=pairs,
            near_duplicate_tasks=in_pairs,
            contamination=_contamination(tasks, refs, source),
            critic=dict((critic or {}).get(variant, {})),
        )
    if not variants:
        raise ConfigError(f"no critique suite under {root} (expected internal_error/base_data_wo_cot.json)")
    return QualityReport(root=root, source=source, near=near, variants=variants)
