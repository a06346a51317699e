"""``tool_choice`` enforced while decoding by the hf backend: the opening a forced call must write,
and the token mask that writes it (on a small made-up vocabulary and real torch tensors)."""

from __future__ import annotations

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Tool
from toolmend.models._hf import CALL_OPENING, ForcedOpening, call_openings

torch = pytest.importorskip("torch")

TOOLS = [Tool(name="get_weather"), Tool(name="get_time")]
# A vocabulary whose pieces cut the opening in several places, with one token (``{"``) running
# past its end, one that decodes to nothing, and prose.
PIECES = ['<tool_call>\n{"name": "', "get", "_", "weather", "time", '", "arguments": ', "{", '{"', "",
          "The", " answer", "<", "tool"]  # fmt: skip


def _greedy(mask: ForcedOpening, prefer: list[int], steps: int) -> str:
    """Decode ``steps`` tokens from a prompt of two tokens, preferring tokens in the order
    ``prefer`` (the "model"), under ``mask``."""
    ids = torch.tensor([[9, 10]])
    for _ in range(steps):
        scores = torch.zeros(1, len(PIECES))
        for rank, token in enumerate(prefer):
            scores[0, token] = len(prefer) - rank
        token = int(mask(ids, scores)[0].argmax())
        ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    return "".join(PIECES[int(t)] for t in ids[0, 2:])


def test_openings_follow_the_choice() -> None:
    assert call_openings(TOOLS, None) is None and call_openings(TOOLS, "auto") is None
    assert call_openings(TOOLS, "none") is None and call_openings([], "required") is None
    assert call_openings(TOOLS, "required") == [CALL_OPENING.format(name=n) for n in ("get_weather", "get_time")]
    assert call_openings(TOOLS, "get_time") == ['<tool_call>\n{"name": "get_time", "arguments": {']
    with pytest.raises(ConfigError, match="'nope'"):
        call_openings(TOOLS, "nope")


def test_a_forced_row_writes_an_opening_the_model_prefers_and_then_decodes_freely() -> None:
    mask = ForcedOpening(PIECES, [call_openings(TOOLS, "required")], prompt_len=2)
    # The "model" prefers prose, then "time" over "weather": the opening names get_time, and once it
    # is written (the {" token runs past it) the model's prose comes back.
    text = _greedy(mask, prefer=[9, 10, 8, 4, 3, 7, 6, 0, 1, 2, 5], steps=9)
    assert text.startswith('<tool_call>\n{"name": "get_time", "arguments": {"')
    assert text.endswith("The" * 3)


def test_a_free_row_is_left_alone_and_a_named_choice_is_kept() -> None:
    free = ForcedOpening(PIECES, [None], prompt_len=2)
    assert _greedy(free, prefer=[9], steps=2) == "TheThe"
    named = ForcedOpening(PIECES, [call_openings(TOOLS, "get_weather")], prompt_len=2)
    assert _greedy(named, prefer=[4, 9, 7, 0, 1, 2, 3, 5, 6], steps=6).startswith(
        '<tool_call>\n{"name": "get_weather", "arguments": {"'
    )


def test_allowed_never_offers_an_empty_piece() -> None:
    mask = ForcedOpening(PIECES, [None], prompt_len=0)
    allowed = mask.allowed("", ['<tool_call>\n{"name": "get_time", "arguments": {'])
    assert allowed is not None and 8 not in allowed and set(allowed) == {0, 11}
    assert mask.allowed('<tool_call>\n{"name": "get_time", "arguments": {"', ["<tool_call>\n"]) is None
