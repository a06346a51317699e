"""Pick the 128 rows that teach SmolLM2-135M-Instruct to call tools, from `build sft --source bfcl`.

Usage: python examples/pick_rows.py data/bfcl-sft.jsonl data/train.jsonl [--abstain 16]

96 of the 400 `simple_python` rows and 32 of the `multiple` rows, shuffled, seed 0. Rows are
measured in tokens as training will render them (toolmend's tool template for SmolLM2), and only
`multiple` rows of at most 480 tokens are kept (every `simple_python` row has at most 505), so
the training's `max_length: 512` cuts no row. No row comes from a `live_*` category, so BFCL
`live_simple` stays held out for the evaluation.

``--abstain N`` adds N rows that teach the model to answer without a call when no tool fits
(trained on calls only, it calls on every BFCL `irrelevance` question): a `simple_python`
question that no call row uses, offered the tools of another `simple_python` row whose function
shares no word with the question's own, answered in one sentence of prose.
"""

from __future__ import annotations

import argparse
import json
import random
import re

from transformers import AutoTokenizer

from toolmend.models._gguf import SMOLLM2_TOOLS_TEMPLATE, hf_folder, resolve_gguf

SIMPLE, MULTIPLE, MOST_TOKENS = 96, 32, 480
NO_TOOL_FITS = "None of the available tools can do this, so I cannot answer with a tool call."


def _words(row: dict) -> set[str]:
    return {w for c in json.loads(row["gold_calls"]) for w in re.split(r"[._]", c["name"].lower()) if w}


def abstentions(pool: list[dict], n: int, rng: random.Random) -> list[dict]:
    """``n`` questions from ``pool``, each offered the tools of a pool row with no name word in common."""
    rows = []
    for row in rng.sample(pool, n):
        other = rng.choice([r for r in pool if not _words(r) & _words(row)])
        rows.append({**row, "tools": other["tools"], "gold_calls": "[]",
                     "completion": [{"role": "assistant", "content": NO_TOOL_FITS}],
                     "trace_id": f"{row['trace_id']}-no-tool-fits", "verified_by": "construction"})  # fmt: skip
    return rows


def main(source: str, out: str, abstain: int = 0) -> None:
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
    if abstain:
        used = {r["trace_id"] for r in picked}
        picked += abstentions([r for r in simple if r["trace_id"] not in used], abstain, rng)
    rng.shuffle(picked)
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in picked)
    print(f"wrote {len(picked)} rows to {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Pick the SFT rows for SmolLM2-135M-Instruct.")
    parser.add_argument("built", help="the rows of `toolmend build sft --source bfcl`")
    parser.add_argument("out")
    parser.add_argument("--abstain", type=int, default=0, help="rows answered without a call (default 0)")
    args = parser.parse_args()
    main(args.built, args.out, args.abstain)
