from __future__ import annotations

import pytest

from toolmend.check import bfcl_error_type, critictool_category, describe
from toolmend.errors import ConfigError
from toolmend.schema import ERROR_CODES


def test_every_code_has_both_mappings_and_a_description() -> None:
    for code in ERROR_CODES:
        assert critictool_category(code) in (
            None,
            "tool_hallucination_error",
            "parameters_key_error",
            "parameters_value_error",
        )
        assert ":" in bfcl_error_type(code)
        assert describe(code)


@pytest.mark.parametrize(
    ("code", "category", "bfcl"),
    [
        ("wrong_tool_name", "tool_hallucination_error", "simple_function_checker:wrong_func_name"),
        ("missing_required", "parameters_key_error", "simple_function_checker:missing_required"),
        ("redundant_parameter", "parameters_key_error", "simple_function_checker:unexpected_param"),
        ("invalid_type", "parameters_value_error", "type_error:simple"),
        ("invalid_value", "parameters_value_error", "value_error:others"),
        ("wrong_tool_count", None, "simple_function_checker:wrong_count"),
    ],
)
def test_mappings(code: str, category: str | None, bfcl: str) -> None:
    assert critictool_category(code) == category
    assert bfcl_error_type(code) == bfcl


def test_nested_type_error_and_unknown_code() -> None:
    assert bfcl_error_type("invalid_type", nested=True) == "type_error:nested"
    assert bfcl_error_type("missing_required", nested=True) == "simple_function_checker:missing_required"
    with pytest.raises(ConfigError, match="unknown error code 'typo'"):
        critictool_category("typo")
