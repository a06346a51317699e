"""The hf backend on a tiny Llama and BPE tokenizer built here, offline."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from toolmend._errors import DatasetError, ModelError
from toolmend._schema import Message, Tool, ToolCall
from toolmend.models import Completion, GenerateConfig, get_model
from toolmend.models._base import GenerateRequest
from toolmend.models._hf import CALL_OPENING, chat_dicts

pytest.importorskip("transformers", reason="the hf extra (transformers) is not installed")

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<call>{{ c['function']['name'] }} "
    "{{ c['function']['arguments'] | tojson }}</call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if tools %}<|im_start|>tools\n{% for t in tools %}{{ t['function']['name'] }} {% endfor %}<|im_end|>\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [
        f"user asks for the weather in city {i}; assistant calls get_weather(city={i})" for i in range(200)
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    return path


async def test_batched_greedy_generation_with_tools(tiny_model: Path) -> None:
    model = get_model(f"hf/{tiny_model}", batch_size=4, max_new_tokens=6, cache=False)
    tools = [
        Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    ]
    history = [
        Message(role="user", content="weather in city 3"),
        Message(role="assistant", tool_calls=[ToolCall(name="get_weather", arguments={"city": "3"})]),
        Message(role="tool", content="sunny", name="get_weather"),
    ]
    prompts = [[Message(role="user", content=f"weather in city {i}")] for i in range(5)] + [history]
    outs = await asyncio.gather(*(model.generate(p, tools=tools) for p in prompts))
    assert all(isinstance(o, Completion) for o in outs)
    assert all(1 <= o.usage.output_tokens <= 6 and o.usage.input_tokens > 5 for o in outs)
    assert all(o.finish_reason in ("stop", "length") for o in outs)
    assert model.batcher.batches == 2  # type: ignore[attr-defined]  # 6 requests, batches of 4
    again = await model.generate(prompts[0], tools=tools)
    assert again.text == outs[0].text  # greedy: deterministic
    await model.aclose()


async def test_sampling_settings_and_cache(tiny_model: Path, tmp_path: Path) -> None:
    model = get_model(f"hf/{tiny_model}", max_new_tokens=4, cache=tmp_path)
    cfg = GenerateConfig(temperature=1.0, seed=7, max_tokens=3)
    first = await model.generate([Message(role="user", content="weather")], config=cfg)
    assert first.usage.output_tokens <= 3
    hit = await model.generate([Message(role="user", content="weather")], config=cfg)
    assert hit.cached == (not first.empty) and hit.text == first.text  # empty answers are never cached
    await model.aclose()


async def test_a_sampled_reply_does_not_depend_on_its_batch(tiny_model: Path) -> None:
    model = get_model(f"hf/{tiny_model}", batch_size=8, max_new_tokens=6, cache=False)
    cfg = GenerateConfig(temperature=1.0, seed=3)
    ask = [Message(role="user", content="weather in city 3")]
    alone = await model.generate(ask, config=cfg, sample_id="s3")
    others = [
        model.generate([Message(role="user", content=f"city {i}")], config=cfg, sample_id=f"o{i}")
        for i in range(7)
    ]
    together = await asyncio.gather(*others[:4], model.generate(ask, config=cfg, sample_id="s3"), *others[4:])
    assert together[4].text == alone.text
    await model.aclose()


async def test_samples_of_different_tasks_draw_from_different_streams(tiny_model: Path) -> None:
    # One request per batch, as when requests arrive one by one: re-seeding a shared generator per
    # batch gave all eight the same reply.
    model = get_model(f"hf/{tiny_model}", batch_size=8, max_new_tokens=6, cache=False)
    cfg = GenerateConfig(temperature=1.0, seed=3)
    ask = [Message(role="user", content="weather in city 3")]
    texts = [(await model.generate(ask, config=cfg, sample_id=f"task-{i}")).text for i in range(8)]
    assert len(set(texts)) > 4
    again = await model.generate(ask, config=cfg, sample_id="task-0")
    assert again.text == texts[0]  # the same request and seed: the same stream
    await model.aclose()


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_row_sampler_draws_from_the_softmax(temperature: float) -> None:
    import torch
    from transformers import GenerationConfig

    from toolmend.models._hf import _sampler

    fake = type("Fake", (), {"generation_config": GenerationConfig(), "device": "cpu"})()
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    n = 6000
    processors = _sampler(fake, GenerateConfig(temperature=temperature), list(range(n)))
    picked = processors(None, logits.repeat(n, 1)).argmax(-1)
    freq = torch.bincount(picked, minlength=4) / n
    assert torch.allclose(freq, torch.softmax(logits / temperature, -1), atol=0.02)


async def test_a_prompt_beyond_the_context_fails_alone_before_generating(tiny_model: Path) -> None:
    # The tiny model's context is 256 positions; transformers would generate past it silently.
    model = get_model(f"hf/{tiny_model}", batch_size=4, max_new_tokens=6, cache=False)
    short = [Message(role="user", content="weather in city 3")]
    long = [Message(role="user", content="weather in city 3 " * 80)]
    outs = await asyncio.gather(
        model.generate(short), model.generate(long), model.generate(short), return_exceptions=True
    )
    assert model.batcher.batches == 1  # type: ignore[attr-defined]  # the three went out together
    assert isinstance(outs[0], Completion) and isinstance(outs[2], Completion)
    assert outs[0].text == outs[2].text
    assert isinstance(outs[1], ModelError) and not outs[1].retryable
    assert "beyond the model's context of 256 tokens" in str(outs[1])
    # The reply budget counts: a prompt that fits alone does not fit with room for a long reply.
    n = outs[0].usage.input_tokens
    with pytest.raises(ModelError, match=rf"the prompt has {n} tokens and up to {257 - n} more"):
        await model.generate(short, config=GenerateConfig(max_tokens=257 - n))
    await model.aclose()


async def test_few_shot_examples_follow_the_system_message(tiny_model: Path, tmp_path: Path) -> None:
    examples = [
        {"role": "user", "content": "weather in city 7"},
        {"role": "assistant", "content": "[get_weather(city='7')]"},
    ]
    path = tmp_path / "shots.json"
    path.write_text(json.dumps(examples))
    plain = get_model(f"hf/{tiny_model}", max_new_tokens=4, cache=False)
    shots = get_model(f"hf/{tiny_model}", max_new_tokens=4, cache=False, few_shot=str(path))
    ask = [Message(role="system", content="Be brief."), Message(role="user", content="weather in city 3")]
    request = GenerateRequest(messages=ask)
    rendered = shots.render(chat_dicts(request, "prompt", "", shots.few_shot), None)  # type: ignore[attr-defined]
    assert rendered.index("Be brief.") < rendered.index("city 7") < rendered.index("get_weather(city='7')")
    assert rendered.index("get_weather(city='7')") < rendered.index("city 3")
    assert "city 7" not in plain.render(chat_dicts(request, "prompt", ""), None)  # type: ignore[attr-defined]
    assert shots.cache_identity() != plain.cache_identity()  # the examples change the answers
    await shots.aclose()
    await plain.aclose()


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('{"role": "user"}', "expected a non-empty list of messages"),
        ('[{"role": "tool", "content": "x"}]', "field '[0]'"),
        ('[{"role": "user", "content": 3}]', "field '[0].content'"),
        ('[{"role": "user", "content": "q"}]', "end with an assistant message"),
        ("[{", "shots.json"),
    ],
)
def test_a_bad_few_shot_file_is_one_line_naming_it(
    tiny_model: Path, tmp_path: Path, content: str, error: str
) -> None:
    path = tmp_path / "shots.json"
    path.write_text(content)
    with pytest.raises(DatasetError, match=re.escape(error)) as err:
        get_model(f"hf/{tiny_model}", few_shot=str(path))
    assert "\n" not in str(err.value) and str(path) in str(err.value)


async def test_a_stop_text_ends_the_reply_before_it(tiny_model: Path) -> None:
    model = get_model(f"hf/{tiny_model}", max_new_tokens=12, cache=False)
    ask = [Message(role="user", content="weather in city 3")]
    free = await model.generate(ask)
    assert len(free.text) > 4, free.text
    stop = free.text[len(free.text) // 2 :][:3]  # a text the greedy reply writes midway
    model.stop = [stop]  # type: ignore[attr-defined]  # as a named base model's transcript sets it
    cut = await model.generate(ask)
    assert cut.text == free.text[: free.text.find(stop)]
    assert cut.finish_reason == "stop"
    await model.aclose()


async def test_a_default_required_choice_leaves_replies_to_tool_results_free(tiny_model: Path) -> None:
    # Forced to call on every request, an agent loop never gets the call-free reply that ends a
    # turn: BFCL multi-turn episodes ran to the step limit or past the context.
    model = get_model(f"hf/{tiny_model}", max_new_tokens=64, cache=False, tool_choice="required")
    tools = [
        Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    ]
    ask = [Message(role="user", content="weather in city 3")]
    first = await model.generate(ask, tools=tools)
    opening = CALL_OPENING.format(name="get_weather") + '"city": '
    assert first.tool_calls or first.text.startswith(opening), first.text
    answered = [
        *ask,
        Message(
            role="assistant", tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "3"})]
        ),
        Message(role="tool", content="sunny", tool_call_id="c1", name="get_weather"),
    ]
    after = await model.generate(answered, tools=tools)
    assert not after.tool_calls and not after.text.startswith("<tool_call>"), after.text
    forced = await model.generate(answered, tools=tools, tool_choice="required")  # asked for: still forced
    assert forced.tool_calls or forced.text.startswith(opening), forced.text
    await model.aclose()
