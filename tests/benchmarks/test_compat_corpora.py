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
import lzma
import math
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolmend._schema import Sample
from toolmend.benchmarks.bfcl import BFCLBenchmark
from toolmend.benchmarks.critictool._overall import aggregate_scores
from toolmend.benchmarks.critictool._records import load_critictool_file
from toolmend.benchmarks.critictool._scoring import score_sample
from toolmend.benchmarks.nestools import NesTools
from toolmend.benchmarks.nestools._metric import COUNT_KEYS
from toolmend.benchmarks.reflection_bench import ReflectionBench
from toolmend.benchmarks.reflection_bench._reward import RewardConfig, reflection_reward
from toolmend.benchmarks.reflection_bench._scoring import score_attempt

CORPORA = Path(__file__).resolve().parent.parent / "data" / "compat"


def read_corpus(benchmark: str, name: str = "corpus.jsonl.gz") -> Iterator[dict[str, Any]]:
    with gzip.open(CORPORA / benchmark / name, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def report(mismatches: list[str], total: int) -> str:
    shown = "\n".join(mismatches[:15])
    return f"{len(mismatches)} of {total} recorded verdicts not reproduced; first ones:\n{shown}"


@pytest.fixture(scope="module")
def bfcl_samples(data_dir: Path) -> dict[str, Sample]:
    return {s.id: s for s in BFCLBenchmark().load(data_dir / "bfcl")}


# corpus.jsonl.gz: prompting-mode replies (Python call lists) through BFCL's prompting decoder;
# corpus_fc.jsonl.gz: FC-mode replies as BFCL stores them, through its OpenAI FC handler's decoder
@pytest.mark.parametrize("corpus", ["corpus.jsonl.gz", "corpus_fc.jsonl.gz"])
def test_bfcl_reproduces_the_official_checker(bfcl_samples: dict[str, Sample], corpus: str) -> None:
    bench = BFCLBenchmark()
    rows = list(read_corpus("bfcl", corpus))
    mismatches = []
    for row in rows:
        score = bench.score(bfcl_samples[row["id"]], row["reply"], "compat")
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


def test_bfcl_fc_entry_with_extra_keys_is_read_as_bfcl_reads_it(bfcl_samples: dict[str, Sample]) -> None:
    """BFCL's FC decoder takes an entry's first key as the call and ignores the rest; compat used
    to reject such an entry (94 differences in the FC corpus before the fix)."""
    bench = BFCLBenchmark()
    sample = bfcl_samples["simple_python_0"]
    reply = json.dumps([{"calculate_triangle_area": '{"base": 10, "height": 5}', "note": "{}"}])
    assert bench.score(sample, reply, "compat").values["accuracy"] == 1.0
    assert bench.score(sample, reply, "improved").details["error_type"] == "ast_decoder:decoder_failed"
    # an irrelevance sample: the entry is a call, so the abstention fails
    irrelevant = bench.score(
        bfcl_samples["irrelevance_43"], json.dumps([{"f": "{}", "other": "{}"}]), "compat"
    )
    assert irrelevant.details["error_type"] == "irrelevance_error:decoder_success"


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


def pseudo_cosine(a: object, b: object) -> float:
    """The similarity both sides were given when the CriticTool corpus was recorded (the official
    all-mpnet-base-v2 cannot be loaded here): 1 for equal ``str()``, else a hash spread over
    [-0.2, 1); the official code and toolmend's scorer both clamp it at 0."""
    x, y = str(a), str(b)
    if x == y:
        return 1.0
    return zlib.crc32((x + "\0" + y).encode("utf-8")) % 1000 / 1000 * 1.2 - 0.2


# official per-sample metric -> toolmend's value key (external keys get the mode as prefix)
CRITICTOOL_INTERNAL = {
    "critic": "detect",
    "reflect": "category",
    "name": "tool",
    "args": "args",
    "goal": "thought",
    "parse_rate": "parse_rate",
}
CRITICTOOL_EXTERNAL = {k: k for k in ("retry", "break", "thought", "args", "parse_rate")} | {"name": "tool"}


def test_critictool_reproduces_the_official_evaluators(tmp_path: Path) -> None:
    with lzma.open(CORPORA / "critictool" / "corpus.json.xz", "rt", encoding="utf-8") as f:
        corpus = json.load(f)
    samples = {}
    for rel, records in corpus["files"].items():
        path = tmp_path / rel  # the loader reads part, CoT and variant from the official path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(records), encoding="utf-8")
        samples |= {(rel, s.id): s for s in load_critictool_file(path)}
    mismatches, scores = [], []
    for row in corpus["rows"]:
        sample = samples[row["file"], row["sample"]]
        meta = sample.metadata
        score = score_sample(sample, row["prediction"], mode="compat", similarity=pseudo_cosine)
        scores.append(score)
        values = score.values
        ours = {}
        for metric in row["official"]:
            if meta["part"] == "external":
                ours[metric] = values.get(f"{meta['external_mode']}_{CRITICTOOL_EXTERNAL[metric]}", "absent")
            else:
                value = values.get(CRITICTOOL_INTERNAL[metric], "absent")
                # the official code writes 0 where a metric does not apply to an error-free sample
                ours[metric] = 0 if value is None and not meta["error_type"] else value
        if ours != row["official"]:
            mismatches.append(
                f"{row['sample']} {row['kind']} {row['prediction']!r:.120}: official {row['official']}, ours {ours}"
            )
    assert not mismatches, report(mismatches, len(corpus["rows"]))

    # the official file-level means (each record of a file and mode scored once: with its gold, its
    # second recorded reply or its last) against aggregate_scores, which gives percent
    for agg in corpus["aggregates"]:
        means = aggregate_scores([scores[i] for i in agg["rows"]])
        for metric, official in agg["means"].items():
            key = (
                f"{agg['mode']}_{CRITICTOOL_EXTERNAL[metric]}" if agg["mode"] else CRITICTOOL_INTERNAL[metric]
            )
            where = f"{agg['file']} {agg['mode']} {agg['slot']} {metric}"
            assert math.isclose(means[key] / 100, official, rel_tol=1e-12, abs_tol=1e-12), where
    assert len(corpus["aggregates"]) == 45
    assert len(corpus["rows"]) > 8000 and len(corpus["files"]) == 10


def test_reflection_bench_reproduces_the_official_harness(data_dir: Path) -> None:
    bench = ReflectionBench()
    samples = {s.id: s for s in bench.load(data_dir / "tool-reflection-bench" / "test_qwen_sample.jsonl")}
    rows = list(read_corpus("reflection_bench"))
    released, no_gate = RewardConfig.released(), RewardConfig(match_released=True)
    mismatches = []
    for row in rows:
        gold = samples[row["id"]].metadata["ground_truth"]
        result = score_attempt(row["reply"], gold, "compat")
        # the released reward (orm.py), and the same code with its "calls differ -> 0" gate off
        ours = (result.partial, result.correct, reflection_reward(row["reply"], gold, released))
        ours += (reflection_reward(row["reply"], gold, no_gate),)
        official = (row["score"], row["correct"], row["reward"], row["reward_nogate"])
        if ours != official:
            mismatches.append(
                f"{row['id']} {row['kind']} {row['reply']!r:.120}: official {official}, ours {ours}"
            )
    assert not mismatches, report(mismatches, len(rows))

    # the harness's summary: Pass@N (a record passes when any attempt is correct) and the score
    # averaged over every attempt, here over each record's recorded replies
    attempts: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        attempts.setdefault(row["id"], []).append(row)
    agg = bench.aggregate([bench.score(samples[i], [r["reply"] for r in rs]) for i, rs in attempts.items()])
    assert agg["repair@n"] == sum(any(r["correct"] for r in rs) for rs in attempts.values()) / len(attempts)
    assert agg["partial"] == sum(r["score"] for r in rows) / len(rows)
    assert len(attempts) == 110 and len(rows) > 3000
    assert Counter(r["correct"] for r in rows)[True] > 300
