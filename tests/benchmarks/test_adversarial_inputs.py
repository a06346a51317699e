"""Parsers and scorers on a model's degenerate repetition (issue 16, item 7).

Two properties: the linear extractors of Tool-Reflection-Bench find exactly what the harness's
regexes find, and every parser and scorer takes any fragment repeated up to 1 MB as data (no
exception). How time grows with the size is measured by ``benchmarks/adversarial_scaling.py``,
not asserted here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolmend.benchmarks import BENCHMARKS, load_builtin_benchmarks
from toolmend.benchmarks.bfcl._decode import classify_output, decode
from toolmend.benchmarks.reflection_bench import _tags as tags
from toolmend.formats import parse_calls

# The harness's patterns, as the official scorer writes them (see notes/benchmarks.md §3).
OFFICIAL_BLOCK = re.compile(r"<tool_call>\s*({.*?})\s*</tool_call>", re.DOTALL)
OFFICIAL_UNCLOSED = re.compile(r"<tool_call>\s*\{[^}]*$", re.DOTALL)
OFFICIAL_BARE = re.compile(
    r'(?<!<tool_call>)\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:\s*\{[^}]*\}\s*\}(?!\s*</tool_call>)'
)
CALL_BLOCK = re.compile(r"<(tool_call|call)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

PIECES = ["{", "}", " ", '"name"', ":", '"f"', ",", '"arguments"', "<tool_call>", "</tool_call>",
          "<call>", "</CALL>", "\n", "x", "<TOOL_CALL>", '"', "<think>", "</think>"]  # fmt: skip
FRAGMENTS = ["a", " ", "a(", "f(a=", "a.", "{", "{}", "[", "(", '"', "'", "}", '{"name": ',
             '{"name": "f", "arguments": {', "<tool_call>", "<tool_call>{", "</tool_call>",
             "<call>", "<reflect>", "<final>", "<think>", "</think>", "< ", "```json\n",
             "api_name", "[f(a=1), ", "f(a=1)\n", "f(a=1) x "]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_linear_extractors_find_what_the_harness_regexes_find(text: str) -> None:
    assert [b for _, _, b in tags._official_blocks(text)] == OFFICIAL_BLOCK.findall(text)
    assert tags._official_unclosed(text) == bool(OFFICIAL_UNCLOSED.search(text))
    assert tags._official_bare(text) == bool(OFFICIAL_BARE.search(text))
    assert tags._bodies(text, tags._CALL) == [body for _, body in CALL_BLOCK.findall(text)]
    assert tags.remove_think(text) == re.sub(r"\n\s*\n", "\n", THINK.sub("", text)).strip()


CRITICTOOL_FIXTURES = Path(__file__).parent / "fixtures" / "critictool"


class _Scorers(list):  # type: ignore[type-arg]
    """The (benchmark, sample, mode) triples; a short repr, as Hypothesis prints its arguments."""

    def __repr__(self) -> str:
        return f"<{len(self)} scorers>"


@pytest.fixture(scope="module")
def scorers(data_dir: Path) -> list[Any]:
    load_builtin_benchmarks()
    get = {n: BENCHMARKS.get(n)() for n in ("bfcl", "reflection-bench", "nestools", "critictool",
                                            "toolalpaca", "api-bank", "seal-tools")}  # fmt: skip
    bfcl = get["bfcl"]
    pairs = [
        (bfcl, bfcl.load(data_dir / "bfcl", categories=["irrelevance"])[0]),
        (bfcl, bfcl.load(data_dir / "bfcl", categories=["simple_python"])[0]),
        (get["reflection-bench"], get["reflection-bench"].load(data_dir / "tool-reflection-bench")[0]),
        (get["nestools"], get["nestools"].load(data_dir / "nestools", limit=1)[0]),
        # The shared folder has no CriticTool files (Hub only); the fixtures follow its layout.
        (get["critictool"], get["critictool"].load(CRITICTOOL_FIXTURES)[0]),
        *((get[n], get[n].load(data_dir / n)[0]) for n in ("toolalpaca", "api-bank", "seal-tools")),
    ]
    return _Scorers((b, s, mode) for b, s in pairs for mode in ("compat", "improved"))


def _repeat(fragment: str, size: int) -> str:
    return (fragment * (size // len(fragment) + 1))[:size]


@settings(max_examples=5, deadline=None)
@given(fragment=st.sampled_from(FRAGMENTS), size=st.one_of(st.integers(1, 4096), st.just(1_000_000)))
def test_parsers_take_a_megabyte_of_repetition(fragment: str, size: int) -> None:
    text = _repeat(fragment, size)
    result = parse_calls(text)
    assert not any(f.data.get("internal_error") for f in result.findings)
    assert classify_output(text, decode(text), ["calculate_area"]) in (
        "abstained",
        "call",
        "malformed",
        "text",
    )
    tags.official_calls(text)
    tags.split_reply(text)


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fragment=st.sampled_from(FRAGMENTS), size=st.integers(1, 65_536), which=st.integers(0, 15))
def test_scorers_take_degenerate_repetition(scorers: list[Any], fragment: str, size: int, which: int) -> None:
    assert len(scorers) == 16  # eight samples, two modes: the range of ``which``
    bench, sample, mode = scorers[which]
    score = bench.score(sample, _repeat(fragment, size), mode)
    assert all(v is None or isinstance(v, float) for v in score.values.values())


# The fragments that drove a scorer into a quadratic regex, a parser's MemoryError or a slow
# loop before (issue 16, item 7), each at 1 MB through every scorer in both modes.
MEGABYTE_FRAGMENTS = [
    "a",
    "<tool_call>",
    "<tool_call></tool_call>",
    "<tool_call>{",
    "{",
    "[f(a=1), ",
    "f(a=1)\n",
]


@pytest.mark.parametrize("fragment", MEGABYTE_FRAGMENTS)
def test_scorers_take_a_megabyte_of_repetition(scorers: list[Any], fragment: str) -> None:
    text = _repeat(fragment, 1_000_000)
    for bench, sample, mode in scorers:
        score = bench.score(sample, text, mode)
        assert all(v is None or isinstance(v, float) for v in score.values.values()), (bench.name, mode)
