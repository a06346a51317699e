"""A rerun of the main job is served from the caches: the checklist critic's replies from the
response cache and the suite from its folder, each only while the code that made them is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmend import _bench
from toolmend._bench import BenchResult, _suite_data, arun_bench
from toolmend.benchmarks.critic import SuiteInfo, _suite, build_suite
from toolmend.benchmarks.critic._suite import CRITIC_SUITE
from toolmend.benchmarks.critictool import CriticToolBenchmark, _checklist
from toolmend.cli._bench import footer
from toolmend.runs import RunDir
from toolmend.runs._manifest import dataset_fingerprint


def _outputs(result: BenchResult) -> dict[str, list[str]]:
    return {r.id: r.outputs for r in RunDir(result.run_dir).iter_records()}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_suite("world", seed=2, out=tmp_path_factory.mktemp("suite"), limit=30).root


async def _run(suite: Path, tmp_path: Path) -> BenchResult:
    exact = CriticToolBenchmark(similarity=lambda a, b: float(a == b))
    return await arun_bench(
        exact,
        "checklist",
        data=suite,
        runs_dir=tmp_path / "runs",
        cache_dir=tmp_path / "cache",
        progress=False,
    )


async def test_rerun_is_served_from_the_cache_with_identical_metrics(suite: Path, tmp_path: Path) -> None:
    first = await _run(suite, tmp_path)
    second = await _run(suite, tmp_path)
    one, two = first.summary, second.summary
    assert one.requests > 0 and one.cache_hits == 0
    assert two.requests == one.requests and two.cache_hits == two.requests
    assert two.metrics == one.metrics
    assert _outputs(second) == _outputs(first)
    assert first.run_dir != second.run_dir
    assert f"{one.requests} replies computed here (no HTTP), 0 from the cache" in footer(first, 1.0)
    assert f"0 replies computed here (no HTTP), {two.requests} from the cache" in footer(second, 1.0)


async def test_changed_critic_code_misses_the_cache(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await _run(suite, tmp_path)
    monkeypatch.setattr(_checklist, "code_fingerprint", lambda: "edited-checklist")
    again = await _run(suite, tmp_path)
    assert first.summary.cache_hits == 0 and again.summary.cache_hits == 0
    assert again.summary.requests == first.summary.requests
    assert again.summary.metrics == first.summary.metrics


def test_fingerprint_covers_the_critic_and_the_checker() -> None:
    package = Path(_checklist.__file__).resolve().parents[2]
    assert all((package / entry).exists() for entry in _checklist._CODE)
    assert "check" in _checklist._CODE and "benchmarks/critictool/_checklist.py" in _checklist._CODE
    assert _checklist.code_fingerprint() == _checklist.code_fingerprint()
    identity = _checklist.ChecklistCritic().cache_identity()
    assert identity["code"] == _checklist.code_fingerprint()


def test_suite_is_built_once_while_the_code_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    real = _suite.build_suite

    def small(source: str, *, seed: int, out: Path) -> SuiteInfo:
        built.append(seed)
        return real(source, seed=seed, out=out, limit=12)

    monkeypatch.setattr(_suite, "build_suite", small)
    folder = tmp_path / "suites" / "critic" / "seed-3"
    first = _suite_data(CRITIC_SUITE, "critic", 3, folder)
    digest = dataset_fingerprint(first)
    again = _suite_data(CRITIC_SUITE, "critic", 3, folder)
    assert built == [3] and again == first and dataset_fingerprint(again) == digest
    # The stamp lies beside the data, so the data's fingerprint (checked by --resume) is its own.
    assert [p.name for p in folder.parent.iterdir() if p.is_file()] == ["seed-3.built.json"]

    monkeypatch.setattr(_bench, "source_fingerprint", lambda: "edited-toolmend")
    _suite_data(CRITIC_SUITE, "critic", 3, folder)
    assert built == [3, 3]
    (folder.parent / "seed-3.built.json").write_text("{not json", encoding="utf-8")
    _suite_data(CRITIC_SUITE, "critic", 3, folder)
    assert built == [3, 3, 3]
    assert dataset_fingerprint(first) == digest
