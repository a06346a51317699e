"""``tool_choice`` enforced while decoding by the hf backend: the opening a forced call must write,
and the token mask that writes it (on a small made-up vocabulary and real torch tensors)."""

from __future__ import annotations

import pytest

from toolmend._errors import ConfigError
from toolmend._schema import Tool
from toolmend.models._hf import CALL_OPENING, ForcedOpening, call_openings

torch = pytest.importorskip("torch")

CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [Tool(name="get_weather", parameters=CITY), Tool(name="get_time", parameters=CITY)]
# A vocabulary whose pieces cut the opening in several places, with one token (``": "``) running
# past its end, one that decodes to nothing, and prose.
PIECES = ['<tool_call>\n{"name": "', "get", "_", "weather", "time", '", "arguments": ', "{", '{"', "",
          "The", " answer", "<", "tool", "city", '": ', '": "']  # fmt: skip
OPENING = '<tool_call>\n{{"name": "{}", "arguments": {{"city": '


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
    assert call_openings(TOOLS, "required") == [OPENING.format("get_weather"), OPENING.format("get_time")]
    assert call_openings(TOOLS, "get_time") == [CALL_OPENING.format(name="get_time") + '"city": ']
    assert call_openings([Tool(name="now")], "required") == ['<tool_call>\n{"name": "now", "arguments": {}']
    with pytest.raises(ConfigError, match="'nope'"):
        call_openings(TOOLS, "nope")


def test_a_forced_row_writes_an_opening_the_model_prefers_and_then_decodes_freely() -> None:
    mask = ForcedOpening(PIECES, [call_openings(TOOLS, "required")], prompt_len=2)
    # The "model" prefers prose, then "time" over "weather": the opening names get_time, and once it
    # is written (the ": " token runs past it) the model's prose comes back.
    text = _greedy(mask, prefer=[9, 10, 8, 4, 3, 15, 14, 7, 6, 0, 1, 2, 5, 13], steps=10)
    assert text.startswith(OPENING.format("get_time") + '"')
    assert text.endswith("The" * 2) and "weather" not in text


def test_a_free_row_is_left_alone_and_a_named_choice_is_kept() -> None:
    free = ForcedOpening(PIECES, [None], prompt_len=2)
    assert _greedy(free, prefer=[9], steps=2) == "TheThe"
    named = ForcedOpening(PIECES, [call_openings(TOOLS, "get_weather")], prompt_len=2)
    assert _greedy(named, prefer=[4, 9, 7, 0, 1, 2, 3, 5, 6, 13, 14], steps=8) == OPENING.format(
        "get_weather"
    )


def test_allowed_never_offers_an_empty_piece() -> None:
    mask = ForcedOpening(PIECES, [None], prompt_len=0)
    allowed = mask.allowed("", [OPENING.format("get_time")])
    assert allowed is not None and 8 not in allowed and set(allowed) == {0, 11}
    assert mask.allowed(OPENING.format("get_time") + '"', [OPENING.format("get_time")]) is None
