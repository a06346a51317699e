"""The world benchmark's oracles, fault schedules, metrics, audit and determinism."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend._bench import run_bench
from toolmend._errors import ConfigError, DatasetError
from toolmend._schema import Message, Sample, ToolCall
from toolmend.benchmarks import BENCHMARKS, SampleScore, load_builtin_benchmarks
from toolmend.benchmarks.world import WorldBenchmark
from toolmend.benchmarks.world._audit import audit_tasks
from toolmend.benchmarks.world._metrics import aggregate_world, mean_ci, pass_at_k, pass_hat_k
from toolmend.cli._app import app
from toolmend.formats._tags import parse_tagged_calls
from toolmend.runs._scale import is_count
from toolmend.world import generate_tasks
from toolmend.world._episode import write_reply
from toolmend.world._schedule import TRANSIENT_KINDS, FaultSchedule

load_builtin_benchmarks("world")


@pytest.fixture(autouse=True)
def _private_cache(private_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")


@pytest.fixture(scope="module")
def bench() -> WorldBenchmark:
    made = BENCHMARKS.get("world")()
    assert isinstance(made, WorldBenchmark)
    return made


def _is_error(content: str) -> bool:
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and "error" in data


class GoldAgent:
    """Follows the gold replies; ``policy`` says what it does when a call fails:
    ``retry`` re-sends the failed calls once, ``give_up`` answers that it could not finish."""

    def __init__(self, gold: list[str], policy: str) -> None:
        self.gold = gold
        self.policy = policy
        self.next = 0
        self.retried = False

    async def __call__(self, messages: list[Message], *, epoch: int | None = None) -> str:
        last = max(i for i, m in enumerate(messages) if m.role != "tool")
        failed: list[ToolCall] = []
        if messages[last].role == "assistant":
            answers = {m.tool_call_id: m.content for m in messages[last + 1 :]}
            failed = [c for c in messages[last].tool_calls if _is_error(answers.get(c.id, ""))]
        if failed and self.policy == "give_up":
            return "I could not finish this: a tool call failed with an error."
        if failed and self.policy == "retry" and not self.retried:
            self.retried = True
            return write_reply([c.model_copy(update={"id": None}) for c in failed])
        self.retried = False
        reply = self.gold[min(self.next, len(self.gold) - 1)]
        self.next += 1
        return reply


def _solve(bench: WorldBenchmark, samples: list[Sample], policy: str) -> list[SampleScore]:
    async def run() -> list[SampleScore]:
        scores = []
        for sample in samples:
            gold = bench.gold(sample)
            assert isinstance(gold, list)
            replies = await bench.solve(sample, GoldAgent(gold, policy))
            scores.append(bench.score(sample, replies))
        return scores

    return asyncio.run(run())


def test_scripted_gold_scores_success_one_on_every_task_without_faults(bench: WorldBenchmark) -> None:
    samples = bench.load(faults="none")
    assert len(samples) == len(generate_tasks(0))
    scores = [bench.score(s, bench.gold(s)) for s in samples]
    metrics = bench.aggregate(scores)
    assert metrics["success"] == metrics["all_or_nothing"] == metrics["progress"] == 1.0
    assert metrics["harm"] == 0.0
    assert "faults_injected" not in metrics


def test_retry_once_agent_recovers_every_transient_fault(bench: WorldBenchmark) -> None:
    samples = bench.load(faults="heavy")
    scores = _solve(bench, samples, "retry")
    transient = [f for s in scores for f in s.details["faults"] if f["kind"] in TRANSIENT_KINDS]
    assert len(transient) > 100
    assert all(f["recovered"] and f["outcome"] == "recovered" and f["detected"] for f in transient)
    # Tasks whose only faults were transient end exactly as without faults.
    only_transient = [
        s
        for s in scores
        if s.details["faults"] and all(f["kind"] in TRANSIENT_KINDS for f in s.details["faults"])
    ]
    assert only_transient and all(s.values["success"] == 1.0 for s in only_transient)
    assert all(s.details["recovered"] for s in only_transient)
    assert all("recovered" not in s.details for s in scores if not s.details["faults"])
    metrics = bench.aggregate(scores)
    for kind in TRANSIENT_KINDS:
        assert metrics[f"fault/{kind}/recovered"] == 1.0
    # A permission that stays denied is retried once and never recovered.
    assert metrics["fault/permission_denied/retried"] == 1.0
    assert metrics["fault/permission_denied/recovered"] == 0.0


def test_give_up_agent_scores_what_the_schedule_predicts(bench: WorldBenchmark) -> None:
    samples = bench.load(faults="light")
    scores = _solve(bench, samples, "give_up")
    predicted_fail = {s.id for s in samples if s.metadata["faults"]}
    assert 0 < len(predicted_fail) < len(samples)
    for sample, score in zip(samples, scores, strict=True):
        assert score.values["success"] == float(sample.id not in predicted_fail), sample.id
        faults = score.details["faults"]
        if sample.id in predicted_fail:
            # The first scheduled fault fires (the agent follows the gold up to it), and it is
            # reported to the user; nothing is retried or recovered.
            assert faults and all(
                f["outcome"] == "told_user" and f["detected"] and not f["retried"] for f in faults
            )
            assert score.values["recovery"] == 0.0
        else:
            assert not faults and score.values["recovery"] is None
    metrics = bench.aggregate(scores)
    assert metrics["success"] == pytest.approx(1 - len(predicted_fail) / len(samples))
    assert all(
        metrics[f"fault/{k}/told_user"] == 1.0 for k in TRANSIENT_KINDS if f"fault/{k}/injected" in metrics
    )


def test_schedules_attach_faults_to_gold_steps_and_are_seeded() -> None:
    tasks = generate_tasks(0)
    heavy = FaultSchedule.named("heavy", seed=0)
    again = FaultSchedule.named("heavy", seed=0)
    other = FaultSchedule.named("heavy", seed=1)
    drawn = [heavy.for_task(t) for t in tasks]
    assert drawn == [again.for_task(t) for t in tasks]
    assert drawn != [other.for_task(t) for t in tasks]
    for task, faults in zip(tasks, drawn, strict=True):
        for fault in faults:
            assert task.calls[fault.step].name == fault.tool
            assert fault.call == sum(c.name == fault.tool for c in task.calls[: fault.step + 1])
    kinds = {f.kind for faults in drawn for f in faults}
    assert {"wrong_shape", "removed_tool", "permission_denied"} <= kinds
    light = [FaultSchedule.named("light").for_task(t) for t in tasks]
    assert {f.kind for faults in light for f in faults} <= TRANSIENT_KINDS
    assert 0.15 < sum(bool(f) for f in light) / len(tasks) < 0.45


def test_schedule_file_gives_explicit_faults_and_bad_files_one_clear_error(tmp_path: Path) -> None:
    task = generate_tasks(0)[0]
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"tasks": {task.id: [{"step": 1, "kind": "rate_limit"}]}}))
    schedule = FaultSchedule.named(str(path))
    assert [(f.step, f.kind, f.tool) for f in schedule.for_task(task)] == [
        (1, "rate_limit", task.calls[1].name)
    ]
    assert schedule.name.startswith("faults.json@")
    path.write_text(json.dumps({"tasks": {task.id: [{"step": 0, "kind": "meteor"}]}}))
    with pytest.raises(ConfigError, match=r"faults.json: invalid fault schedule: .*kind"):
        FaultSchedule.named(str(path))
    with pytest.raises(ConfigError, match="none, light, heavy or a JSON file"):
        FaultSchedule.named("medium")


def test_pass_hat_k_and_pass_at_k_follow_the_tau_bench_definitions() -> None:
    # pass^k = C(c, k) / C(n, k): 3 of 4 trials succeed -> any 2 drawn all succeed with 3/6.
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 0, 3) == 0.0
    scores = [
        SampleScore(id=f"t{t}@{i}", values={"success": float(ok)}, details={"task": f"t{t}"})
        for t, outcomes in enumerate([[1, 1], [1, 0], [0, 0]])
        for i, ok in enumerate(outcomes)
    ]
    metrics = aggregate_world(scores)
    assert metrics["trials"] == 2 and metrics["tasks"] == 3
    assert metrics["pass^1"] == pytest.approx(0.5)
    assert metrics["pass^2"] == pytest.approx(1 / 3)
    assert metrics["pass@2"] == pytest.approx(2 / 3)
    mean, low, high = mean_ci([1.0, 0.0, 0.0])
    # Student t with 2 degrees of freedom: 4.303 * sd / sqrt(3), clipped to [0, 1].
    assert mean == pytest.approx(1 / 3)
    assert high == 1.0 and low == 0.0
    assert mean_ci([0.5, 0.5])[1:] == (0.5, 0.5)
    assert math.isclose(
        metrics["pass^2_ci_high"], min(1.0, 1 / 3 + 4.303 * math.sqrt(1 / 3) / math.sqrt(3)), rel_tol=1e-3
    )


def test_trials_expand_samples_and_use_separate_epochs(bench: WorldBenchmark) -> None:
    tasks = generate_tasks(0)[:2]
    samples = bench.load_tasks(tasks, trials=3)
    assert [s.id for s in samples][:3] == [f"{tasks[0].id}@{i}" for i in range(3)]
    epochs: list[int | None] = []

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        epochs.append(epoch)
        return "I am done."

    asyncio.run(bench.solve(samples[2], generate))
    assert epochs == [2000]
    with pytest.raises(ConfigError, match="trials must be at least 1"):
        bench.load_tasks(tasks, trials=0)


def test_harm_progress_and_model_mistakes_are_graded(bench: WorldBenchmark) -> None:
    sample = next(s for s in bench.load(faults="none") if s.metadata["template"] == "trip_flight_and_hotel")
    gold = bench.gold(sample)
    assert isinstance(gold, list)
    # Leave out the last gold call (the e-mail), add an unasked to-do and a call with a typo.
    calls = [c for reply in gold[:-1] for c in parse_tagged_calls(reply).calls]
    assert calls[-1].name == "mail_send"
    replies = [
        write_reply(calls[:-1]),
        write_reply([ToolCall(name="todo_create", arguments={"title": "unasked"})]),
        write_reply([ToolCall(name="mail_sendd", arguments={})]),
        "<tool_call>{not json</tool_call>",
        "All booked.",
    ]
    score = bench.score(sample, replies)
    assert score.values["success"] == 0.0 and score.values["all_or_nothing"] == 0.0
    assert 0.0 < score.values["progress"] < 1.0  # type: ignore[operator]
    assert score.values["harm"] == 1.0 and any(
        p.startswith("todos/") for p in score.details["harmful_changes"]
    )
    codes = {i["code"]: i["fixed"] for i in score.details["invalid_calls"]}
    assert codes == {"wrong_tool_name": False, "invalid_format": False}
    metrics = bench.aggregate([score])
    assert metrics["invalid/wrong_tool_name/calls"] == 1.0 and metrics["invalid/wrong_tool_name/fixed"] == 0.0


def test_native_history_pairs_every_tool_call_id_with_a_tool_message(bench: WorldBenchmark) -> None:
    sample = next(s for s in bench.load(faults="none") if s.metadata["template"] == "weather_two_cities")
    seen: list[list[Message]] = []

    async def generate(messages: list[Message], *, epoch: int | None = None) -> str:
        seen.append(messages)
        gold = bench.gold(sample)
        return gold[len(seen) - 1]

    asyncio.run(bench.solve(sample, generate))
    last = seen[-1]
    calls = [c for m in last if m.role == "assistant" for c in m.tool_calls]
    answers = [m.tool_call_id for m in last if m.role == "tool"]
    assert len(calls) == 2 and [c.id for c in calls] == answers
    assert all(m.name for m in last if m.role == "tool")


def test_audit_finds_every_task_passable_and_names_hidden_state_dependencies() -> None:
    tasks = [
        t
        for t in generate_tasks(0)
        if t.template in ("trip_flight_and_hotel", "shop_buy_product", "todo_add")
    ]
    report = audit_tasks(tasks)
    assert report.orders_checked > 0 and report.ok
    # Booking the hotel before the flight numbers the bookings differently; grading keys created
    # records by content, so that order is an equally valid gold trajectory.
    buy = next(t for t in tasks if t.template == "shop_buy_product")
    assert buy.after == {2: [1]} and buy.levels == [0, 1, 2]
    # Without the recorded dependency through the state, checking out before adding to the cart
    # is allowed by the task and cannot work: the audit reports it.
    hidden = audit_tasks([buy.model_copy(update={"after": {}})])
    assert {i.check for i in hidden.issues} == {"order_dependent"}
    assert "empty_cart" in hidden.issues[0].message


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_audit_is_clean_for_every_task_of_a_seed(seed: int) -> None:
    report = audit_tasks(generate_tasks(seed))
    assert report.tasks == 214 and report.orders_checked > 200
    assert report.ok, report.issues[:3]


def test_task_dependencies_through_the_state_survive_the_tasks_file(tmp_path: Path) -> None:
    from toolmend.benchmarks.world import read_tasks
    from toolmend.benchmarks.world._benchmark import build_tasks_file

    path = build_tasks_file(0, tmp_path)
    assert read_tasks(path) == generate_tasks(0)
    lines = path.read_text().splitlines()
    row = json.loads(lines[0])
    path.write_text("\n".join([*lines[1:3], json.dumps({**row, "after": {"0": [0]}})]) + "\n")
    with pytest.raises(DatasetError, match=r":3.*each must name an earlier call"):
        read_tasks(path)


def test_same_seed_same_samples_jsonl_bytes_except_timings(tmp_path: Path) -> None:
    def run(where: str) -> list[dict[str, Any]]:
        result = run_bench(
            "world", "scripted", limit=40, runs_dir=tmp_path / where, cache=False,
            cache_dir=tmp_path / "cache", progress=False, load_options={"faults": "heavy"},
        )  # fmt: skip
        rows = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
        for row in rows:
            row.pop("latency_s")
        return sorted(rows, key=lambda r: r["id"])

    first, second = run("a"), run("b")
    assert first == second
    assert any(row["details"]["faults"] for row in first)


def test_cli_options_and_bad_input_exit_2_with_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["bench", "nestools", "--model", "scripted", "--faults", "light", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "faults" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["bench", "bfcl", "--audit"])
    assert result.exit_code == 2 and "bfcl has no task audit" in result.output
    result = runner.invoke(
        app, ["bench", "world", "--model", "scripted", "--faults", "medium", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "none, light, heavy or a JSON file" in result.output
    assert "Traceback" not in result.output
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": "x"}\n')
    result = runner.invoke(app, ["bench", "world", "--audit", "--data", str(bad)])
    assert result.exit_code == 2 and "tasks.jsonl:1" in result.output
    with pytest.raises(DatasetError, match="no world tasks"):
        bad.write_text("\n")
        WorldBenchmark().load(bad)


def test_cli_runs_world_with_faults_and_trials_and_audits(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["bench", "world", "--model", "scripted", "--faults", "light", "--trials", "2", "--limit", "12",
         "--runs-dir", str(tmp_path), "--no-cache", "--json", "--no-report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["metrics"]["trials"] == 2 and "pass^2" in payload["metrics"]
    manifest = json.loads((Path(payload["run_dir"]) / "manifest.json").read_text())
    assert manifest["config"]["bench"]["load_options"] == {"faults": "light", "trials": 2}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(t.model_dump_json() for t in generate_tasks(0) if t.template == "todo_add"))
    result = runner.invoke(app, ["bench", "world", "--audit", "--data", str(tasks)])
    assert result.exit_code == 0, result.output
    assert "5 tasks" in result.output and "0 task(s) with problems" in result.output


class _CountTurns:
    """A strategy that only watches: one event per request the episode makes."""

    name = "count-turns"

    def wrap(self, generate: Any, state: Any) -> Any:
        async def counted(messages: list[Message], *, epoch: int | None = None) -> str:
            state.events.append({"strategy": self.name, "messages": len(messages)})
            return str(await generate(messages, epoch=epoch))

        return counted


def test_strategies_wrap_every_turn_of_the_episode(tmp_path: Path) -> None:
    result = run_bench(
        "world", "scripted", limit=5, runs_dir=tmp_path, cache=False, cache_dir=tmp_path / "cache",
        progress=False, strategy=[_CountTurns()],
    )  # fmt: skip
    assert result.summary.metrics["success"] == 1.0
    rows = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    for row in rows:
        assert len(row["events"]) == row["requests"] == row["details"]["turns"] > 1
        sizes = [e["messages"] for e in row["events"]]
        assert sizes == sorted(sizes) and sizes[0] == 2  # the history grows turn by turn


def test_score_replays_a_runs_saved_replies_to_the_same_metrics(tmp_path: Path) -> None:
    result = run_bench(
        "world", "scripted", limit=20, runs_dir=tmp_path, cache=False, cache_dir=tmp_path / "cache",
        progress=False, load_options={"faults": "heavy"},
    )  # fmt: skip
    tasks = tmp_path / "cache" / "suites" / "world" / "seed-0" / "tasks.jsonl"
    assert tasks.is_file()
    preds = tmp_path / "preds.jsonl"
    preds.write_text((result.run_dir / "samples.jsonl").read_text())
    scored = CliRunner().invoke(
        app, ["score", "world", "-p", str(preds), "--data", str(tasks), "-o", "faults=heavy", "--json"]
    )
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["metrics"] == pytest.approx(result.summary.metrics)


def test_declared_counts_show_as_whole_numbers_in_table_and_reports(tmp_path: Path) -> None:
    assert WorldBenchmark.count_keys and all(
        is_count(name, "world")
        for name in ("tasks", "fault/timeout/injected", "invalid/missing_required/calls")
    )
    assert not is_count("fault/timeout/recovered", "world") and not is_count("tasks", "bfcl")
    result = CliRunner().invoke(
        app,
        ["bench", "world", "--model", "scripted", "--faults", "heavy", "--trials", "2", "--limit", "6",
         "--runs-dir", str(tmp_path), "--no-cache"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"│ (\S+)\s+│\s+(\S+) │", result.output))
    run_dir = next(tmp_path.glob("*-world-scripted"))
    md = dict(re.findall(r"^\| (\S+) \| (\S+) \|$", (run_dir / "report.md").read_text(), re.MULTILINE))
    html = (run_dir / "report.html").read_text()
    counts = [k for k in rows if k in ("tasks", "trials", "faults_injected") or k.endswith("/injected")]
    assert len(counts) > 3
    for name in counts:
        assert re.fullmatch(r"\d+", rows[name]) and md[name] == rows[name], (name, rows[name], md.get(name))
        assert f'{name}</td><td class="num">{rows[name]}<' in html
    rates = [k for k in rows if k.endswith("/abandoned")]  # rates stay percentages
    assert rates and all(re.fullmatch(r"\d+\.\d", rows[k]) for k in [*rates, "success"])


def test_domain_tools_offer_the_task_domains_plus_distractors_and_gold_still_succeeds(
    bench: WorldBenchmark,
) -> None:
    from toolmend.world import WORLD_TOOLS, domain_of

    samples = bench.load(tools="domain", distractors="2")
    first = samples[0]
    task = first.metadata["task"]
    names = [t.name for t in first.tools]
    outside = [n for n in names if domain_of(n) not in task["domains"]]
    assert len(outside) == 2 and len(names) < len(WORLD_TOOLS.tools)
    assert {domain_of(n) for n in names} >= set(task["domains"])
    # The prompt lists exactly the offered tools, and the same task offers the same tools again.
    listed = [
        json.loads(line)["name"] for line in first.messages[0].content.splitlines() if line.startswith("{")
    ]
    assert listed == names
    assert [t.name for t in bench.load(tools="domain", distractors=2)[0].tools] == names
    scores = _solve(bench, samples[:20], "retry")
    assert all(s.values["success"] == 1.0 for s in scores)
    with pytest.raises(ConfigError, match="tools must be all or domain"):
        bench.load(tools="some")
    with pytest.raises(ConfigError, match="distractors"):
        bench.load(tools="domain", distractors=-1)


def test_per_template_keeps_the_first_episodes_of_every_template_in_order(bench: WorldBenchmark) -> None:
    every = bench.load()
    templates = list(dict.fromkeys(s.metadata["template"] for s in every))
    firsts = bench.load(per_template=1)
    assert [s.metadata["template"] for s in firsts] == templates
    assert [s.id for s in firsts] == [
        next(s.id for s in every if s.metadata["template"] == t) for t in templates
    ]
    twos = bench.load(per_template="2", trials=2)
    assert len(twos) == 2 * 2 * len(templates)
    # The same episode with the same faults as in the whole set.
    faults = {s.id: s.metadata["faults"] for s in bench.load(faults="light")}
    assert all(s.metadata["faults"] == faults[s.id] for s in bench.load(faults="light", per_template=1))
    scores = _solve(bench, firsts, "retry")
    assert all(s.values["success"] == 1.0 for s in scores)
    for bad, message in ((0, "per_template must be at least 1, got 0"), ("x", "must be a whole number")):
        with pytest.raises(ConfigError, match=message):
            bench.load(per_template=bad)
        with pytest.raises(ConfigError, match=message):
            bench.check_load_options({"per_template": bad})


def _llama_cpp_like(refuse_all: bool) -> Any:
    """A handler acting as llama-cpp-python's server: a message whose content is not a string
    (or, with ``refuse_all``, every request) is a 500 with pydantic's complaint; otherwise the
    model calls the first offered tool, then answers in text once a tool has answered."""
    from fake_openai_server import Reply

    def handler(body: dict[str, Any]) -> Any:
        bad = [i for i, m in enumerate(body["messages"]) if not isinstance(m.get("content"), str)]
        if bad or refuse_all:
            where = bad[0] if bad else 0
            message = f"1 validation error for ChatCompletionRequest messages.{where}.content Input should be a valid string"
            payload = {
                "error": {"message": message, "type": "internal_server_error", "param": None, "code": None}
            }
            return Reply(status=500, body=json.dumps(payload).encode())
        if any(m["role"] == "tool" for m in body["messages"]):
            return Reply(text="I have done what I could.")
        return Reply(text=None, tool_calls=[{"name": body["tools"][0]["function"]["name"], "arguments": {}}],
                     finish_reason="tool_calls")  # fmt: skip

    return handler


def test_native_episodes_send_no_null_content_and_a_refused_request_is_an_infrastructure_error(
    tmp_path: Path,
) -> None:
    # Issue 35: an assistant turn with content null made llama-cpp-python answer 500 on every
    # attempt; toolmend scored it as the model's failure and reported 0 % infrastructure errors.
    from fake_openai_server import FakeOpenAIServer

    common: dict[str, Any] = {"limit": 2, "cache": False, "cache_dir": tmp_path / "cache", "progress": False,
                              "tool_mode": "native", "max_retries": 1}  # fmt: skip
    server = FakeOpenAIServer(_llama_cpp_like(refuse_all=False)).start()
    try:
        result = run_bench("world", "openai/m", base_url=server.base_url, runs_dir=tmp_path / "a", **common)
    finally:
        server.stop()
    assert result.summary.n_errors == 0
    assistant = [
        m for b in server.bodies for m in b["messages"] if m["role"] == "assistant" and m.get("tool_calls")
    ]
    assert assistant and all(m["content"] == "" for m in assistant)
    assert not [r for r in _rows(result.run_dir) if r.get("details", {}).get("outcome") == "model_failure"]

    server = FakeOpenAIServer(_llama_cpp_like(refuse_all=True)).start()
    try:
        result = run_bench("world", "openai/m", base_url=server.base_url, runs_dir=tmp_path / "b", **common)
    finally:
        server.stop()
    assert result.summary.n_errors == 2 and result.summary.infra_error_rate == 1.0
    assert server.requests == 2  # refused requests are not sent again
    for row in _rows(result.run_dir):
        assert (
            "HTTP 500" in row["error"]["message"]
            and "Input should be a valid string" in row["error"]["message"]
        )


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]
