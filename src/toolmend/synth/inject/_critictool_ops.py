"""CriticTool's error patterns as operators: the four internal, model-driven ones and the
external environment errors.

=====================  ==========================  =================================================
operator               label                       sub-labels
=====================  ==========================  =================================================
``tool_selection``     ``tool_select_error``       ``select.similar``: an offered tool other than
                                                   the right one, among the three most similar by
                                                   name and description, with arguments fitted to
                                                   its schema (a silent error: the call is valid)
``tool_hallucination`` ``tool_hallucination_error`` ``hallucination.synonym`` (``mail_send`` →
                                                   ``mail_post``), ``hallucination.variant``
                                                   (``_v2``, ``get_`` …): a name that is not offered
``parameter_key``      ``parameters_key_error``    ``key.drop_required``, ``key.alias`` (a declared
                                                   key renamed: ``city`` → ``location``),
                                                   ``key.add_irrelevant`` (a key the tool lacks,
                                                   often one another offered tool takes)
``parameter_value``    ``parameters_value_error``  ``value.wrong_type``, ``value.bad_format`` (breaks
                                                   the pattern, enum, range or length: a date as
                                                   ``25/07/2025``), ``value.empty``,
                                                   ``value.from_context`` (a valid value taken from
                                                   another argument or an earlier output)
``external_error``     ``environment_error``       ``env.<fault kind>``: the call is right, the
                                                   service fails (text from :mod:`toolmend.env`)
=====================  ==========================  =================================================
"""

from __future__ import annotations

from typing import Any

from toolmend._schema import Ref, Tool, ToolCall
from toolmend.env._faults import FAULT_KINDS, fault_response
from toolmend.synth.inject._model import OPERATORS, Injection, Operator
from toolmend.synth.inject._names import hallucinations, irrelevant_keys, key_aliases, similar_tools
from toolmend.synth.inject._site import Site
from toolmend.synth.inject._values import (
    break_format,
    context_values,
    literal_keys,
    mistype,
    sample_value,
    schema_types,
)

__all__ = [
    "drop_required",
    "rename_key",
    "add_irrelevant_key",
    "wrong_type",
    "bad_format",
    "empty_value",
]


def _tool(site: Site) -> Tool | None:
    tool = site.tools.get(site.call.name)
    return tool if isinstance(tool, Tool) else None


def _closed(tool: Tool) -> bool:
    return tool.parameters.get("additionalProperties") is not True


def _replace(site: Site, call: ToolCall) -> list[ToolCall]:
    calls = site.copy()
    calls[site.step] = call
    return calls


def _pool(site: Site, skip: tuple[int, str] | None = None) -> list[Any]:
    extra = [*site.context.outputs.values(), *site.context.responses]
    return context_values(site.calls, skip, extra)


# -- tool selection ---------------------------------------------------------------------------


def _fit_arguments(site: Site, original: ToolCall, tool: Tool) -> dict[str, Any]:
    """Arguments for ``tool`` from the original call: shared keys kept, required ones filled."""
    pool = _pool(site)
    args: dict[str, Any] = {}
    for key, schema in tool.properties.items():
        if key in original.arguments:
            args[key] = original.arguments[key]
        elif key in tool.required:
            types = schema_types(schema)
            fitting = [v for v in pool if not types or any(_is(v, t) for t in types)]
            args[key] = sample_value(schema, site.rng, fitting)
    probe = ToolCall(name=tool.name, arguments=args)
    for finding in site.checker.check_call(probe):
        key = finding.path.split(".", 1)[0].split("[", 1)[0]
        if key in args and key in tool.required:
            args[key] = sample_value(tool.properties.get(key), site.rng)
        elif key in args:
            del args[key]
    return args


def _is(value: Any, json_type: str) -> bool:
    from toolmend.check._coerce import matches_type

    return matches_type(value, json_type)


def _tool_selection(site: Site) -> Injection | None:
    tool = _tool(site)
    if tool is None or site.choose_variant({"select.similar": True}) is None:
        return None
    others = [t for t in site.tools.values() if isinstance(t, Tool)]
    candidates = similar_tools(tool, others)
    if not candidates:
        return None
    chosen = site.pick(candidates)
    call = site.call.model_copy(deep=True)
    wrong = ToolCall(
        name=chosen.name,
        arguments=_fit_arguments(site, call, chosen),
        id=call.id,
        outputs=call.outputs,
        output_fields=call.output_fields,
    )
    return site.make(
        "select.similar",
        [wrong],
        _replace(site, wrong),
        f"called {chosen.name} (an offered tool similar to the right one) instead of {tool.name}",
    )


# -- tool hallucination -----------------------------------------------------------------------


