"""The suite-quality report: counts, drops, duplicates, contamination, critic scores per variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmend._errors import ConfigError
from toolmend.benchmarks.critic import build_suite
from toolmend.benchmarks.critic._quality import reference_queries, suite_quality


@pytest.fixture(scope="module")
def references(data_dir: Path) -> dict[str, list[str]]:
    return reference_queries(data_dir)


def test_report_counts_and_drops_for_both_variants(tmp_path: Path, references: dict[str, list[str]]) -> None:
    infos = {v: build_suite("world", seed=2, out=tmp_path, limit=30, variant=v) for v in ("base", "evolved")}
    critic = {"base": {"overall": 70.0}, "evolved": {"overall": 66.5}}
    report = suite_quality(tmp_path, critic=critic, references=references)
    assert set(report.variants) == {"base", "evolved"}
    for variant, info in infos.items():
        quality = report.variants[variant]
        assert quality.samples == info.total
        assert sum(n for per in quality.counts.values() for n in per.values()) == info.total
        assert quality.planned == info.planned and quality.dropped == info.dropped
        assert quality.finish_share == pytest.approx(info.finish_share, abs=1e-4)
        # The world's tasks are toolmend's own: no overlap with the public test sets.
        assert {name: o.ngram for name, o in quality.contamination.items()} == {
            "bfcl": 0, "nestools": 0, "tool-reflection-bench": 0,
        }  # fmt: skip
    assert report.variants["evolved"].evolution
    assert report.critic_drop() == 3.5
    text = report.markdown()
    assert "falls by 3.50 points" in text and "near-duplicate pairs" in text


def test_contamination_and_duplicates_are_found(
    tmp_path: Path, data_dir: Path, references: dict[str, list[str]]
) -> None:
    build_suite("nestools", seed=0, out=tmp_path, limit=15, data=data_dir / "nestools")
    quality = suite_quality(tmp_path, references=references).variants["base"]
    overlap = quality.contamination["nestools"]
    assert overlap.exact == overlap.ngram == quality.tasks == 15 and "by construction" in overlap.note

    path = tmp_path / "internal_error" / "base_data_wo_cot.json"
    records = json.loads(path.read_text())
    tasks = sorted({r["query_prompt"][1]["content"] for r in records.values()}, key=len)
    long_task = tasks[-1]
    probe = {
        "reworded": [long_task.upper() + " !!"],  # the same request in other case and punctuation
        "embedded": ["Before anything else: " + " ".join(long_task.split()[:9]) + " and so on"],
    }
    found = suite_quality(tmp_path, references=probe).variants["base"].contamination
    assert (found["reworded"].exact, found["reworded"].ngram) == (1, 1)
    assert (found["embedded"].exact, found["embedded"].ngram) == (0, 1)

    # The same request under another trajectory is a duplicate task (one trajectory's samples are not).
    assert quality.duplicate_tasks == 0
    rid, record = next(iter(records.items()))
    copy = json.loads(json.dumps(record))
    copy["toolmend"]["trace"] = "another-trace"
    path.write_text(json.dumps({**records, rid + "-copy": copy}))
    assert suite_quality(tmp_path, references={}).variants["base"].duplicate_tasks == 1


def test_a_folder_without_a_suite_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no critique suite"):
        suite_quality(tmp_path, references={})
