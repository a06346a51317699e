"""Every operator: deterministic for a seed, varied across seeds, labelled as its operator."""

from __future__ import annotations

from typing import Any

import pytest

from toolmend._errors import ConfigError
from toolmend.synth.inject import OPERATORS, inject, operator_names
from toolmend.synth.inject._model import Injection

Gold = Any  # tests/synth/conftest.py: id, calls, checker

CRITICTOOL = {
    "tool_selection": "tool_select_error",
    "tool_hallucination": "tool_hallucination_error",
    "parameter_key": "parameters_key_error",
    "parameter_value": "parameters_value_error",
}


def test_registry_holds_every_family() -> None:
    assert set(CRITICTOOL) | {"external_error"} == set(operator_names("critictool")) | set(
        operator_names("external")
    )
    assert operator_names("reflection") == [
        "argument_error",
        "call_order_swap",
        "missing_call",
        "redundant_call",
    ]
    hitec = sorted(OPERATORS.get(n).hitec_type for n in operator_names("hitec"))
    assert hitec == list(range(8))
    for name, label in CRITICTOOL.items():
        assert OPERATORS.get(name).label == label


def _dump(inj: Injection | None) -> str | None:
    return None if inj is None else inj.model_dump_json()


def _what(inj: Injection | None) -> str | None:
    return None if inj is None else inj.model_dump_json(exclude={"seed"})


@pytest.mark.parametrize("operator", operator_names())
def test_same_seed_same_injection_and_seeds_differ(operator: str, world_gold: list[Gold]) -> None:
    sample = world_gold[::7]
    differs = False
    for gold in sample:
        before = [c.model_dump_json() for c in gold.calls]
        a = inject(gold.calls, gold.checker, operator, seed=3)
        assert _dump(a) == _dump(inject(gold.calls, gold.checker, operator, seed=3))
        assert [c.model_dump_json() for c in gold.calls] == before  # the input is never modified
    for gold in world_gold:
        a, b = (inject(gold.calls, gold.checker, operator, seed=s) for s in (3, 4))
        if _what(a) != _what(b):
            differs = True
            break
    assert differs, f"{operator}: seeds 3 and 4 gave the same injections on every task"


@pytest.mark.parametrize("operator", operator_names())
def test_every_injection_carries_its_operators_label(operator: str, world_gold: list[Gold]) -> None:
    op = OPERATORS.get(operator)
    seen: set[str] = set()
    for gold in world_gold:
        inj = inject(gold.calls, gold.checker, operator, seed=11)
        if inj is None:
            continue
        assert (inj.operator, inj.family, inj.label) == (operator, op.family, op.label)
        assert inj.sub_label in op.variants
        assert inj.hitec_type == op.hitec_type
        if op.category is not None:
            assert inj.category == op.category
        assert inj.description
        assert inj.calls != gold.calls or inj.text is not None or inj.response is not None
        seen.add(inj.sub_label)
    # Over 214 tasks every variant of an operator shows up at least once.
    assert seen == set(op.variants), (operator, set(op.variants) - seen)


@pytest.mark.parametrize("operator", operator_names())
def test_forced_variant_is_honoured(operator: str, world_gold: list[Gold]) -> None:
    for variant in OPERATORS.get(operator).variants:
        hits = [inject(g.calls, g.checker, operator, seed=0, variant=variant) for g in world_gold[:60]]
        assert all(h is None or h.sub_label == variant for h in hits)


def test_misuse_is_a_config_error(world_gold: list[Gold]) -> None:
    gold = world_gold[0]
    with pytest.raises(ConfigError, match="tool_hallucination"):
        inject(gold.calls, gold.checker, "tool_halucination", seed=0)
    with pytest.raises(ConfigError, match="no variant"):
        inject(gold.calls, gold.checker, "parameter_key", seed=0, variant="value.empty")
    with pytest.raises(ConfigError, match="outside"):
        inject(gold.calls, gold.checker, "parameter_key", seed=0, step=len(gold.calls))


def test_not_applicable_is_none() -> None:
    from toolmend._schema import Tool, ToolCall

    tools = [Tool(name="ping")]
    calls = [ToolCall(name="ping")]
    assert inject(calls, tools, "parameter_value", seed=0) is None  # no argument to spoil
    assert inject(calls, tools, "call_order_swap", seed=0) is None  # nothing depends on it
    assert inject(calls, tools, "parameter_key", seed=0, variant="key.drop_required") is None
    assert inject(calls, tools, "parameter_key", seed=0).sub_label == "key.add_irrelevant"  # type: ignore[union-attr]
