"""Pick the 128 rows that teach SmolLM2-135M-Instruct to call tools, from `build sft --source bfcl`.

Usage: python examples/pick_rows.py data/bfcl-sft.jsonl data/train.jsonl

96 of the 400 `simple_python` rows and 32 of the `multiple` rows, shuffled, seed 0. Rows are
measured in tokens as training will render them (toolmend's tool template for SmolLM2), and only
`multiple` rows of at most 480 tokens are kept (every `simple_python` row has at most 505), so
the training's `max_length: 512` cuts no row. No row comes from a `live_*` category, so BFCL
`live_simple` stays held out for the evaluation.
"""

from __future__ import annotations

import json
import random
import re
import sys

from transformers import AutoTokenizer

from toolmend.models._gguf import SMOLLM2_TOOLS_TEMPLATE, hf_folder, resolve_gguf

SIMPLE, MULTIPLE, MOST_TOKENS = 96, 32, 480


def main(source: str, out: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(hf_folder(resolve_gguf("smollm2-135m")))
    tokenizer.chat_template = SMOLLM2_TOOLS_TEMPLATE

    def tokens(row: dict) -> int:
        rendered = tokenizer.apply_chat_template(
            row["prompt"] + row["completion"], tools=json.loads(row["tools"]), tokenize=True, return_dict=True
        )
        return len(rendered["input_ids"])

    with open(source, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    # trace ids read "bfcl-<category>_<n>"; the category is what the draw is balanced on
    simple = [r for r in rows if re.sub(r"_\d+$", "", r["trace_id"]) == "bfcl-simple_python"]
    multiple = [r for r in rows if re.sub(r"_\d+$", "", r["trace_id"]) == "bfcl-multiple"]
    short = [r for r in multiple if tokens(r) <= MOST_TOKENS]
    print(
        f"simple_python: {len(simple)} rows; multiple: {len(short)} of {len(multiple)} within {MOST_TOKENS} tokens"
    )

    rng = random.Random(0)
    picked = rng.sample(simple, SIMPLE) + rng.sample(short, MULTIPLE)
    rng.shuffle(picked)
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in picked)
    print(f"wrote {len(picked)} rows to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python examples/pick_rows.py BUILT.jsonl OUT.jsonl", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
