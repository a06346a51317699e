"""Tool-Reflection-Bench's perturbations P1-P4 as operators over a call list.

``Injection.step`` is where the broken call sits in the new list, so ``Injection.prefix`` is the
paper's negative prefix :math:`D^-` (the calls up to and including the broken one).

=====================  ===================  ====================================================
operator               sub-labels           what changes
=====================  ===================  ====================================================
``call_order_swap``    ``swap.dependent``   calls *k* and *k+1* trade places. Only where call
  (P1)                                      *k+1* uses an output of call *k*, so that order
                                            matters: the moved-up call now refers to an output
                                            nothing has produced yet (``invalid_value``).
                                            Independent neighbours are never swapped — running
                                            them in the other order is not an error.
``redundant_call``     ``redundant.same_    call *k* is made again right after itself, with the
  (P2)                 args``, ``redundant. same arguments (``duplicate_call``) or with one
                       other_args``         argument changed to another value from the context;
                                            one call too many (``wrong_tool_count``).
``missing_call``       ``missing.dropped``, call *k* is left out and the next call comes in its
  (P3)                 ``missing.dependency`` place; ``missing.dependency`` when later calls used
                                            its outputs (they now dangle). The paper words P3 as
                                            "the intended tool replaced by another"; a
                                            replacement by a *wrong* tool is ``tool_selection``.
``argument_error``     ``argument.missing``, a required key dropped, a wrong type, a key under
  (P4)                 ``.wrong_type``,     an alias, or a boundary value (just outside a range,
                       ``.alias``,          enum or length, else ``null`` for a required
                       ``.boundary``        parameter). ``category`` says key or value error.
=====================  ===================  ====================================================
"""

from __future__ import annotations

from typing import Any

from toolmend._schema import ToolCall
from toolmend.synth.inject._critictool_ops import bad_format, drop_required, rename_key, wrong_type
from toolmend.synth.inject._model import OPERATORS, Injection, Operator
from toolmend.synth.inject._site import Site
from toolmend.synth.inject._values import context_values, literal_keys, ref_targets

__all__: list[str] = []


def _uses(call: ToolCall, outputs: list[str]) -> bool:
    wanted = set(outputs)
    return any(t in wanted for t in ref_targets(call.arguments))


def _swap(site: Site) -> Injection | None:
    k = site.step
    if k + 1 >= len(site.calls) or not site.call.outputs or not _uses(site.calls[k + 1], site.call.outputs):
        return None
    if site.choose_variant({"swap.dependent": True}) is None:
        return None
    calls = site.copy()
    calls[k], calls[k + 1] = calls[k + 1], calls[k]
    return site.make(
        "swap.dependent",
        [calls[k].model_copy(deep=True)],
        calls,
        f"called {calls[k].name} before {calls[k + 1].name}, whose output it needs",
        original=[site.calls[k], site.calls[k + 1]],
        expected_codes=["invalid_value"],
    )


def _other_args(site: Site) -> dict[str, Any] | None:
    tool = site.tools.get(site.call.name)
    if tool is None:
        return None
    for key in literal_keys(site.call, tool.properties):
        current = site.call.arguments[key]
        for v in context_values(site.calls, (site.step, key), list(site.context.responses)):
            if type(v) is type(current) and v != current:
                probe = site.call.model_copy(deep=True)
                probe.arguments[key] = v
                if not site.checker.check_call(probe):
                    return probe.arguments
    return None


def _redundant(site: Site) -> Injection | None:
    other = _other_args(site)
    variant = site.choose_variant({"redundant.same_args": True, "redundant.other_args": other is not None})
    if variant is None:
        return None
    # The repeat binds no placeholders: the later calls keep reading the first call's outputs.
    repeat = site.call.model_copy(deep=True, update={"outputs": [], "output_fields": [], "id": None})
    if variant == "redundant.other_args":
        assert other is not None
        repeat.arguments = other
    calls = site.copy()
    calls.insert(site.step + 1, repeat)
    codes: list[Any] = ["wrong_tool_count"] + (["duplicate_call"] if variant == "redundant.same_args" else [])
    how = "the same arguments" if variant == "redundant.same_args" else "other arguments"
    return site.make(variant, [repeat.model_copy(deep=True)], calls,
                     f"called {site.call.name} again right after itself, with {how}",
                     original=[], step=site.step + 1, expected_codes=codes,
                     expected_count=len(site.calls))  # fmt: skip


def _missing(site: Site) -> Injection | None:
    later = site.calls[site.step + 1 :]
    dangling = bool(site.call.outputs) and any(_uses(c, site.call.outputs) for c in later)
    variant = "missing.dependency" if dangling else "missing.dropped"
    if site.choose_variant({variant: True}) is None:
        return None
    calls = site.copy()
    del calls[site.step]
    # The checker resolves references only while some call still declares outputs.
    seen = dangling and any(c.outputs for c in calls)
    codes: list[Any] = ["wrong_tool_count"] + (["invalid_value"] if seen else [])
    what = f"; {', '.join(site.call.outputs)} now refer to nothing" if dangling else ""
    return site.make(variant, [c.model_copy(deep=True) for c in calls[site.step : site.step + 1]], calls,
                     f"skipped the call to {site.call.name}{what}", expected_codes=codes,
                     expected_count=len(site.calls))  # fmt: skip


def _boundary(site: Site, sub_label: str) -> Injection | None:
    broken = bad_format(site, sub_label)
    if broken is not None and any(w in broken.description for w in ("range", "enum", "length", "items")):
        return broken
    tool = site.tools.get(site.call.name)
    keys = [k for k in literal_keys(site.call, tool.properties) if k in tool.required] if tool else []
    if not keys:
        return None
    key = site.pick(keys)
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = None
    calls = site.copy()
    calls[site.step] = wrong
    return site.make(sub_label, [wrong], calls, f"passed null for the required parameter {key!r}",
                     expected_codes=["empty_value"])  # fmt: skip


_ARGUMENT_MAKERS: dict[str, tuple[Any, str]] = {
    "argument.missing": (drop_required, "parameters_key_error"),
    "argument.wrong_type": (wrong_type, "parameters_value_error"),
    "argument.alias": (rename_key, "parameters_key_error"),
    "argument.boundary": (_boundary, "parameters_value_error"),
}


def _argument(site: Site) -> Injection | None:
    state = site.rng.getstate()
    possible = {}
    for name, (make, _) in _ARGUMENT_MAKERS.items():
        possible[name] = make(site, name) is not None
        site.rng.setstate(state)
    variant = site.choose_variant(possible)
    if variant is None:
        return None
    make, category = _ARGUMENT_MAKERS[variant]
    result: Injection = make(site, variant)
    return result.model_copy(update={"category": category})


def _register() -> None:
    for op in (
        Operator("call_order_swap", "reflection", "call_order_swap", ("swap.dependent",), _swap,
                 "P1: a call made before the call whose output it needs"),
        Operator("redundant_call", "reflection", "redundant_call", ("redundant.same_args", "redundant.other_args"),
                 _redundant, "P2: the same tool called again"),
        Operator("missing_call", "reflection", "missing_call", ("missing.dropped", "missing.dependency"),
                 _missing, "P3: a needed call left out"),
        Operator("argument_error", "reflection", "argument_error", tuple(_ARGUMENT_MAKERS), _argument,
                 "P4: arguments corrupted (missing, wrong type, alias, boundary)"),
    ):  # fmt: skip
        OPERATORS.add(op.name, op)


_register()
