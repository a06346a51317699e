"""The checker on real data: no false alarm on any gold call, and every injected error found."""

from __future__ import annotations

import json
from typing import Any

from toolmend._schema import ToolCall
from toolmend.check import Checker, check, repair


def test_bfcl_gold_checks_clean(bfcl_cases: list[Any]) -> None:
    assert sum(len(c.calls) for c in bfcl_cases) >= 1900
    alarms = [
        (case.id, f.code, f.path, f.message)
        for case in bfcl_cases
        for f in check(case.calls, case.tools, expected_count=len(case.calls))
    ]
    assert alarms == []


def test_nestools_gold_chains_check_clean(nestools_cases: list[Any]) -> None:
    assert len(nestools_cases) == 1000
    alarms = [
        (case.id, f.code, f.path, f.message) for case in nestools_cases for f in check(case.calls, case.tools)
    ]
    assert alarms == []


def _dump(calls: list[ToolCall]) -> str:
    return json.dumps([[c.name, c.model_dump()["arguments"]] for c in calls], sort_keys=True)


def _rates(cases: list[Any], injectors: dict[str, Any]) -> dict[str, tuple[int, float, float]]:
    out = {}
    for code, inject in injectors.items():
        applicable = found = restored = 0
        for case in cases:
            checker = Checker(case.tools)
            gold = _dump(case.calls)
            for i in range(len(case.calls)):
                injected = inject(case, i)
                if injected is None:
                    continue
                calls, expected = injected
                applicable += 1
                codes = {f.code for f in checker.check(calls, expected)}
                found += code in codes
                restored += _dump(repair(calls, checker, expected).calls) == gold
        out[code] = (applicable, found / applicable, restored / applicable)
    return out


def test_every_injected_error_is_detected_and_repair_rates(
    bfcl_cases: list[Any], injectors: dict[str, Any]
) -> None:
    rates = _rates(bfcl_cases, injectors)
    print("\ncode                  injected  detected  repaired-to-gold")
    for code, (n, det, rep) in rates.items():
        print(f"{code:<22}{n:>8}  {det:>8.2%}  {rep:>8.2%}")
    for code, (n, det, _) in rates.items():
        assert n >= 20, (code, n)
        assert det >= 0.99, (code, det)
    # Repair can only restore what carries no lost information.
    assert rates["missing_required"][2] == 0.0
    assert rates["wrong_tool_count"][2] == 0.0
    assert rates["duplicate_call"][2] == 1.0
    assert rates["redundant_parameter"][2] >= 0.99
