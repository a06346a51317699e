"""BFCLBenchmark end to end on the real BFCL v4 files: gold replies, error types, modes, aggregation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmend.benchmarks.bfcl  # noqa: F401  (registers "bfcl")
from toolmend._schema import Message, Sample, Tool, ToolCall
from toolmend.benchmarks._base import BENCHMARKS, SampleScore
from toolmend.benchmarks.bfcl import BFCLBenchmark
from toolmend.benchmarks.bfcl._decode import render_fc, render_openai, render_python

BENCH = BFCLBenchmark()


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list[Sample]:
    return BENCH.load(data_dir / "bfcl")


@pytest.fixture(scope="module")
def by_id(samples: list[Sample]) -> dict[str, Sample]:
    return {s.id: s for s in samples}


def test_registered() -> None:
    assert BENCHMARKS.get("bfcl") is BFCLBenchmark


@pytest.mark.parametrize("mode", ["compat", "improved"])
@pytest.mark.parametrize("render", [render_python, render_fc, render_openai])
def test_gold_scores_100_percent_on_every_category(samples: list[Sample], mode: str, render: object) -> None:
    scores = [BENCH.score(s, render(s.target), mode) for s in samples]  # type: ignore[operator, arg-type]
    failures = {
        sc.id: sc.details["error_type"]
        for s, sc in zip(samples, scores, strict=True)
        if sc.values["accuracy"] != 1.0 and "unsatisfiable" not in s.metadata
    }
    assert failures == {}
    # The two answers with empty acceptable-value lists cannot be passed by any reply.
    unsatisfiable = [sc for s, sc in zip(samples, scores, strict=True) if "unsatisfiable" in s.metadata]
    assert [sc.details["error_type"] for sc in unsatisfiable] == [
        "simple_function_checker:missing_required"
    ] * 2
    summary = BENCH.aggregate(
        [sc for s, sc in zip(samples, scores, strict=True) if "unsatisfiable" not in s.metadata]
    )
    assert {k: v for k, v in summary.items() if k.startswith("accuracy:")} == {
        f"accuracy:{c}": 1.0
        for c in ("irrelevance", "live_simple", "multiple", "parallel", "parallel_multiple", "simple_python")
    }


def test_reversed_gold_shows_greedy_false_negative_on_real_data(samples: list[Sample]) -> None:
    failed: dict[str, list[str]] = {"compat": [], "improved": []}
    for s in samples:
        if "parallel" in s.metadata["category"]:
            for mode, ids in failed.items():
                if BENCH.score(s, render_python(list(reversed(s.target))), mode).values["accuracy"] != 1.0:  # type: ignore[arg-type]
                    ids.append(s.id)
    # parallel_178's first answer accepts "Microsoft" or "Apple": BFCL's greedy scan gives it the
    # call meant for a later answer and then fails; an optimal matching passes.
    assert failed == {"compat": ["parallel_178"], "improved": []}


def score(sample: Sample, text: str, mode: str = "compat") -> tuple[float | None, str]:
    sc = BENCH.score(sample, text, mode)  # type: ignore[arg-type]
    return sc.values["accuracy"], sc.details["error_type"]


def test_error_types_on_real_samples(by_id: dict[str, Sample]) -> None:
    simple = by_id["simple_python_0"]  # calculate_triangle_area(base: integer, height: integer, unit: string)
    assert score(simple, "[calculate_triangle_area(base=10, height=5)]") == (1.0, "")
    assert score(simple, "[calculate_triangle_area(base=10, height=5, unit='Units')]") == (1.0, "")
    assert score(simple, "[calc_area(base=10, height=5)]") == (0.0, "simple_function_checker:wrong_func_name")
    assert score(simple, "[calculate_triangle_area(base=10)]") == (
        0.0,
        "simple_function_checker:missing_required",
    )
    assert score(simple, "[calculate_triangle_area(base=10.0, height=5)]") == (0.0, "type_error:simple")
    assert score(simple, "[calculate_triangle_area(base=10, height=6)]") == (0.0, "value_error:others")
    assert score(simple, "[calculate_triangle_area(base=10, height=5, unit='cm')]") == (
        0.0,
        "value_error:string",
    )
    assert score(simple, "[calculate_triangle_area(base=10, height=5, colour=1)]") == (
        0.0,
        "simple_function_checker:unexpected_param",
    )
    assert score(simple, "[calculate_triangle_area(base=10, height=5)] * 2") == (
        0.0,
        "ast_decoder:decoder_failed",
    )
    assert score(simple, "Sure! The area is 25.") == (0.0, "ast_decoder:decoder_failed")
    assert score(simple, "[]") == (0.0, "simple_function_checker:wrong_count")
    assert score(simple, '[{"calculate_triangle_area": "[10, 5]"}]') == (
        0.0,
        "ast_decoder:decoder_wrong_output_format",
    )
    assert score(by_id["multiple_0"], "[]") == (0.0, "multiple_function_checker:wrong_count")
    assert score(by_id["parallel_0"], "[]") == (0.0, "parallel_function_checker_no_order:wrong_count")


def test_dotted_names_and_underscore_to_dot(by_id: dict[str, Sample]) -> None:
    sample = by_id["parallel_multiple_2"]
    gold = render_python(sample.target)
    assert score(sample, gold) == (1.0, "")
    underscored = render_fc(
        [ToolCall(name=c.name.replace(".", "_"), arguments=c.arguments) for c in sample.target]
    )
    assert score(sample, underscored)[1] == "parallel_function_checker_no_order:cannot_find_match"
    assert BFCLBenchmark(underscore_to_dot=True).score(sample, underscored).values["accuracy"] == 1.0


def test_float_leniency_on_a_real_float_parameter(by_id: dict[str, Sample]) -> None:
    # A float parameter whose gold value is integral: an int literal is accepted.
    for s in by_id.values():
        if s.metadata["category"] != "simple_python":
            continue
        tool = s.tools[0]
        floats = [
            p
            for p, v in s.target[0].arguments.items()
            if tool.properties[p].get("x-original-type") == "float"
            and isinstance(v, float)
            and v.is_integer()
        ]
        if floats:
            args = {**s.target[0].arguments, floats[0]: int(s.target[0].arguments[floats[0]])}
            assert score(s, render_python([ToolCall(name=tool.name, arguments=args)])) == (1.0, "")
            return
    pytest.fail("no float parameter with an integral gold value in simple_python")


def test_irrelevance_modes(by_id: dict[str, Sample]) -> None:
    sample = by_id["irrelevance_0"]
    tool = sample.tools[0].name
    for mode in ("compat", "improved"):
        assert score(sample, "[]", mode) == (1.0, "")
        assert score(sample, "I cannot compute that with the tools I have.", mode) == (1.0, "")
        assert score(sample, f"[{tool}(x=1)]", mode) == (0.0, "irrelevance_error:decoder_success")
    malformed = f'<tool_call>{{"name": "{tool}", "arguments": {{"x": 1}}</tool_call>'
    assert score(sample, malformed, "compat") == (1.0, "")
    assert score(sample, malformed, "improved") == (0.0, "irrelevance_error:malformed_call")
    details = BENCH.score(sample, malformed, "improved").details
    assert details["outcome"] == "malformed"
    assert BENCH.score(sample, "No.", "improved").details["outcome"] == "text"


def test_relevance_category() -> None:
    sample = Sample(id="live_relevance_0-0-0", metadata={"category": "live_relevance"})
    assert score(sample, "[f(a=1)]") == (1.0, "")
    assert score(sample, "nothing to call") == (0.0, "relevance_error:decoder_failed")


def test_sample_without_ground_truth_uses_target() -> None:
    tool = Tool(
        name="f", parameters={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    )
    sample = Sample(id="simple_python_x", tools=[tool], target=[ToolCall(name="f", arguments={"a": 1})])
    assert score(sample, "[f(a=1)]") == (1.0, "")
    assert score(sample, "[f(a=2)]")[0] == 0.0


def test_details_are_json_serialisable(by_id: dict[str, Sample]) -> None:
    sc = BENCH.score(by_id["parallel_0"], "[f(a=(1, 2), b=1+2j), g(c=x)]")
    json.dumps(sc.details)
    assert sc.details["decoded"] == [{"f": {"a": [1, 2], "b": "(1+2j)"}}, {"g": {"c": "x"}}]


def test_list_prediction_scores_its_first_item(by_id: dict[str, Sample]) -> None:
    s = by_id["simple_python_0"]
    assert BENCH.score(s, [render_python(s.target), "junk"]).values["accuracy"] == 1.0
    assert BENCH.score(s, []).values["accuracy"] == 0.0


def test_aggregate_labels_both_overall_means() -> None:
    def sc(cat: str, v: float) -> SampleScore:
        return SampleScore(id=cat, values={"accuracy": v}, details={"category": cat})

    scores = [
        sc("simple_python", 1.0),
        sc("simple_python", 1.0),
        sc("simple_python", 0.0),
        sc("irrelevance", 0.0),
    ]
    out = BENCH.aggregate(scores)
    assert out["accuracy:simple_python"] == pytest.approx(2 / 3)
    assert out["accuracy:irrelevance"] == 0.0
    assert out["overall_category_mean"] == pytest.approx((2 / 3 + 0.0) / 2)
    assert out["overall_sample_weighted"] == pytest.approx(2 / 4)
    assert BENCH.aggregate([]) == {}


def test_prompt(by_id: dict[str, Sample]) -> None:
    sample = by_id["simple_python_0"]
    messages = BENCH.prompt(sample)
    assert [m.role for m in messages] == ["system", "user"]
    assert "calculate_triangle_area" in messages[0].content and '"type": "dict"' in messages[0].content
    assert "[function_one(" in messages[0].content
    with_system = sample.model_copy(
        update={"messages": [Message(role="system", content="Be brief."), *sample.messages]}
    )
    merged = BENCH.prompt(with_system)
    assert len(merged) == 2 and merged[0].content.endswith("Be brief.")
    custom = BFCLBenchmark(prompt_template="Tools: {functions}").prompt(sample)
    assert custom[0].content.startswith("Tools: [")


def test_native_prompt_is_the_question_alone_as_in_bfcl_fc_mode(by_id: dict[str, Sample]) -> None:
    sample = by_id["simple_python_0"]
    (native,) = BENCH.for_native_tools([sample])
    messages = BENCH.prompt(native)
    # BFCL's FC mode sends the functions through the API and no system prompt: ours asks for a
    # Python list, which contradicts the API's tool calls
    assert [m.role for m in messages] == ["user"] and messages[0].content == sample.messages[-1].content
    assert native.tools == sample.tools and BENCH.prompt(sample)[0].role == "system"
    with_system = sample.model_copy(
        update={"messages": [Message(role="system", content="Be brief."), *sample.messages]}
    )
    (native_system,) = BENCH.for_native_tools([with_system])
    assert [m.content for m in BENCH.prompt(native_system)][0] == "Be brief."


def test_float_types_show_as_bfcl_types_in_the_prompt(by_id: dict[str, Sample]) -> None:
    sample = next(
        s
        for s in by_id.values()
        if any(p.get("x-original-type") == "float" for t in s.tools for p in t.properties.values())
    )
    assert '"type": "float"' in BENCH.prompt(sample)[0].content


# ---------------------------------------------------------------------------------------------
# properties


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_permuting_parallel_calls_keeps_improved_verdicts(samples: list[Sample], data: st.DataObject) -> None:
    parallel = [s for s in samples if "parallel" in s.metadata["category"]]
    sample = data.draw(st.sampled_from(parallel))
    calls = list(sample.target)
    # Perturb one call's arguments sometimes, so failing verdicts are permuted too.
    if data.draw(st.booleans()) and calls[0].arguments:
        key = data.draw(st.sampled_from(sorted(calls[0].arguments)))
        calls[0] = ToolCall(name=calls[0].name, arguments={**calls[0].arguments, key: "wrong"})
    permuted = data.draw(st.permutations(calls))
    a = BENCH.score(sample, render_python(calls), "improved")
    b = BENCH.score(sample, render_python(permuted), "improved")
    assert a.values == b.values


@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=st.text(max_size=120))
def test_scoring_never_raises_and_stays_in_range(
    samples: list[Sample], data: st.DataObject, text: str
) -> None:
    sample = data.draw(st.sampled_from(samples))
    for mode in ("compat", "improved"):
        sc = BENCH.score(sample, text, mode)
        assert sc.values["accuracy"] in (0.0, 1.0)
        json.dumps(sc.details)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_mutated_gold_never_raises(samples: list[Sample], data: st.DataObject) -> None:
    sample = data.draw(st.sampled_from([s for s in samples if s.target]))
    value = data.draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=6,
        )
    )
    call = sample.target[0]
    key = data.draw(st.sampled_from(sorted(call.arguments) or ["extra"]))
    mutated = [ToolCall(name=call.name, arguments={**call.arguments, key: value}), *sample.target[1:]]
    for render in (render_python, render_fc):
        sc = BENCH.score(sample, render(mutated), data.draw(st.sampled_from(["compat", "improved"])))
        assert 0.0 <= (sc.values["accuracy"] or 0.0) <= 1.0
        assert (sc.values["accuracy"] == 1.0) == (sc.details["error_type"] == "")
