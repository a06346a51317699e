"""The checker sees every schema-level injection, under the same CriticTool category; the
errors that live in the raw text are seen by the parser; the silent ones stay valid."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from toolmend._schema import Tool
from toolmend.check import critictool_category
from toolmend.formats import parse_calls
from toolmend.synth.inject import OPERATORS, inject

Gold = Any  # tests/synth/conftest.py: id, calls, checker

CALL_LEVEL = [
    "tool_hallucination",
    "parameter_key",
    "parameter_value",
    "argument_error",
    "call_order_swap",
    "redundant_call",
    "missing_call",
    "hitec_wrong_tool_name",
    "hitec_missing_required",
    "hitec_invalid_type",
    "hitec_empty_value",
    "hitec_redundant_parameter",
    "hitec_wrong_tool_count",
]


def _sweep(golds: list[Gold], operators: list[str], seed: int) -> dict[str, Counter[str]]:
    """Inject every operator at every step; count applied / detectable / flagged / same category."""
    out: dict[str, Counter[str]] = {}
    for operator in operators:
        tally: Counter[str] = Counter()
        for gold in golds:
            for step in range(len(gold.calls)):
                inj = inject(gold.calls, gold.checker, operator, seed=seed, step=step)
                if inj is None:
                    continue
                tally["applied"] += 1
                if not inj.detectable:
                    continue
                tally["detectable"] += 1
                findings = gold.checker.check(inj.calls, inj.expected_count)
                codes = {f.code for f in findings}
                if set(inj.expected_codes) <= codes:
                    tally["flagged"] += 1
                else:
                    tally[f"missed {inj.sub_label}: {inj.description}"] += 1
                if inj.category is not None:
                    at_step = [f for f in findings if f.call == inj.step]
                    if any(critictool_category(f.code) == inj.category for f in at_step):
                        tally["same_category"] += 1
                    else:
                        tally[f"other category {inj.sub_label}: {[f.code for f in at_step]}"] += 1
                else:
                    tally["same_category"] += 1
        out[operator] = tally
    return out


def _assert_all_flagged(rates: dict[str, Counter[str]], minimum: int) -> None:
    for operator, tally in rates.items():
        problems = [k for k in tally if k.startswith(("missed", "other"))]
        assert problems == [], (operator, problems[:5])
        assert tally["applied"] >= minimum, (operator, tally)
        assert tally["flagged"] == tally["same_category"] == tally["detectable"]


def test_world_schema_level_injections_are_all_flagged(world_gold: list[Gold]) -> None:
    rates = _sweep(world_gold, CALL_LEVEL, seed=5)
    _assert_all_flagged(rates, minimum=150)
    # Only the kinds that need the task to judge escape the schema.
    assert rates["hitec_redundant_parameter"]["detectable"] < rates["hitec_redundant_parameter"]["applied"]
    assert rates["tool_hallucination"]["detectable"] == rates["tool_hallucination"]["applied"]
    assert rates["parameter_key"]["detectable"] == rates["parameter_key"]["applied"]


def test_bfcl_schema_level_injections_are_all_flagged(bfcl_gold: list[Gold]) -> None:
    assert len(bfcl_gold) >= 1250  # 1258 answered samples minus 4 with invalid gold
    ops = ["tool_hallucination", "parameter_key", "parameter_value", "hitec_missing_required",
           "hitec_invalid_type", "hitec_wrong_tool_count", "redundant_call"]  # fmt: skip
    rates = _sweep(bfcl_gold[::2], ops, seed=9)  # every other sample keeps the test quick
    _assert_all_flagged(rates, minimum=450)


def test_tool_selection_picks_another_offered_tool_with_valid_arguments(world_gold: list[Gold]) -> None:
    valid = total = 0
    for gold in world_gold:
        for step in range(len(gold.calls)):
            inj = inject(gold.calls, gold.checker, "tool_selection", seed=2, step=step)
            assert inj is not None
            chosen = inj.calls[step].name
            assert chosen in gold.checker.tools and chosen != gold.calls[step].name
            assert not inj.detectable and inj.expected_codes == []
            total += 1
            valid += not gold.checker.check_call(inj.calls[step])
    # CriticTool's selection errors are silent: the wrong tool is called correctly.
    assert valid / total >= 0.95, (valid, total)


def test_tool_selection_prefers_similar_tools(world_gold: list[Gold]) -> None:
    same_domain = total = 0
    for gold in world_gold:
        inj = inject(gold.calls, gold.checker, "tool_selection", seed=0)
        assert inj is not None
        total += 1
        same_domain += inj.calls[inj.step].name.split("_")[0] == inj.original[0].name.split("_")[0]
    assert same_domain / total >= 0.8


def test_hallucinated_names_are_not_offered_nor_aliases(world_gold: list[Gold]) -> None:
    from toolmend.check._names import fold

    offered = {fold(n) for n in world_gold[0].checker.tools}
    for gold in world_gold:
        inj = inject(gold.calls, gold.checker, "tool_hallucination", seed=1)
        assert inj is not None
        assert fold(inj.calls[inj.step].name) not in offered


@pytest.mark.parametrize("operator", ["hitec_invalid_format", "hitec_redundant_information"])
def test_text_level_errors_are_seen_by_the_parser(operator: str, world_gold: list[Gold]) -> None:
    code = OPERATORS.get(operator).label
    for gold in world_gold:
        for step in range(len(gold.calls)):
            inj = inject(gold.calls, gold.checker, operator, seed=step, step=step)
            assert inj is not None and inj.text is not None
            result = parse_calls(inj.text)
            assert code in {f.code for f in result.findings}, (inj.sub_label, inj.text)
            if operator == "hitec_redundant_information":
                assert result.calls[0].name == gold.calls[step].name  # the call itself is intact


def test_external_errors_reuse_the_environments_fault_text(world_gold: list[Gold]) -> None:
    from toolmend.env import fault_response

    kinds = set()
    for gold in world_gold[:80]:
        inj = inject(gold.calls, gold.checker, "external_error", seed=4)
        assert inj is not None and inj.response is not None
        kind = inj.sub_label.split(".", 1)[1]
        kinds.add(kind)
        expected = fault_response(kind, inj.original[0].name)  # type: ignore[arg-type]
        assert inj.response["content"] == expected.content and inj.response["error"] == kind
        assert inj.calls == gold.calls  # the call was right; the service failed
        assert inj.label == "environment_error"
    assert len(kinds) == 5


def test_argument_error_categories_follow_the_sub_label(world_gold: list[Gold]) -> None:
    for gold in world_gold[:100]:
        inj = inject(gold.calls, gold.checker, "argument_error", seed=6)
        if inj is None:
            continue
        key = inj.sub_label in ("argument.missing", "argument.alias")
        assert inj.category == ("parameters_key_error" if key else "parameters_value_error")


def test_unrequested_optional_uses_a_declared_parameter(world_gold: list[Gold]) -> None:
    n = 0
    for gold in world_gold:
        inj = inject(gold.calls, gold.checker, "hitec_redundant_parameter", seed=0,
                     variant="redundant.unrequested_optional")  # fmt: skip
        if inj is None:
            continue
        n += 1
        tool = gold.checker.tools[inj.original[0].name]
        assert isinstance(tool, Tool)
        (added,) = set(inj.calls[inj.step].arguments) - set(inj.original[0].arguments)
        assert added in tool.properties and added not in tool.required
        assert gold.checker.check_call(inj.calls[inj.step]) == []  # HiTEC's kind: the schema allows it
    assert n >= 50
