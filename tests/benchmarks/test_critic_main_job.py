"""The main job pinned: the seed-0 suite's bytes and the headline numbers of `toolmend bench critic`.

A change anywhere under the suite (the world, the injection operators, the environment's error
bodies built from checklist findings, the label checks) moves these on purpose or by accident;
either way this test makes it visible. When a change is intended, update the pins here and the
main job's table in README.md and docs/benchmarks.md, and say why the numbers moved.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from toolmend._bench import run_bench

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

SUITE_SHA256 = "385d8a7e114ee3e8b49488e0ae9173d5eda8db13d414bfb803611aefaad15570"
"""SHA-256 over the four files of the seed-0 world suite (relative path, then bytes, sorted by path)."""

HEADLINE = {
    "detect": 87.63,
    "category": 72.04,
    "tool": 68.72,
    "args": 51.03,
    "retry": 100.0,
    "break": 100.0,
    "skip_finish_tool": 72.60,
    "skip_finish_args": 44.95,
    "overall": 71.56,
}
SAMPLES = 491


def suite_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*_data_*_cot.json")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_main_job_suite_bytes_and_headline_numbers(tmp_path: Path) -> None:
    result = run_bench("critic", runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", progress=False)
    assert suite_digest(tmp_path / "cache" / "suites" / "critic" / "seed-0") == SUITE_SHA256
    summary = result.summary
    assert (summary.n_samples, summary.n_scored, summary.n_errors) == (SAMPLES, SAMPLES, 0)
    got = {key: round(summary.metrics[key], 2) for key in HEADLINE}
    assert got == pytest.approx(HEADLINE, abs=0.006)
