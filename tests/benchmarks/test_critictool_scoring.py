"""CriticTool's per-sample metrics, hand-computed against the official definitions (notes §1.5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolmend._schema import Sample
from toolmend.benchmarks.critictool import CriticToolBenchmark, load_critictool
from toolmend.benchmarks.critictool._scoring import arg_score, finish_reference, score_sample
from toolmend.formats._critictool import parse_action
from toolmend.formats._tools import load_tools

FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


class FakeSim:
    """Deterministic similarity: 1 for equal strings, a table lookup, else ``default``; records calls."""

    def __init__(self, table: dict[tuple[str, str], float] | None = None, default: float = 0.4) -> None:
        self.table = table or {}
        self.default = default
        self.calls: list[tuple[str, str]] = []

    def __call__(self, a: str, b: str) -> float:
        self.calls.append((a, b))
        if a == b:
            return 1.0
        return self.table.get((a, b), self.default)


@pytest.fixture(scope="module")
def samples() -> dict[str, Sample]:
    loaded = load_critictool(FIXTURES, variants=["base", "evol"]) + load_critictool(FIXTURES, cot=True)
    return {s.id: s for s in loaded}


def _reply(name: str, args: Any, error: str | None = None, thought: str | None = None) -> str:
    body: dict[str, Any] = {}
    if error is not None:
        body["error"] = error
    if thought is not None:
        body["thought"] = thought
    return json.dumps(body | {"name": name, "args": args})


# -- gold replies score 100 everywhere ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["compat", "improved"])
def test_gold_replies_score_100_on_every_metric(samples: dict[str, Sample], mode: str) -> None:
    bench = CriticToolBenchmark(similarity=FakeSim(default=0.0))
    for cot in (False, True):
        group = [s for s in samples.values() if s.metadata["cot"] == cot]
        scores = [bench.score(s, bench.gold(s), mode=mode) for s in group]  # type: ignore[arg-type]
        for sc in scores:
            assert all(v in (None, 1.0) for v in sc.values.values()), (sc.id, sc.values)
        agg = bench.aggregate(scores)
        assert agg["overall"] == 100.0
        assert {k: v for k, v in agg.items() if v != 100.0} == {}


# -- arg_score: every branch and quirk --------------------------------------------------------------

TOOLS = load_tools(
    [
        {
            "name": "W.forecast",
            "required_parameters": [{"name": "city", "type": "STRING"}, {"name": "days", "type": "NUMBER"}],
            "optional_parameters": [
                {"name": "units", "type": "STRING"},
                {"name": "hours", "type": "FLOAT"},
                {"name": "extra", "type": "any"},
                {"name": "tags", "type": "array"},
            ],
        },
        {"name": "M.list", "optional_parameters": [{"name": "limit", "type": "NUMBER"}]},
    ],
    dialect="critictool",
)


def _args(
    pred_args: Any,
    gold_args: Any,
    sim: FakeSim | None = None,
    *,
    strict: bool = False,
    name: str = "W.forecast",
) -> float:
    pred = parse_action(json.dumps({"name": name, "args": pred_args}))
    fake = sim or FakeSim()
    return arg_score(TOOLS, pred, gold_args, lambda a, b: max(0.0, fake(str(a), str(b))), strict=strict)


def test_exact_match() -> None:
    assert _args({"city": "Oslo", "days": 3}, {"city": "Oslo", "days": 3}) == 1.0


def test_numeric_mismatch_gets_embedding_credit_on_strings() -> None:
    sim = FakeSim({("4", "3"): 0.9})
    assert _args({"city": "Oslo", "days": 4}, {"city": "Oslo", "days": 3}, sim) == pytest.approx(
        (1 + 0.9) / 2
    )
    assert sim.calls == [("4", "3")]


def test_missing_optional_key_scores_half_and_missing_required_zero() -> None:
    assert _args({"city": "Oslo"}, {"city": "Oslo", "units": "metric"}) == 0.75
    assert _args({"city": "Oslo"}, {"city": "Oslo", "days": 3}) == 0.5


def test_extra_keys_are_free_in_compat_and_fatal_in_strict() -> None:
    pred = {"city": "Oslo", "days": 3, "units": "metric", "bogus": 1}
    assert _args(pred, {"city": "Oslo", "days": 3}) == 1.0
    assert _args(pred, {"city": "Oslo", "days": 3}, strict=True) == 0.0
    assert _args({"city": "Oslo", "days": 3}, {"city": "Oslo", "days": 3}, strict=True) == 1.0


def test_empty_gold_args_checks_keys_against_the_spec() -> None:
    assert _args({}, {}, name="M.list") == 1.0
    assert _args({"limit": 3}, {}, name="M.list") == 1.0
    assert _args({"nope": 3}, {}, name="M.list") == 0.0
    assert _args({"limit": 3}, {}, name="M.list", strict=True) == 0.0


def test_type_mismatch_scores_zero_even_when_strings_agree() -> None:
    # days is NUMBER: "3" is not an int, and its type differs from the gold 3.
    assert _args({"city": "Oslo", "days": "3"}, {"city": "Oslo", "days": 3}) == 0.5


def test_same_type_strings_on_a_non_string_param_get_similarity_unless_cjk() -> None:
    sim = FakeSim({("three", "3 days"): 0.7})
    assert _args({"city": "Oslo", "days": "three"}, {"city": "Oslo", "days": "3 days"}, sim) == pytest.approx(
        0.85
    )
    assert _args({"city": "Oslo", "days": "三"}, {"city": "Oslo", "days": "3"}) == 0.5


def test_python_type_quirks() -> None:
    sim = FakeSim({("True", "1"): 0.2})
    # bool is an int in Python, so True passes the NUMBER check and is compared as "True" vs "1".
    assert _args({"city": "Oslo", "days": True}, {"city": "Oslo", "days": 1}, sim) == pytest.approx(0.6)
    # FLOAT wants a float: 2 (int) fails the check and its type differs from 1.5.
    assert _args({"city": "Oslo", "hours": 2}, {"city": "Oslo", "hours": 1.5}) == 0.5
    assert _args({"city": "Oslo", "hours": 1.5}, {"city": "Oslo", "hours": 1.5}) == 1.0
    # any accepts every type; lists compare by their Python str().
    sim2 = FakeSim({("['a', 'b']", "['a']"): 0.8})
    assert _args(
        {"city": "Oslo", "tags": ["a", "b"]}, {"city": "Oslo", "tags": ["a"]}, sim2
    ) == pytest.approx(0.9)
    assert _args({"city": "Oslo", "extra": 5}, {"city": "Oslo", "extra": "5"}) == 1.0


def test_unknown_tool_or_non_dict_args_score_zero() -> None:
    assert _args({"city": "Oslo"}, {"city": "Oslo"}, name="Nope.tool") == 0.0
    assert _args("city=Oslo", {"city": "Oslo"}) == 0.0


def test_negative_cosine_is_clamped_by_the_scorer(samples: dict[str, Sample]) -> None:
    sample = samples["base-internal-int_value_01"]
    reply = _reply("Finance.quote", {"symbol": "APPLE"}, error="parameters_value_error")
    assert score_sample(sample, reply, similarity=lambda a, b: -0.6).values["args"] == 0.0


# -- internal metrics and their denominators -----------------------------------------------------------


def test_error_free_sample_detect(samples: dict[str, Sample]) -> None:
    sample = samples["base-internal-int_free_01"]
    ok = score_sample(sample, _reply("Mail.send", {"address": "x"}, error=""), similarity=FakeSim())
    assert ok.values == {"parse_rate": 1.0, "detect": 1.0, "category": None, "tool": None, "args": None}
    flagged = score_sample(sample, _reply("Mail.send", {}, error="tool_select_error"), similarity=FakeSim())
    assert flagged.values["detect"] == 0.0
    # An unparsable reply is no detection of "no error": detect needs a parsed reply.
    broken = score_sample(sample, "all good, nothing to fix", similarity=FakeSim())
    assert broken.values["detect"] == 0.0 and broken.values["parse_rate"] == 0.0
    # A FinishAction with string args parses.
    assert score_sample(sample, _reply("FinishAction", "done"), similarity=FakeSim()).values["detect"] == 1.0


def test_error_injected_sample(samples: dict[str, Sample]) -> None:
    sample = samples["base-internal-int_select_01"]
    gold_args = {"city": "Lisbon", "days": 3}
    v = score_sample(
        sample, _reply("Weather.forecast", gold_args, error="something is off"), similarity=FakeSim()
    ).values
    assert (v["detect"], v["category"], v["tool"], v["args"]) == (1.0, 0.0, 1.0, 1.0)
    v = score_sample(
        sample, _reply("Weather.forecast", gold_args, error="tool select error"), similarity=FakeSim()
    ).values
    assert (v["detect"], v["category"]) == (1.0, 0.0)
    v = score_sample(
        sample, _reply("Weather.current", gold_args, error="tool_select_error"), similarity=FakeSim()
    ).values
    assert (v["detect"], v["category"], v["tool"], v["args"]) == (1.0, 1.0, 0.0, 0.0)
    v = score_sample(sample, _reply("Weather.forecast", gold_args), similarity=FakeSim()).values
    assert (v["detect"], v["category"], v["tool"], v["args"]) == (0.0, 0.0, 1.0, 1.0)
    v = score_sample(sample, "```json\nnot json\n```", similarity=FakeSim()).values
    assert v == {"parse_rate": 0.0, "detect": 0.0, "category": 0.0, "tool": 0.0, "args": 0.0}


def test_cot_internal_needs_a_thought_and_scores_it(samples: dict[str, Sample]) -> None:
    sample = samples["base-internal-intc_key_01"]
    gold_thought = sample.metadata["gold"][0]["thought"]
    sim = FakeSim({("Use symbol.", gold_thought): 0.6})
    v = score_sample(
        sample,
        _reply("Finance.quote", {"symbol": "MSFT"}, "parameters_key_error", "Use symbol."),
        similarity=sim,
    ).values
    assert v["thought"] == 0.6 and v["parse_rate"] == 1.0 and v["args"] == 1.0
    v = score_sample(
        sample, _reply("Finance.quote", {"symbol": "MSFT"}, "parameters_key_error"), similarity=sim
    ).values
    assert v["parse_rate"] == 0.0 and v["tool"] == 1.0


def test_internal_denominators() -> None:
    bench = CriticToolBenchmark(similarity=FakeSim())
    internal = load_critictool(FIXTURES, parts=["internal"])
    reply = _reply("Nothing.here", {}, error="")
    agg = bench.aggregate([bench.score(s, reply) for s in internal])
    # 8 samples, 3 error-free: detect over all 8, category/tool/args over the 5 error-injected.
    assert agg["detect"] == pytest.approx(100 * 3 / 8)
    assert agg["parse_rate"] == 100.0
    assert agg["category"] == agg["tool"] == agg["args"] == 0.0
    assert "overall" not in agg
    labelled = [bench.score(s, _reply("X", {}, error=s.metadata["error_type"] or "")) for s in internal]
    agg = bench.aggregate(labelled)
    assert agg["detect"] == 100.0 and agg["category"] == 100.0
    assert agg["parameters_value_error/category"] == 100.0 and agg["tool_select_error/tool"] == 0.0


# -- external metrics ------------------------------------------------------------------------------------


def test_skip_mode_next_action(samples: dict[str, Sample]) -> None:
    sample = samples["base-skip-ext_next_01"]
    failed, nxt = sample.metadata["gold"]
    sim = FakeSim(default=0.5)
    wrong_body = dict(nxt["args"], body="Berlin forecast unavailable.")
    v = score_sample(sample, [_reply(nxt["name"], wrong_body)], similarity=sim).values
    assert v == {
        "skip_retry": 0.0,
        "skip_break": 1.0,
        "skip_tool": 1.0,
        "skip_parse_rate": 1.0,
        "skip_args": pytest.approx(2.5 / 3),
    }
    v = score_sample(
        sample,
        [_reply(failed["name"], failed["args"]), _reply("Weather.current", {"city": "Berlin"})],
        similarity=sim,
    ).values
    assert (v["skip_retry"], v["skip_break"], v["skip_tool"], v["skip_args"]) == (1.0, 1.0, 0.0, 0.0)


def test_retry_needs_exactly_equal_args(samples: dict[str, Sample]) -> None:
    sample = samples["base-skip-ext_next_01"]
    # {"days": "3"} is not the failed call {"days": 3}: no retry, and an immediate break.
    v = score_sample(
        sample, [_reply("Weather.forecast", {"city": "Berlin", "days": "3"})], similarity=FakeSim()
    ).values
    assert (v["skip_retry"], v["skip_break"], v["skip_tool"]) == (0.0, 1.0, 0.0)


def test_unparsable_reply_is_no_break(samples: dict[str, Sample]) -> None:
    sample = samples["base-skip-ext_next_01"]
    failed = sample.metadata["gold"][0]
    v = score_sample(
        sample, [_reply(failed["name"], failed["args"]), "sorry, giving up"], similarity=FakeSim()
    ).values
    assert (v["skip_retry"], v["skip_break"], v["skip_parse_rate"], v["skip_tool"]) == (1.0, 0.0, 0.0, 0.0)


def test_skip_mode_finish_gold_uses_similarity_on_the_answer(samples: dict[str, Sample]) -> None:
    sample = samples["base-skip-ext_finish_01"]
    gold_answer = sample.metadata["gold"][1]["args"]
    sim = FakeSim({("TSLA price unavailable.", gold_answer): 0.65})
    v = score_sample(sample, [_reply("FinishAction", "TSLA price unavailable.")], similarity=sim).values
    assert (v["skip_tool"], v["skip_args"], v["skip_break"]) == (1.0, 0.65, 1.0)


def test_finish_mode(samples: dict[str, Sample]) -> None:
    sample = samples["base-finish-ext_next_01"]
    v = score_sample(sample, [_reply("FinishAction", "It failed, what now?")], similarity=FakeSim()).values
    assert v == {"finish_retry": 0.0, "finish_break": 1.0, "finish_tool": 1.0, "finish_parse_rate": 1.0}
    nxt = sample.metadata["gold"][1]
    v = score_sample(sample, [_reply(nxt["name"], nxt["args"])], similarity=FakeSim()).values
    assert (v["finish_break"], v["finish_tool"]) == (1.0, 0.0)


def test_finish_mode_cot_thought_takes_the_better_of_thought_and_message(samples: dict[str, Sample]) -> None:
    sample = samples["base-finish-extc_finish_01"]
    ref = finish_reference("Finance.quote")
    assert ref.startswith("I encountered an issue while trying to callFinance.quote, please")
    sim = FakeSim({("Tell the user.", ref): 0.3, ("The service is down.", ref): 0.8})
    v = score_sample(
        sample, [_reply("FinishAction", "The service is down.", thought="Tell the user.")], similarity=sim
    ).values
    assert v["finish_thought"] == 0.8


def test_external_denominator_is_every_sample() -> None:
    bench = CriticToolBenchmark(similarity=FakeSim())
    external = load_critictool(FIXTURES, parts=["external"])
    # Reply FinishAction at once: finish tool 100, skip tool only where the gold next step finishes.
    scores = [bench.score(s, [_reply("FinishAction", "stop")]) for s in external]
    agg = bench.aggregate(scores)
    assert agg["finish_tool"] == 100.0 and agg["skip_tool"] == pytest.approx(100 / 3)
    assert agg["skip_args"] == pytest.approx(0.4 * 100 / 3)
    assert agg["retry"] == 0.0 and agg["break"] == 100.0
    assert agg["skip_finish_tool"] == pytest.approx((100 + 100 / 3) / 2)


# -- never raises -------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.text(),
        st.lists(st.text(), max_size=5),
        st.builds(
            lambda n, a: json.dumps({"name": n, "args": a, "error": n}),
            st.text(max_size=10),
            st.dictionaries(
                st.text(max_size=5), st.integers() | st.text(max_size=5) | st.booleans(), max_size=3
            ),
        ),
    ),
    st.sampled_from(["compat", "improved"]),
)
def test_scoring_never_raises_on_arbitrary_text(
    samples: dict[str, Sample], prediction: Any, mode: str
) -> None:
    for sample in samples.values():
        sc = score_sample(sample, prediction, mode=mode, similarity=FakeSim())  # type: ignore[arg-type]
        assert all(v is None or 0.0 <= v <= 1.0 for v in sc.values.values())
        json.dumps(sc.details)


def test_hand_built_samples_score_from_their_target() -> None:
    from toolmend._schema import ToolCall

    internal = Sample(
        id="mine",
        tools=TOOLS,
        target=[ToolCall(name="W.forecast", arguments={"city": "Oslo", "days": 2})],
        metadata={"error_type": "parameters_value_error"},
    )
    v = score_sample(
        internal, _reply("W.forecast", {"city": "Oslo", "days": 2}, error="parameters_value_error")
    ).values
    assert v == {"parse_rate": 1.0, "detect": 1.0, "category": 1.0, "tool": 1.0, "args": 1.0}
    external = Sample(
        id="mine-ext",
        tools=TOOLS,
        target=[
            ToolCall(name="W.forecast", arguments={"city": "Oslo", "days": 2}),
            ToolCall(name="FinishAction", arguments={"answer": "No forecast today."}),
        ],
        metadata={"part": "external", "external_mode": "skip"},
    )
    bench = CriticToolBenchmark(similarity=FakeSim(default=0.0))
    assert set(bench.score(external, bench.gold(external)).values.values()) == {1.0}


def test_cot_internal_empty_thought_scores_zero_without_asking_the_similarity(
    samples: dict[str, Sample],
) -> None:
    # A similarity that rates everything 0.9 would give "" vs the gold thought 0.9; an empty or
    # missing thought must score 0 whatever the similarity says.
    sample = samples["base-internal-intc_key_01"]
    sim = FakeSim(default=0.9)
    for reply in (
        _reply("Finance.quote", {"symbol": "MSFT"}, "parameters_key_error", ""),
        _reply("Finance.quote", {"symbol": "MSFT"}, "parameters_key_error"),
        "no reply at all",
    ):
        assert score_sample(sample, reply, similarity=sim).values["thought"] == 0.0
    assert all(a != "" for a, _ in sim.calls)


def test_empty_predicted_name_never_matches_the_gold_tool() -> None:
    # Hand-built sample whose gold call has an empty name: an unnamed reply is not a match.
    sample = Sample(
        id="x",
        messages=[],
        tools=[],
        metadata={"part": "internal", "error_type": "tool_select_error", "gold": [{"name": "", "args": {}}]},
    )
    v = score_sample(sample, '{"error": "tool_select_error", "args": {}}', similarity=FakeSim()).values
    assert v["tool"] == 0.0 and v["args"] == 0.0
