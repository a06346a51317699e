"""HiTEC's global error checklist (errors 0-7) as operators; each label is the checklist code
the error maps to, and ``Injection.hitec_type`` keeps HiTEC's number.

The numbering follows the paper's §3.1.1 (its appendix templates count from 2 and shift by
one). HiTEC builds KTO negatives by asking a model to put exactly one of these errors into the
gold call; these operators do the same by rule.

====  ==========================  =========================  =========================================
  #   HiTEC error                 operator / label           what is done
====  ==========================  =========================  =========================================
  0   Wrong Tool Name             ``hitec_wrong_tool_name``  a misspelt name (``name.misspelled``) or a
                                  / ``wrong_tool_name``      made-up one (``name.made_up``)
  1   Missing Required Parameter  ``hitec_missing_required`` a present required key removed
  2   Invalid Parameter Type      ``hitec_invalid_type``     a literal value given another JSON type
  3   Empty Parameter Value       ``hitec_empty_value``      a string value emptied
  4   Redundant Parameter         ``hitec_redundant_         HiTEC's sense first: a *declared* optional
                                  parameter``                parameter the request did not ask for
                                                             (``redundant.unrequested_optional``; only
                                                             the task can tell, so not detectable);
                                                             when the tool has none left, as HiTEC
                                                             says, another error: an undeclared key
                                                             (``redundant.undeclared``)
  5   Invalid Output Format       ``hitec_invalid_format``   the step written out unparsably
                                                             (``Injection.text``): cut off, an
                                                             unclosed tag, Python-literal quoting
  6   Redundant Information       ``hitec_redundant_         the step's call wrapped in chatter
                                  information``              (``Injection.text``)
  7   Wrong Number of Tools       ``hitec_wrong_tool_count`` the step's call left out or made twice
====  ==========================  =========================  =========================================
"""

from __future__ import annotations

import json
from typing import Any

from toolmend._schema import Tool, ToolCall
from toolmend.formats import write_calls
from toolmend.synth.inject._critictool_ops import add_irrelevant_key, drop_required, empty_value, wrong_type
from toolmend.synth.inject._model import OPERATORS, Injection, Operator
from toolmend.synth.inject._names import hallucinations
from toolmend.synth.inject._site import Site
from toolmend.synth.inject._values import context_values, sample_value

__all__: list[str] = []


def _replace(site: Site, call: ToolCall) -> list[ToolCall]:
    calls = site.copy()
    calls[site.step] = call
    return calls


def _misspellings(name: str, taken: set[str]) -> list[str]:
    out = []
    for j in range(1, len(name) - 1):
        dropped = name[:j] + name[j + 1 :]
        swapped = name[:j] + name[j + 1] + name[j] + name[j + 2 :]
        for c in (dropped, swapped):
            if c not in taken and c != name and c not in out:
                out.append(c)
    return out


def _wrong_name(site: Site) -> Injection | None:
    if site.call.name not in site.tools:
        return None
    taken = set(site.tools)
    typos = _misspellings(site.call.name, taken) if len(site.call.name) > 3 else []
    made_up = [n for n, _ in hallucinations(site.call.name, list(taken))]
    variant = site.choose_variant({"name.misspelled": bool(typos), "name.made_up": bool(made_up)})
    if variant is None:
        return None
    name = site.pick(typos if variant == "name.misspelled" else made_up[:4])
    wrong = site.call.model_copy(deep=True, update={"name": name})
    return site.make(variant, [wrong], _replace(site, wrong), f"called {name!r} instead of {site.call.name!r}",
                     expected_codes=["wrong_tool_name"])  # fmt: skip


def _delegate(maker: Any, sub_label: str) -> Any:
    def apply(site: Site) -> Injection | None:
        if site.choose_variant({sub_label: True}) is None:
            return None
        result: Injection | None = maker(site, sub_label)
        return result

    return apply


def _unrequested_optional(site: Site) -> Injection | None:
    tool = site.tools.get(site.call.name)
    if not isinstance(tool, Tool):
        return None
    pool = context_values(site.calls, None, [])
    options = []
    for key in tool.properties:
        if key in tool.required or key in site.call.arguments:
            continue
        probe = site.call.model_copy(deep=True)
        probe.arguments[key] = sample_value(tool.properties[key], site.rng, pool)
        # HiTEC's redundant parameter is declared and well-formed; only the request rules it out.
        if not site.checker.check_call(probe):
            options.append((key, probe))
    if not options:
        return None
    key, wrong = site.pick(options)
    value = wrong.arguments[key]
    return site.make("redundant.unrequested_optional", [wrong], _replace(site, wrong),
                     f"filled the optional parameter {key!r} = {value!r}, which the request does not ask for",
                     expected_codes=["redundant_parameter"], detectable=False)  # fmt: skip


