"""What each checklist code means elsewhere: its CriticTool category and its nearest BFCL error type.

The checklist codes (:data:`toolmend.ErrorCode`) follow HiTEC's global checklist plus the few
extra cases BFCL and CriticTool need. Other tools speak other taxonomies; these tables translate
so that results can be compared with theirs.

>>> critictool_category("missing_required")
'parameters_key_error'
>>> bfcl_error_type("wrong_tool_name")
'simple_function_checker:wrong_func_name'
>>> critictool_category("wrong_tool_count") is None
True
"""

from __future__ import annotations

from typing import Literal

from toolmend.errors import ConfigError
from toolmend.schema import ERROR_CODES, ErrorCode

__all__ = [
    "BFCL_ERROR_TYPE",
    "CRITICTOOL_CATEGORY",
    "CritictoolCategory",
    "bfcl_error_type",
    "critictool_category",
    "describe",
]

CritictoolCategory = Literal[
    "tool_select_error", "tool_hallucination_error", "parameters_key_error", "parameters_value_error"
]
"""CriticTool's internal error categories, spelled as its evaluator compares them.

``tool_select_error`` (an existing but unsuitable tool) needs the task to judge, so no schema
finding maps to it."""

CRITICTOOL_CATEGORY: dict[ErrorCode, CritictoolCategory | None] = {
    "wrong_tool_name": "tool_hallucination_error",
    "missing_required": "parameters_key_error",
    "redundant_parameter": "parameters_key_error",
    # A value passed without its key is a key problem: the tool cannot tell which slot it fills.
    "positional_argument": "parameters_key_error",
    "invalid_type": "parameters_value_error",
    "empty_value": "parameters_value_error",
    "invalid_value": "parameters_value_error",
    # Format, chatter, count and duplicates are about the reply, not about one call's tool or
    # parameters; CriticTool's four internal categories have no place for them.
    "invalid_format": None,
    "redundant_information": None,
    "wrong_tool_count": None,
    "duplicate_call": None,
}

BFCL_ERROR_TYPE: dict[ErrorCode, str] = {
    "wrong_tool_name": "simple_function_checker:wrong_func_name",
    "missing_required": "simple_function_checker:missing_required",
    "redundant_parameter": "simple_function_checker:unexpected_param",
    "invalid_type": "type_error:simple",
    # BFCL compares an empty string with the acceptable values and fails it there.
    "empty_value": "value_error:string",
    "invalid_value": "value_error:others",
    "invalid_format": "ast_decoder:decoder_failed",
    # Prose around a call list makes BFCL's decoder fail or return something that is not a call list.
    "redundant_information": "ast_decoder:decoder_wrong_output_format",
    "wrong_tool_count": "simple_function_checker:wrong_count",
    # BFCL drops positional arguments silently, so the call then lacks the parameter.
    "positional_argument": "simple_function_checker:missing_required",
    # A repeated call makes the parallel checker see one call too many.
    "duplicate_call": "parallel_function_checker_no_order:wrong_count",
}

_DESCRIPTIONS: dict[ErrorCode, str] = {
    "wrong_tool_name": "the call names a tool that is not offered",
    "missing_required": "a required parameter is absent",
    "invalid_type": "a value has the wrong JSON type",
    "empty_value": "a value is empty or null where a real value is needed",
    "redundant_parameter": "a parameter the tool does not take",
    "invalid_format": "the output cannot be read as tool calls",
    "redundant_information": "text around the calls that should not be there",
    "wrong_tool_count": "more or fewer calls than the task needs",
    "invalid_value": "a value outside the allowed set, range or pattern",
    "positional_argument": "a value passed without its parameter name",
    "duplicate_call": "the same call, with the same arguments, made twice",
}

assert set(CRITICTOOL_CATEGORY) == set(ERROR_CODES) == set(BFCL_ERROR_TYPE) == set(_DESCRIPTIONS)


def _known(code: str) -> ErrorCode:
    if code not in CRITICTOOL_CATEGORY:
        raise ConfigError(f"unknown error code {code!r}; expected one of {', '.join(ERROR_CODES)}")
    return code


def critictool_category(code: str) -> CritictoolCategory | None:
    """CriticTool's category for a checklist code, or ``None`` where CriticTool has none.

    Raises ``ValueError`` for a string that is not a checklist code.
    """
    return CRITICTOOL_CATEGORY[_known(code)]


def bfcl_error_type(code: str, *, nested: bool = False) -> str:
    """The BFCL ``error_type`` nearest to a checklist code.

    ``nested=True`` picks ``type_error:nested`` for a type error inside an array or object, as
    BFCL labels those.

    >>> bfcl_error_type("invalid_type", nested=True)
    'type_error:nested'
    """
    known = _known(code)
    if known == "invalid_type" and nested:
        return "type_error:nested"
    return BFCL_ERROR_TYPE[known]


def describe(code: str) -> str:
    """A one-line, human description of a checklist code."""
    return _DESCRIPTIONS[_known(code)]
