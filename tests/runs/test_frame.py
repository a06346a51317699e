"""``to_dataframe()``: every detail, finding code and decision as columns."""

from __future__ import annotations

from pathlib import Path

from toolmend.runs import InfraError, Manifest, RunDir, SampleRecord, load_run
from toolmend.schema import Finding, ToolCall


def test_dataframe_has_details_codes_and_decisions(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, Manifest(benchmark="critictool", model="m"))
    with run.writer() as w:
        w.append(
            SampleRecord(
                id="a",
                calls=[ToolCall(name="get_weather", arguments={})],
                findings=[
                    Finding(code="missing_required", message="x", call=0),
                    Finding(code="invalid_type", message="y", call=0),
                    Finding(code="missing_required", message="z", call=0),
                ],
                scores={"detect": 1.0, "tool": 0.0},
                details={
                    "error_type": "tool_select_error",
                    "part": "internal",
                    "ok": "clash",
                    "tags": [1, 2],
                },
                events=[
                    {"code": "missing_required", "action": "reask", "attempt": 1},
                    {"code": "missing_required", "action": "finish", "attempt": 2},
                ],
            )
        )
        w.append(SampleRecord(id="b", error=InfraError(message="HTTP 503", status=503)))
    df = load_run(run.path).to_dataframe()
    a, b = df.to_dict("records")
    assert a["error_type"] == "tool_select_error" and a["part"] == "internal" and a["tags"] == [1, 2]
    assert a["detail_ok"] == "clash" and a["ok"] is True  # a detail never overwrites a column
    assert a["finding_codes"] == ["invalid_type", "missing_required"] and a["calls"] == ["get_weather"]
    assert a["actions"] == ["reask", "finish"] and a["decisions"][0]["attempt"] == 1
    assert a["score_detect"] == 1.0 and a["score_tool"] == 0.0
    assert b["ok"] is False and b["error_status"] == 503 and b["decisions"] == [] and b["finding_codes"] == []
    # Slicing in pandas by a detail works as users expect.
    assert df[df["error_type"] == "tool_select_error"]["id"].tolist() == ["a"]
