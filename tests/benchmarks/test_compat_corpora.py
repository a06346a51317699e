"""Compat mode against recorded verdicts of the official scorers.

Each ``tests/data/compat/<benchmark>/`` holds predictions (gold, corrupted gold, malformed
replies, edge cases) and, for each, what the benchmark's official code computed for it. The
official code is not in the repository; how each corpus was produced (code version, harness,
counts) is written in ``docs/benchmarks/<benchmark>.md``. A failure here means compat mode no
longer reproduces the official scorer on a recorded input.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolmend.benchmarks.bfcl import BFCLBenchmark
from toolmend.benchmarks.nestools import COUNT_KEYS, NesTools

CORPORA = Path(__file__).resolve().parent.parent / "data" / "compat"


def read_corpus(benchmark: str, name: str = "corpus.jsonl.gz") -> Iterator[dict[str, Any]]:
    with gzip.open(CORPORA / benchmark / name, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def report(mismatches: list[str], total: int) -> str:
    shown = "\n".join(mismatches[:15])
    return f"{len(mismatches)} of {total} recorded verdicts not reproduced; first ones:\n{shown}"


def test_bfcl_reproduces_the_official_checker(data_dir: Path) -> None:
    bench = BFCLBenchmark()
    samples = {s.id: s for s in bench.load(data_dir / "bfcl")}
    rows = list(read_corpus("bfcl"))
    mismatches = []
    for row in rows:
        score = bench.score(samples[row["id"]], row["reply"], "compat")
        ours = (score.values["accuracy"] == 1.0, score.details["error_type"])
        if ours != (row["valid"], row["error_type"]):
            mismatches.append(
                f"{row['id']} {row['reply']!r}: official {row['valid'], row['error_type']}, ours {ours}"
            )
    assert not mismatches, report(mismatches, len(rows))
    # the corpus covers every category, every kind of prediction and the checker's main labels
    assert len(rows) > 4000
    assert {r["id"].rsplit("_", 1)[0] for r in rows} >= {
        "simple_python",
        "multiple",
        "parallel",
        "irrelevance",
    }
    labels = Counter(r["error_type"] for r in rows)
    assert labels[""] > 1000 and len(labels) >= 15


# the official eval.py's columns, in its order, as toolmend's aggregate keys
NESTOOLS_COLUMNS = ["format"] + [
    f"{part}_{m}" for part in ("api", "order", "param", "nest") for m in ("p", "r", "f1")
]


def test_nestools_reproduces_the_official_counts_and_tables(data_dir: Path) -> None:
    bench = NesTools(distractors=0)
    samples = {s.id: s for s in bench.load(data_dir / "nestools")}
    recorded = json.loads((CORPORA / "nestools" / "tables.json").read_text())
    keys = recorded["count_keys"]
    assert set(keys) == set(COUNT_KEYS)
    rows = list(read_corpus("nestools"))
    mismatches, scores = [], []
    for row in rows:
        score = bench.score(samples[row["id"]], row["reply"], "compat")
        scores.append(score)
        official = dict(zip(keys, row["counts"], strict=True))
        ours = score.details["counts"]
        diff = {k: (official[k], ours[k]) for k in keys if official[k] != ours[k]}
        if score.details["depth"] != row["depth"]:
            diff["depth"] = (row["depth"], score.details["depth"])
        if diff:
            mismatches.append(f"{row['id']} {row['kind']} (official, ours): {diff}")
    assert not mismatches, report(mismatches, len(rows))

    # the official eval.py's table (values printed with %.1f) over groups of the same answers
    groups = {
        "all": lambda kind: True,
        "gold": lambda kind: kind == "gold",
        "injected": lambda kind: kind.startswith("inject:"),
        "perturbed": lambda kind: kind != "gold" and not kind.startswith("inject:"),
    }
    for table in recorded["tables"]:
        kept = [s for s, row in zip(scores, rows, strict=True) if groups[table["group"]](row["kind"])]
        agg = bench.aggregate(kept, depths=set(table["depths"]))
        columns = [c for c in NESTOOLS_COLUMNS if c in agg] + (["avg_f1"] if "avg_f1" in agg else [])
        ours = [f"{agg[c] * 100:.1f}" for c in columns]
        assert ours == table["values"], f"{table['group']} depths {table['depths']}"
    assert len(rows) > 3500 and len(recorded["tables"]) == 16
    assert sum(r["counts"][keys.index("tree")] for r in rows) > 1000  # passes and failures both recorded