def _tool_hallucination(site: Site) -> Injection | None:
    if site.call.name not in site.tools:
        return None
    options = hallucinations(site.call.name, list(site.tools))
    by_kind = {k: [n for n, kind in options if kind == k] for k in ("synonym", "variant")}
    variant = site.choose_variant({f"hallucination.{k}": bool(v) for k, v in by_kind.items()})
    if variant is None:
        return None
    name = site.pick(by_kind[variant.split(".", 1)[1]][:4])
    wrong = site.call.model_copy(deep=True, update={"name": name})
    return site.make(
        variant,
        [wrong],
        _replace(site, wrong),
        f"called {name!r}, which is not an offered tool, instead of {site.call.name}",
        expected_codes=["wrong_tool_name"],
    )


# -- parameter keys ---------------------------------------------------------------------------


def drop_required(site: Site, sub_label: str = "key.drop_required") -> Injection | None:
    """Remove one present required key."""
    tool = _tool(site)
    present = [k for k in (tool.required if tool else []) if k in site.call.arguments]
    if not present:
        return None
    key = site.pick(present)
    wrong = site.call.model_copy(deep=True)
    del wrong.arguments[key]
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"left out the required parameter {key!r} of {site.call.name}",
                     expected_codes=["missing_required"])  # fmt: skip


def rename_key(site: Site, sub_label: str = "key.alias") -> Injection | None:
    """Rename one present key to a plausible alias the tool does not declare."""
    tool = _tool(site)
    if tool is None or not _closed(tool):
        return None
    keys = [k for k in site.call.arguments if key_aliases(k, tool.properties)]
    if not keys:
        return None
    key = site.pick(keys)
    alias = site.pick(key_aliases(key, tool.properties)[:3])
    wrong = site.call.model_copy(deep=True)
    wrong.arguments = {(alias if k == key else k): v for k, v in wrong.arguments.items()}
    codes: list[Any] = ["redundant_parameter"] + (["missing_required"] if key in tool.required else [])
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"passed {key!r} of {site.call.name} under the name {alias!r}",
                     expected_codes=codes)  # fmt: skip


def add_irrelevant_key(site: Site, sub_label: str = "key.add_irrelevant") -> Injection | None:
    """Add a key the tool does not take, preferring one that another offered tool takes."""
    tool = _tool(site)
    if tool is None or not _closed(tool):
        return None
    keys = [k for k in irrelevant_keys(tool, [t for t in site.tools.values() if isinstance(t, Tool)])
            if k not in site.call.arguments]  # fmt: skip
    if not keys:
        return None
    key = site.pick(keys[:8])
    owner = next((t for t in site.tools.values() if isinstance(t, Tool) and key in t.properties), None)
    value = sample_value(owner.properties[key] if owner else {"type": "boolean"}, site.rng, _pool(site))
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = value
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"added {key!r}, which {site.call.name} does not take",
                     expected_codes=["redundant_parameter"])  # fmt: skip


def _parameter_key(site: Site) -> Injection | None:
    makers = {"key.drop_required": drop_required, "key.alias": rename_key,
              "key.add_irrelevant": add_irrelevant_key}  # fmt: skip
    return _first_variant(site, makers)


def _first_variant(site: Site, makers: dict[str, Any]) -> Injection | None:
    # Try each variant on a throwaway copy of the generator to learn which apply, then let the
    # seeded choice pick one and run it for real, so applicability never depends on the seed.
    state = site.rng.getstate()
    possible = {}
    for name, make in makers.items():
        possible[name] = make(site, name) is not None
        site.rng.setstate(state)
    variant = site.choose_variant(possible)
    if variant is None:
        return None
    result: Injection | None = makers[variant](site, variant)
    return result


# -- parameter values -------------------------------------------------------------------------


def _value_site(site: Site) -> tuple[Tool, list[str]] | None:
    tool = _tool(site)
    if tool is None:
        return None
    return tool, literal_keys(site.call, tool.properties)


def wrong_type(site: Site, sub_label: str = "value.wrong_type") -> Injection | None:
    """Give one literal argument a value of another JSON type."""
    found = _value_site(site)
    if found is None:
        return None
    tool, keys = found
    keys = [k for k in keys if mistype(site.call.arguments[k], tool.properties[k], site.rng) is not None]
    if not keys:
        return None
    key = site.pick(keys)
    value = mistype(site.call.arguments[key], tool.properties[key], site.rng)
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = value
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"passed {key!r} as {value!r} instead of {site.call.arguments[key]!r} (wrong type)",
                     expected_codes=["invalid_type"])  # fmt: skip