def _redundant_parameter(site: Site) -> Injection | None:
    if site.variant in (None, "redundant.unrequested_optional"):
        found = _unrequested_optional(site)
        if found is not None or site.variant is not None:
            return found
    if site.variant not in (None, "redundant.undeclared"):
        return None
    return add_irrelevant_key(site, "redundant.undeclared")


def _render(site: Site, variant: str) -> str:
    call = site.call
    data = [{"name": call.name, "arguments": call.model_dump(mode="json")["arguments"]}]
    full = json.dumps(data)
    if variant == "format.cut_off":
        start = full.index('"arguments"') + len('"arguments"')
        cut = site.rng.randrange(start, len(full) - 2)
        return full[:cut]
    if variant == "format.unclosed_tag":
        return write_calls([call], "tags").rsplit("</tool_call>", 1)[0].rstrip()
    return repr(data)  # Python literal quoting: not JSON


def _invalid_format(site: Site) -> Injection | None:
    quoting = "'" in repr([site.call.model_dump(mode="json")["arguments"]]) or bool(site.call.arguments)
    variant = site.choose_variant({"format.cut_off": True, "format.unclosed_tag": True,
                                   "format.python_literal": quoting})  # fmt: skip
    if variant is None:
        return None
    text = _render(site, variant)
    return site.make(variant, [site.call.model_copy(deep=True)], site.copy(),
                     f"wrote the call to {site.call.name} in a broken format ({variant.split('.')[1]})",
                     expected_codes=["invalid_format"], text=text)  # fmt: skip


_PREAMBLES = (
    "Let me look that up for you with the right tool.",
    "To answer this I need to call a tool first. Here is the call:",
    "Okay! I'll use the following function call to handle your request.",
)
_AFTERWORDS = (
    "This call should give us what we need.",
    "Once the tool answers, I will summarise the result for you.",
)


def _redundant_information(site: Site) -> Injection | None:
    variant = site.choose_variant({"info.preamble": True, "info.afterword": True})
    if variant is None:
        return None
    body = write_calls([site.call], "json")
    text = (
        f"{site.pick(_PREAMBLES)}\n{body}"
        if variant == "info.preamble"
        else f"{body}\n{site.pick(_AFTERWORDS)}"
    )
    return site.make(variant, [site.call.model_copy(deep=True)], site.copy(),
                     f"wrapped the call to {site.call.name} in chatter",
                     expected_codes=["redundant_information"], text=text)  # fmt: skip


def _wrong_count(site: Site) -> Injection | None:
    variant = site.choose_variant({"count.missing": True, "count.extra": True})
    if variant is None:
        return None
    calls = site.copy()
    if variant == "count.missing":
        del calls[site.step]
        return site.make(variant, calls[site.step : site.step + 1], calls,
                         f"left out the call to {site.call.name}", expected_codes=["wrong_tool_count"],
                         expected_count=len(site.calls))  # fmt: skip
    extra = site.call.model_copy(deep=True, update={"outputs": [], "output_fields": [], "id": None})
    calls.insert(site.step + 1, extra)
    return site.make(variant, [extra.model_copy(deep=True)], calls, f"called {site.call.name} one time too many",
                     original=[], step=site.step + 1, expected_codes=["wrong_tool_count"],
                     expected_count=len(site.calls))  # fmt: skip


def _register() -> None:
    specs: list[tuple[int, str, tuple[str, ...], Any, str]] = [
        (0, "wrong_tool_name", ("name.misspelled", "name.made_up"), _wrong_name, "a tool name that is not offered"),
        (1, "missing_required", ("missing.required",), _delegate(drop_required, "missing.required"),
         "a required parameter left out"),
        (2, "invalid_type", ("type.wrong",), _delegate(wrong_type, "type.wrong"), "a value of the wrong type"),
        (3, "empty_value", ("empty.string",), _delegate(empty_value, "empty.string"), "an empty value"),
        (4, "redundant_parameter", ("redundant.unrequested_optional", "redundant.undeclared"), _redundant_parameter,
         "a parameter the request does not need"),
        (5, "invalid_format", ("format.cut_off", "format.unclosed_tag", "format.python_literal"), _invalid_format,
         "an output that cannot be parsed"),
        (6, "redundant_information", ("info.preamble", "info.afterword"), _redundant_information,
         "chatter around the call"),
        (7, "wrong_tool_count", ("count.missing", "count.extra"), _wrong_count, "one call too few or too many"),
    ]  # fmt: skip
    categories = {0: "tool_hallucination_error", 1: "parameters_key_error", 2: "parameters_value_error",
                  3: "parameters_value_error", 4: "parameters_key_error"}  # fmt: skip
    for number, code, variants, apply, summary in specs:
        name = f"hitec_{code}"
        OPERATORS.add(name, Operator(name, "hitec", code, variants, apply, f"HiTEC error {number}: {summary}",
                                     categories.get(number), number))  # fmt: skip


_register()
