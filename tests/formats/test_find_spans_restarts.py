"""``find_spans`` answers restarts from what earlier scans saw (issue 16, item 7): it must find
exactly the spans of the plain algorithm that rescans from every restart."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend.formats._lenient import (
    _MAX_RESTARTS,
    _OPEN,
    Span,
    _next_opener,
    _opens_single_quote,
    find_spans,
)


def rescanning_spans(text: str, openers: str = "{[") -> list[Span]:
    """The definition: scan from each opener; an unclosed region restarts after its opener."""
    spans: list[Span] = []
    pos, restarts, n = 0, 0, len(text)
    while pos < n:
        start = _next_opener(text, pos, openers)
        if start < 0:
            break
        stack: list[str] = []
        i, quote = start, None
        while i < n:
            c = text[i]
            if quote is not None:
                if c == "\\":
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c == '"' or (c == "'" and _opens_single_quote(text, i)):
                quote = c
            elif c in _OPEN:
                stack.append(_OPEN[c])
            elif c in "}]" and stack and c == stack[-1]:
                stack.pop()
                if not stack:
                    break
            i += 1
        if stack:
            spans.append(Span(start, n, False))
            restarts += 1
            if restarts > _MAX_RESTARTS:
                break
            pos = start + 1
        else:
            spans.append(Span(start, i + 1, True))
            pos = i + 1
    return sorted(spans, key=lambda s: s.start)


PIECES = ["{", "}", "[", "]", '"', "'", "\\", "a", " ", ":", ",", "x'y", '{"a": ', "]}"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.sampled_from(["{[", "{", "["]))
def test_restarts_find_what_rescanning_finds(text: str, openers: str) -> None:
    assert find_spans(text, openers) == rescanning_spans(text, openers)


def test_a_run_of_openers_restarts_the_allowed_number_of_times() -> None:
    text = "{" * 5000 + '{"name": "f"}'
    assert find_spans(text) == rescanning_spans(text)
    assert len(find_spans(text)) == _MAX_RESTARTS + 1
