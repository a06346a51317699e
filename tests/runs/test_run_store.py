"""Run directories: manifest, records, torn lines, compaction, results, DataFrames, progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from toolmend.errors import ConfigError, DatasetError, ModelError
from toolmend.models import Completion, Usage
from toolmend.runs import (
    DatasetInfo,
    InfraError,
    Manifest,
    NoProgress,
    PlainProgress,
    RunDir,
    SampleRecord,
    dataset_fingerprint,
    load_run,
    make_progress,
    runs_dataframe,
)


def test_create_names_the_directory_and_writes_the_manifest(tmp_path: Path, data_dir: Path) -> None:
    data = data_dir / "nestools"
    m = Manifest(
        benchmark="nestools", model="openai/gpt-4o:mini", dataset=DatasetInfo.of(data), config={"k": 1}
    )
    a = RunDir.create(tmp_path, m)
    b = RunDir.create(tmp_path, m, name=a.path.name)
    assert a.path.name.endswith("-nestools-openai_gpt-4o_mini") and b.path.name == a.path.name + "-2"
    back = a.manifest()
    assert back.dataset is not None and back.dataset.sha256 == dataset_fingerprint(data)
    assert back.toolmend_version and back.python and back.config == {"k": 1}
    assert back.git_revision is None or len(back.git_revision) >= 40
    RunDir.open(a.path, dataset=data)
    changed = tmp_path / "changed.jsonl"
    changed.write_text("{}\n")
    with pytest.raises(ConfigError, match="changed since run"):
        RunDir.open(a.path, dataset=changed)
    with pytest.raises(ConfigError, match="not a run directory"):
        RunDir.open(tmp_path / "nope")


def test_torn_last_line_is_dropped_and_repaired_but_a_bad_middle_line_is_an_error(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with run.writer() as w:
        w.append(SampleRecord(id="a"))
        w.append(SampleRecord(id="b"))
    with run.samples_path.open("ab") as f:
        f.write(b'{"id": "c", "outp')
    assert [r.id for r in run.read_records()] == ["a", "b"]
    with run.writer() as w:  # opening for append cuts the torn tail first
        w.append(SampleRecord(id="c"))
    assert run.samples_path.read_text().count("\n") == 3
    assert [r.id for r in run.read_records()] == ["a", "b", "c"]
    run.samples_path.write_text('{"id": "a"}\n{"id": 5, "bogus": 1}\n{"id": "c"}\n')
    with pytest.raises(DatasetError) as info:
        run.read_records()
    assert info.value.line == 2 and "samples.jsonl" in str(info.value)


def test_last_record_wins_and_compaction_keeps_one_line_per_id(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with run.writer() as w:
        w.append(SampleRecord(id="a", error=InfraError(message="503", status=503, retryable=True)))
        w.append(SampleRecord(id="b", scores={"acc": 0.0}))
        w.append(SampleRecord(id="a", scores={"acc": 1.0}))
    recs = run.read_records()
    assert [(r.id, r.ok) for r in recs] == [("a", True), ("b", True)]
    assert run.compact() == 1 and run.compact() == 0
    lines = [json.loads(x) for x in run.samples_path.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["b", "a"] and lines[1]["scores"] == {"acc": 1.0}


def test_record_accounting() -> None:
    rec = SampleRecord(id="s")
    rec.add_completion(
        Completion(text="a", usage=Usage(input_tokens=5, output_tokens=2), retries=2, latency_s=0.5)
    )
    rec.add_completion(Completion(text="b", usage=Usage(input_tokens=7, output_tokens=3), cached=True))
    assert rec.outputs == ["a", "b"] and rec.usage == Usage(input_tokens=5, output_tokens=2)
    assert (rec.requests, rec.retries, rec.cache_hits, rec.latency_s) == (2, 2, 1, 0.5)
    err = InfraError.from_exception(ModelError("down", retryable=True, status=502))
    assert (err.type, err.status, err.retryable) == ("ModelError", 502, True)
    assert InfraError.from_exception(TimeoutError()).message == "TimeoutError"


def test_dataframes(tmp_path: Path) -> None:
    for model, score in (("m1", 1.0), ("m2", 0.0)):
        run = RunDir.create(tmp_path, Manifest(benchmark="b", model=model))
        with run.writer() as w:
            w.append(SampleRecord(id="x", scores={"acc": score}, usage=Usage(input_tokens=3)))
            w.append(SampleRecord(id="y", error=InfraError(message="timeout", retryable=True)))
    paths = sorted(tmp_path.iterdir())
    df = load_run(paths[0]).to_dataframe()
    assert list(df["id"]) == ["x", "y"] and list(df["ok"]) == [True, False]
    assert df.loc[0, "input_tokens"] == 3 and df.loc[1, "error"] == "timeout"
    both = runs_dataframe(paths)
    assert len(both) == 4
    assert both.groupby("model")["score_acc"].mean().to_dict() == {"m1": 1.0, "m2": 0.0}
    assert load_run(paths[0]).results is None


def test_progress_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    assert isinstance(make_progress(None), PlainProgress)
    assert isinstance(make_progress(False), NoProgress)
    custom = NoProgress()
    assert make_progress(custom) is custom
    out = io.StringIO()
    p = PlainProgress(out, every_s=3600, score_key="acc")
    p.start(total=4, done=1)
    p.update(SampleRecord(id="a", scores={"acc": 1.0}))
    p.update(SampleRecord(id="b", scores={"acc": 0.0}))
    p.update(SampleRecord(id="c", error=InfraError(message="x")))
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[toolmend] resuming: 1 samples already done"
    assert lines[-1].startswith("[toolmend] 4/4 samples (100%)") and "acc=50.0%" in lines[-1]
    assert "errors=1" in lines[-1]


def test_rich_progress_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolmend.runs import RichProgress

    p = RichProgress(score_key="acc")
    p.start(total=2, done=0)
    p.update(SampleRecord(id="a", scores={"acc": 1.0}))
    p.close()
    assert p.stats.done == 1 and p.stats.score == 1.0
