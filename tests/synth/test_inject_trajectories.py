"""Tool-Reflection-Bench's P1-P4 change the call list as described."""

from __future__ import annotations

from typing import Any

from toolmend._schema import Ref, Tool, ToolCall
from toolmend.synth.inject import applicable, inject
from toolmend.synth.inject._values import ref_targets

Gold = Any

TOOLS = [
    Tool(name="contacts_search", parameters={"type": "object", "properties": {"name": {"type": "string"}},
                                             "required": ["name"]}),
    Tool(name="mail_send", parameters={"type": "object", "properties": {
        "to": {"type": "string"}, "subject": {"type": "string"}}, "required": ["to", "subject"]}),
    Tool(name="weather_current", parameters={"type": "object", "properties": {"city": {"type": "string"}},
                                             "required": ["city"]}),
]  # fmt: skip
CHAIN = [
    ToolCall(name="contacts_search", arguments={"name": "Rosa"}, outputs=["API_call_0"],
             output_fields=["contacts.0.email"]),
    ToolCall(name="mail_send", arguments={"to": Ref(target="API_call_0"), "subject": "Hi"}),
    ToolCall(name="weather_current", arguments={"city": "Oslo"}),
]  # fmt: skip


def test_p1_swaps_only_where_order_matters() -> None:
    assert applicable("call_order_swap", CHAIN, TOOLS) == [0]
    inj = inject(CHAIN, TOOLS, "call_order_swap", seed=0)
    assert inj is not None and inj.step == 0
    assert [c.name for c in inj.calls] == ["mail_send", "contacts_search", "weather_current"]
    assert [c.name for c in inj.prefix] == ["mail_send"]  # D^-: the broken step is the next call
    assert inj.expected_codes == ["invalid_value"]


def test_p2_repeats_the_call_right_after_itself() -> None:
    same = inject(CHAIN, TOOLS, "redundant_call", seed=0, step=2, variant="redundant.same_args")
    assert same is not None
    assert [c.name for c in same.calls] == [
        "contacts_search",
        "mail_send",
        "weather_current",
        "weather_current",
    ]
    assert same.step == 3 and same.original == [] and same.expected_count == 3
    assert same.calls[3].arguments == same.calls[2].arguments
    other = inject(CHAIN, TOOLS, "redundant_call", seed=0, step=2, variant="redundant.other_args")
    assert other is not None
    assert other.calls[3].name == "weather_current" and other.calls[3].arguments != {"city": "Oslo"}
    # The repeat binds nothing, so later references still point at the first call.
    first = inject(CHAIN, TOOLS, "redundant_call", seed=0, step=0, variant="redundant.same_args")
    assert first is not None and first.calls[1].outputs == [] and first.calls[0].outputs == ["API_call_0"]


def test_p3_leaves_a_call_out() -> None:
    dep = inject(CHAIN, TOOLS, "missing_call", seed=0, step=0)
    assert dep is not None and dep.sub_label == "missing.dependency"
    assert [c.name for c in dep.calls] == ["mail_send", "weather_current"]
    assert [c.name for c in dep.corrupted] == ["mail_send"]  # the next call comes in its place
    assert "API_call_0" in set(ref_targets(dep.calls[0].arguments))
    last = inject(CHAIN, TOOLS, "missing_call", seed=0, step=2)
    assert last is not None and last.sub_label == "missing.dropped" and last.corrupted == []
    assert len(last.calls) == 2 and last.expected_count == 3


def test_p4_corrupts_the_arguments_of_one_call(world_gold: list[Gold]) -> None:
    kinds = set()
    for gold in world_gold[:80]:
        inj = inject(gold.calls, gold.checker, "argument_error", seed=1)
        if inj is None:
            continue
        kinds.add(inj.sub_label)
        assert [c.name for c in inj.calls] == [c.name for c in gold.calls]
        changed = [i for i, (a, b) in enumerate(zip(inj.calls, gold.calls, strict=True)) if a != b]
        assert changed == [inj.step]
    assert kinds == {"argument.missing", "argument.wrong_type", "argument.alias", "argument.boundary"}


def test_p4_boundary_goes_just_outside_a_range() -> None:
    tools = [Tool(name="shop_add_to_cart", parameters={"type": "object", "properties": {
        "quantity": {"type": "integer", "minimum": 1, "maximum": 10}}, "required": ["quantity"]})]  # fmt: skip
    inj = inject([ToolCall(name="shop_add_to_cart", arguments={"quantity": 2})], tools, "argument_error",
                 seed=0, variant="argument.boundary")  # fmt: skip
    assert inj is not None and inj.calls[0].arguments["quantity"] in (0, 11)
