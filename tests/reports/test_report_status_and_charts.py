"""Honest status (partial, all failed), provenance without secrets, and the charts that appear
only when runs hold their data (per error type, recovery per code and fault kind, pass^k)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolmend.reports import build_report, load_views, render_html, render_markdown
from toolmend.reports._samples import browser_data
from toolmend.reports._tables import charts, provenance
from toolmend.runs import InfraError, Manifest, RunDir, SampleRecord


def _manifest(**kw: object) -> Manifest:
    base = {"benchmark": "bfcl", "model": "m", "config": {"bench": {"mode": "compat", "seed": 3}}}
    return Manifest.model_validate(base | kw)


def test_partial_run_shows_metrics_over_done_samples(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, _manifest(n_planned=400))
    with run.writer() as w:
        for i in range(140):
            w.append(
                SampleRecord(id=f"s{i}", scores={"accuracy": float(i % 2)}, details={"category": "simple"})
            )
    (view,) = load_views([run.path])
    assert view.status == "partial: 140 of 400" and view.partial_metrics
    md = render_markdown(build_report([view]))
    assert "| partial: 140 of 400 |" in md and "metrics are over the samples done so far" in md
    # BFCL's own aggregate over the 140 done: 70 right.
    assert "| overall_sample_weighted | 50.0 |" in md


def test_all_failed_run_says_so_and_gives_the_retry_command(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, _manifest(n_planned=2))
    with run.writer() as w:
        for i in range(2):
            w.append(
                SampleRecord(id=f"s{i}", error=InfraError(message="HTTP 503", status=503, retryable=True))
            )
    run.write_results({"metrics": {}, "n_samples": 2})
    (view,) = load_views([run.path])
    assert view.status == "failed: all 2 samples hit infrastructure errors"
    md = render_markdown(build_report([view]))
    assert "complete" not in md and "No metrics: no sample has been scored." in md
    assert f"toolmend bench bfcl --resume {run.path} --retry-errors" in md


def test_provenance_shows_settings_and_never_a_key(tmp_path: Path) -> None:
    manifest = _manifest(
        command=["toolmend", "bench", "bfcl", "--api-key", "sk-live-abcdefgh123", "--token=abc", "--seed", "3"],
        config={"bench": {"mode": "compat", "seed": 3, "base_url": "http://127.0.0.1:8000/v1", "api_key": "K1",
                          "limit": 50, "strategy": "reask+finish", "faults": {"timeout": 0.1, "auth_token": "T"}}},
    )  # fmt: skip
    run = RunDir.create(tmp_path, manifest)
    with run.writer() as w:
        w.append(SampleRecord(id="a", scores={"accuracy": 1.0}))
    rows = dict(provenance(load_views([run.path])[0]))
    assert rows["seed"] == "3" and rows["base url"] == "http://127.0.0.1:8000/v1" and rows["limit"] == "50"
    assert rows["strategy"] == "reask+finish" and rows["faults"] == "timeout=0.1"
    assert rows["command"] == "toolmend bench bfcl --api-key *** --token=*** --seed 3"
    assert rows["toolmend"] and rows["git revision"] and "python" in rows
    page = render_html(build_report(load_views([run.path])), plots=False)
    for secret in ("sk-live-abcdefgh123", "--token=abc", "api key", "auth_token", ">K1<"):
        assert secret not in page


def _critic_like(root: Path, model: str, recovered: list[bool]) -> Path:
    run = RunDir.create(root, Manifest(benchmark="critictool", model=model, n_planned=len(recovered)))
    with run.writer() as w:
        for i, ok in enumerate(recovered):
            w.append(
                SampleRecord(
                    id=f"s{i}",
                    scores={"tool": float(ok)},
                    details={
                        "fault_kind": "timeout" if i % 2 else "rate_limit",
                        "trials": [ok, ok, i % 3 == 0],
                    },
                    events=[
                        {
                            "code": "missing_required" if i < 2 else "invalid_type",
                            "action": "reask",
                            "attempt": 1,
                        }
                    ],
                )  # fmt: skip
            )
    run.write_results(
        {
            "metrics": {
                "detect": 80.0,
                "tool_select_error/detect": 50.0,
                "tool_select_error/tool": 25.0,
                "parameters_value_error/detect": 100.0,
            }
        }  # fmt: skip
    )
    return run.path


def test_charts_appear_from_details_and_events(tmp_path: Path) -> None:
    a = _critic_like(tmp_path, "a", [True, False, True, True])
    report = build_report(load_views([a]))
    by_title = {c.title: c for c in charts(report)}
    per_type = by_title["a: performance per error type"]
    assert per_type.labels == ["parameters_value_error", "tool_select_error"]
    assert per_type.series == {"detect": [100.0, 50.0], "tool": [None, 25.0]}  # percent, not counts
    code = by_title["recovery per finding code"]
    assert code.labels == ["invalid_type", "missing_required"] and code.series == {"a": [100.0, 50.0]}
    fault = by_title["recovery per fault kind"]
    assert fault.labels == ["rate_limit", "timeout"] and fault.series == {"a": [100.0, 50.0]}
    # trials [ok, ok, i%3==0]: pass^1 = mean share passed; pass^3 only where all three passed (s0).
    curve = by_title["pass^k"]
    assert curve.kind == "line" and curve.labels == ["1", "2", "3"]
    assert curve.series["a"][0] == 100 * (3 / 3 + 0 / 3 + 2 / 3 + 3 / 3) / 4
    assert curve.series["a"][2] == 100 * (1 + 0 + 0 + 1) / 4
    page = render_html(report)
    for title in ("recovery per finding code", "recovery per fault kind", "pass^k"):
        assert f"<h2>{title}</h2>" in page
    # Decisions reach the browser as generic dicts.
    data = browser_data(load_views([a]), with_dataset=False)
    assert data["samples"][0]["r"][0]["e"] == [{"code": "missing_required", "action": "reask", "attempt": 1}]


def test_runs_without_that_data_get_no_such_charts(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, _manifest())
    with run.writer() as w:
        w.append(SampleRecord(id="a", scores={"accuracy": 1.0}))
    assert charts(build_report(load_views([run.path]))) == []
    notes = browser_data(load_views([run.path]))["notes"]
    assert notes == ["prompts, tools and gold answers need a run written by toolmend bench"]


def test_provenance_renders_settings_stored_elsewhere_in_the_manifest(tmp_path: Path) -> None:
    manifest = _manifest(config={"bench": {"seed": 1}, "settings": {"base_url": "http://h/v1", "api_key": "K9"},
                                 "strategy": "reask"})  # fmt: skip
    run = RunDir.create(tmp_path, manifest)
    rows = dict(provenance(load_views([run.path])[0]))
    assert rows["seed"] == "1" and rows["settings.base url"] == "http://h/v1" and rows["strategy"] == "reask"
    assert "K9" not in " ".join(rows.values()) and not any("api" in k for k in rows)


def test_critictool_episodes_show_the_error_response_between_turns(tmp_path: Path) -> None:
    from toolmend._bench import run_bench
    from toolmend.benchmarks.critic._build import build_suite

    suite = build_suite("world", seed=1, out=tmp_path / "suite", limit=8)
    run = run_bench("critictool", "scripted", data=suite.root, runs_dir=tmp_path / "runs", progress=False,
                    cache=False)  # fmt: skip
    data = browser_data(load_views([run.run_dir]))
    assert data["notes"] == []
    episodes = [s for s in data["samples"] if "fb" in s]
    assert episodes and all(s["g"]["part"] == "external" for s in episodes)
    for s in episodes:
        # The feedback is the prompt's last message (the tool's error), re-sent after each repeat.
        assert s["fb"] == s["p"][-1] and "error" in data["pool"][s["fb"][1]]
        assert len(s["r"][0]["o"]) == len(s["gold"]) >= 2


def test_a_served_run_records_and_shows_its_connection_but_never_the_key(
    tmp_path: Path, data_dir: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolmend._bench import run_bench
    from toolmend.reports import write_report

    monkeypatch.setenv("H11_TEST_KEY", "sk-h11-secret-value-123")
    result = run_bench("bfcl", "openai/echo", base_url=openai_server.base_url, api_key_env="H11_TEST_KEY",
                       data=data_dir / "bfcl", categories=["simple_python"], limit=3, runs_dir=tmp_path / "runs",
                       max_connections=2, max_retries=1, progress=False, cache=False)  # fmt: skip
    manifest = (result.run_dir / "manifest.json").read_text()
    assert "sk-h11-secret" not in manifest
    rows = dict(provenance(load_views([result.run_dir])[0]))
    assert rows["connection.base url"] == openai_server.base_url
    assert rows["connection.max connections"] == "2" and rows["connection.max retries"] == "1"
    assert rows["samples planned"] == "3" and "seed" not in rows and rows["dataset sha256"]  # no seed set
    files = write_report([result.run_dir], out=tmp_path / "r")
    for f in (files.html, files.markdown):
        text = f.read_text()
        assert "sk-h11-secret" not in text and openai_server.base_url in text
