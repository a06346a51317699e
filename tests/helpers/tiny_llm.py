"""A tiny Llama and a BPE tokenizer trained here, in a few seconds, for the recipe tests.

No weights can be downloaded on this machine, so the model is built from a config: 2 layers,
hidden size 64 (about 150k parameters). The tokenizer is trained on the text of the datasets the
tests build, and its ChatML template renders the ``tools`` and marks assistant turns with
``{% generation %}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CHATML = (
    "{% if tools %}<|im_start|>system\nTools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}<|im_end|>{% endgeneration %}"
    "{% else %}{{ m['content'] }}<|im_end|>{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NO_MARKERS = CHATML.replace("{% generation %}", "").replace("{% endgeneration %}", "")
NO_TOOLS = CHATML.split("{% endif %}", 1)[1]


def corpus_texts() -> list[str]:
    from toolmend.train import build_rows

    texts: list[str] = []
    for kind in ("sft", "refine", "reflect"):
        rows, _ = build_rows(kind, source="world", seed=0, limit=6, max_tools=3)
        for row in rows:
            texts += [m["content"] for m in row["prompt"] + row["completion"]] + [row["tools"]]
    return texts


def save_tiny(path: Path, template: str = CHATML, corpus: list[str] | None = None) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus or corpus_texts(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = template
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        bos_token_id=None,
    )
    import torch

    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
