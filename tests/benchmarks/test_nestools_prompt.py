"""NesTools prompt and candidate lists (fake encoder for the logic, the real one once, small)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from toolmend._errors import ConfigError
from toolmend.benchmarks.nestools import NesTools, load_nestools
from toolmend.benchmarks.nestools._prompt import (
    DEFAULT_TEMPLATE,
    build_candidates,
    render_prompt,
    render_tool,
)


class HashingEncoder:
    """Bag of hashed words, L2-normalised: a tiny real encoder for tests."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace(":", " ").replace("_", " ").split():
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


@pytest.fixture(scope="module")
def samples(data_dir: Path) -> list:
    return load_nestools(data_dir / "nestools", limit=80)


def test_default_prompt_asks_for_the_published_format(samples: list) -> None:
    bench = NesTools(distractors=0)
    (msg,) = bench.prompt(samples[0])
    assert msg.role == "user"
    assert '"api_id": 9031' in msg.content and samples[0].metadata["task"] in msg.content
    for phrase in ("API_call_", '"UNK"', '"responses"', '"parameters"'):
        assert phrase in msg.content
    first_api = json.loads(msg.content.split("APIs:\n", 1)[1].splitlines()[0])
    assert list(first_api)[:2] == ["api_name", "api_id"]
    assert first_api["parameters"]["isbn"]["type"] == "str"


def test_user_template_from_text_or_file(samples: list, tmp_path: Path) -> None:
    text = 'TOOLS {apis}\nDO {task}\nlike [{"api_name": "x"}]'
    out = NesTools(prompt_template=text, distractors=0).prompt(samples[0])[0].content
    assert out.startswith("TOOLS {") and '[{"api_name": "x"}]' in out and "{task}" not in out
    path = tmp_path / "t.txt"
    path.write_text("Task: {task}\n")
    assert NesTools(prompt_template=path).prompt(samples[0])[0].content.startswith("Task: Scan the ISBN")
    with pytest.raises(ConfigError, match="must contain the marker"):
        NesTools(prompt_template="no markers")
    with pytest.raises(ConfigError, match="cannot read"):
        NesTools(prompt_template=tmp_path / "missing.txt")
    assert "{apis}" in DEFAULT_TEMPLATE


def test_candidates_add_filtered_nearest_distractors_deterministically(samples: list) -> None:
    enc = HashingEncoder()
    a = build_candidates(samples, enc, per_tool=3, seed=1)
    b = build_candidates(samples, enc, per_tool=3, seed=1)
    c = build_candidates(samples, enc, per_tool=3, seed=2)
    assert [[t.name for t in s.tools] for s in a] == [[t.name for t in s.tools] for s in b]
    assert [[t.name for t in s.tools] for s in a] != [[t.name for t in s.tools] for s in c]
    for orig, cand in zip(samples, a, strict=True):
        gold = {t.name for t in orig.tools}
        extra = [t for t in cand.tools if t.metadata["api_id"] not in orig.metadata["api_ids"]]
        assert gold <= {t.name for t in cand.tools}
        assert len(extra) == 3 * len(orig.tools) == cand.metadata["distractors"]
        assert len({t.metadata["api_id"] for t in cand.tools}) == len(cand.tools)
        for t in extra:
            assert all(Levenshtein.normalized_distance(t.name, g) >= 0.2 for g in gold)
        assert cand.target == orig.target


def test_nearest_means_most_similar(samples: list) -> None:
    enc = HashingEncoder()
    (one,) = build_candidates(samples, enc, per_tool=1, seed=0)[:1]
    gold = samples[0].tools[0]
    extra = [t for t in one.tools if t.metadata["api_id"] not in samples[0].metadata["api_ids"]]
    vec = enc.encode([f"{gold.name}: {gold.description}"])[0]
    sims = [float(enc.encode([f"{t.name}: {t.description}"])[0] @ vec) for s in samples for t in s.tools]
    chosen = float(enc.encode([f"{extra[0].name}: {extra[0].description}"])[0] @ vec)
    assert chosen >= sorted(sims)[-10]


def test_load_with_the_real_embedder_on_a_few_samples(data_dir: Path, tmp_path: Path) -> None:
    from toolmend.compare import Embedder

    bench = NesTools(distractors=2, encoder=Embedder(cache_path=tmp_path / "e.sqlite"))
    loaded = bench.with_candidates(bench.load(data_dir / "nestools", limit=5))
    assert all(len(s.tools) == 3 * len(s.metadata["api_ids"]) for s in loaded)
    assert render_tool(loaded[0].tools[0])["api_id"] is not None


def test_candidates_are_built_lazily_once_per_loaded_set(data_dir: Path) -> None:
    enc = HashingEncoder()
    bench = NesTools(distractors=3, seed=1, encoder=enc)
    loaded = bench.load(data_dir / "nestools", limit=80)
    assert enc.calls == 0  # loading (and so scoring) never embeds
    assert [s.tools for s in loaded] == [s.tools for s in load_nestools(data_dir / "nestools", limit=80)]
    prompts = [bench.prompt(s)[0].content for s in loaded]
    assert enc.calls == 1  # one encode for the whole set, on the first prompt
    eager = build_candidates(loaded, HashingEncoder(), per_tool=3, seed=1)
    for s, text, ref in zip(loaded, prompts, eager, strict=True):
        assert bench.candidates(s) == ref.tools
        assert text == render_prompt(s, DEFAULT_TEMPLATE, ref.tools)
    again = NesTools(distractors=3, seed=1, encoder=HashingEncoder())
    assert [again.prompt(s)[0].content for s in again.load(data_dir / "nestools", limit=80)] == prompts
    assert bench.with_candidates(loaded)[5].tools == eager[5].tools
    assert bench.with_candidates(loaded)[5].metadata["distractors"] == eager[5].metadata["distractors"]
    assert enc.calls == 1


def test_samples_from_elsewhere_keep_their_tools_or_form_their_own_set(samples: list) -> None:
    enc = HashingEncoder()
    bench = NesTools(distractors=2, seed=4, encoder=enc)
    assert bench.candidates(samples[0]) == samples[0].tools and enc.calls == 0
    ours = bench.with_candidates(samples[:30])
    assert enc.calls == 1
    eager = build_candidates(samples[:30], HashingEncoder(), per_tool=2, seed=4)
    assert [s.tools for s in ours] == [s.tools for s in eager]
    assert bench.prompt(samples[3]) == bench.prompt(ours[3]) and enc.calls == 1
    zero = NesTools(distractors=0, encoder=enc)
    assert zero.with_candidates(samples[:3]) == [
        s.model_copy(update={"metadata": {**s.metadata, "distractors": 0}}) for s in samples[:3]
    ]
    assert zero.prompt(samples[0])[0].content == render_prompt(samples[0], DEFAULT_TEMPLATE)
    assert enc.calls == 1


def test_bad_options_are_config_errors(data_dir: Path) -> None:
    with pytest.raises(ConfigError):
        NesTools(distractors=-1)
    with pytest.raises(ConfigError, match="unknown NesTools load option"):
        NesTools().load(data_dir / "nestools", limt=3)
    with pytest.raises(ConfigError, match="unknown mode"):
        NesTools(distractors=0).score(load_nestools(data_dir / "nestools", limit=1)[0], "[]", "strict")  # type: ignore[arg-type]
