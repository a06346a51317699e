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