def bad_format(site: Site, sub_label: str = "value.bad_format") -> Injection | None:
    """Give one literal argument a value that breaks its pattern, enum, range or length."""
    found = _value_site(site)
    if found is None:
        return None
    tool, keys = found
    keys = [k for k in keys if break_format(site.call.arguments[k], tool.properties[k], site.rng)]
    if not keys:
        return None
    key = site.pick(keys)
    broken = break_format(site.call.arguments[key], tool.properties[key], site.rng)
    assert broken is not None
    value, what = broken
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = value
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"wrote {key!r} as {value!r}, which breaks its {what} (was {site.call.arguments[key]!r})",
                     expected_codes=["invalid_value"])  # fmt: skip


def empty_value(site: Site, sub_label: str = "value.empty") -> Injection | None:
    """Leave one literal string argument empty."""
    found = _value_site(site)
    if found is None:
        return None
    tool, keys = found

    def empties(key: str) -> bool:
        schema = tool.properties[key]
        enum = schema.get("enum")
        return (
            "string" in schema_types(schema)
            and isinstance(site.call.arguments[key], str)
            and site.call.arguments[key] != ""
            and not (isinstance(enum, list) and "" in enum)
            # An empty string the schema's own default gives is a value the tool takes, not an
            # empty value (the checker agrees: toolmend.check's empty_value rule).
            and schema.get("default") != ""
        )

    keys = [k for k in keys if empties(k)]
    if not keys:
        return None
    key = site.pick(keys)
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = ""
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"left {key!r} empty instead of {site.call.arguments[key]!r}",
                     expected_codes=["empty_value"])  # fmt: skip


def _bound_before(site: Site) -> list[str]:
    return [o for c in site.calls[: site.step] for o in c.outputs]


def from_context(site: Site, sub_label: str = "value.from_context") -> Injection | None:
    """Swap one argument for a valid value found elsewhere: another argument, an earlier
    output, or another earlier reference. The call still passes the schema."""
    tool = _tool(site)
    if tool is None:
        return None
    options: list[tuple[str, Any]] = []
    for key, current in site.call.arguments.items():
        if isinstance(current, Ref):
            base = current.head
            options += [(key, Ref(target=o)) for o in _bound_before(site) if o != base]
            continue
        if key not in tool.properties or current is None or isinstance(current, dict | list):
            continue
        for v in _pool(site, (site.step, key)):
            if type(v) is type(current) and v != current:
                options.append((key, v))
    valid = []
    for key, value in options:
        probe = site.call.model_copy(deep=True)
        probe.arguments[key] = value
        if not site.checker.check_call(probe):
            valid.append((key, value))
    if not valid:
        return None
    key, value = site.pick(valid[:12])
    wrong = site.call.model_copy(deep=True)
    wrong.arguments[key] = value
    return site.make(sub_label, [wrong], _replace(site, wrong),
                     f"passed {key!r} = {value!r}, taken from elsewhere in the context, "
                     f"instead of {site.call.arguments[key]!r}")  # fmt: skip


def _parameter_value(site: Site) -> Injection | None:
    makers = {"value.wrong_type": wrong_type, "value.bad_format": bad_format,
              "value.empty": empty_value, "value.from_context": from_context}  # fmt: skip
    return _first_variant(site, makers)


# -- external environment errors --------------------------------------------------------------


def _external(site: Site) -> Injection | None:
    kind = site.choose_variant({f"env.{k}": True for k in FAULT_KINDS})
    if kind is None:
        return None
    fault = kind.split(".", 1)[1]
    response = fault_response(fault, site.call.name)  # type: ignore[arg-type]
    return site.make(
        kind,
        [site.call.model_copy(deep=True)],
        site.copy(),
        f"the call to {site.call.name} is right but the service failed: {response.content}",
        response=response.model_dump(mode="json"),
    )


def _register() -> None:
    for op in (
        Operator("tool_selection", "critictool", "tool_select_error", ("select.similar",), _tool_selection,
                 "an existing but wrong tool, similar to the right one", "tool_select_error"),
        Operator("tool_hallucination", "critictool", "tool_hallucination_error",
                 ("hallucination.synonym", "hallucination.variant"), _tool_hallucination,
                 "a plausible tool name that is not offered", "tool_hallucination_error"),
        Operator("parameter_key", "critictool", "parameters_key_error",
                 ("key.drop_required", "key.alias", "key.add_irrelevant"), _parameter_key,
                 "a required key dropped, a key renamed, or an irrelevant key added", "parameters_key_error"),
        Operator("parameter_value", "critictool", "parameters_value_error",
                 ("value.wrong_type", "value.bad_format", "value.empty", "value.from_context"),
                 _parameter_value, "a wrong type, a broken format, an empty value or a value from elsewhere",
                 "parameters_value_error"),
        Operator("external_error", "external", "environment_error", tuple(f"env.{k}" for k in FAULT_KINDS),
                 _external, "a correct call that the environment fails (timeout, rate limit ...)"),
    ):  # fmt: skip
        OPERATORS.add(op.name, op)


_register()
