"""Prompt embeddings for the diffusion backend: the pipeline's text encoder, or an offline fallback.

SkyReels-V2 conditions on UMT5-XXL token embeddings, ``(1, L, 4096)`` float, zero
past the prompt's tokens (``L = max_sequence_length``, 512 for the published
models). When the pipeline was loaded without its text encoder (the tests' tiny
random pipelines, or a machine that cannot hold ~11 GB more), the backend uses
:func:`hashed_prompt_embeds` instead: every word of the prompt gets a fixed random
vector drawn from a generator seeded by the word's hash, in word order, zero-padded
to ``L``. It is deterministic across machines and runs, and different prompts get
different embeddings, so prompt switches really change the conditioning. It is
**not** a language model: a real checkpoint conditioned this way sees noise, not
meaning. It exists so the streaming adapter, its tests and the speed benchmark run
offline; load the text encoder (``text_encoder=True`` in the loader) for pictures
that follow the prompt.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: How the fallback splits a (lower-cased) prompt into words.
WORD_RE = re.compile(r"[a-z0-9']+")
#: Scale of the fallback's word vectors (UMT5 outputs are of order 0.1-0.3 per channel).
FALLBACK_SCALE = 0.2
#: Prompts whose embeddings are kept.
CACHE_SIZE = 32

#: A custom encoder: ``prompt -> (1, L, D)`` float tensor.
TextEncoderFn = Callable[[str], Any]


def word_seed(word: str) -> int:
    """A 63-bit seed from ``word`` (BLAKE2b), the same on every machine."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little") >> 1


def hashed_prompt_embeds(prompt: str, dim: int, length: int) -> Any:
    """The offline fallback embedding of ``prompt``.

    Args:
        prompt: any text; lower-cased and split into ``[a-z0-9']+`` words.
        dim: embedding width (the transformer's ``text_dim``).
        length: sequence length (``max_sequence_length``); words past it are dropped.

    Returns:
        ``torch.Tensor`` of shape ``(1, length, dim)``, float32: row ``i`` is the
        ``i``-th word's vector (``FALLBACK_SCALE * N(0, 1)`` from a generator seeded by
        :func:`word_seed`), rows past the last word are zero.
    """
    import torch

    out = torch.zeros(1, length, dim, dtype=torch.float32)
    for i, word in enumerate(WORD_RE.findall(prompt.lower())[:length]):
        gen = torch.Generator(device="cpu").manual_seed(word_seed(word))
        out[0, i] = torch.randn(dim, generator=gen) * FALLBACK_SCALE
    return out


class PromptEncoder:
    """Turns prompts into ``prompt_embeds`` for the pipeline, caching the last few.

    Args:
        pipe: the SkyReels-V2 pipeline (its ``text_encoder`` and ``tokenizer`` may be ``None``).
        text_encoder: a custom ``prompt -> (1, L, D)`` function, used before anything else.
        max_sequence_length: ``L`` (default: 512 with a real text encoder, else 64 capped).

    Attributes:
        kind: ``"custom"``, ``"pipeline"`` (the model's own UMT5) or ``"hashed"`` (offline fallback).
    """

    def __init__(self, pipe: Any, text_encoder: TextEncoderFn | None = None,
                 max_sequence_length: int | None = None) -> None:
        self.pipe = pipe
        self.custom = text_encoder
        if text_encoder is not None:
            self.kind = "custom"
        elif getattr(pipe, "text_encoder", None) is not None and getattr(pipe, "tokenizer", None) is not None:
            self.kind = "pipeline"
        else:
            self.kind = "hashed"
        self.dim = int(pipe.transformer.config.text_dim)
        self.length = int(max_sequence_length or (512 if self.kind == "pipeline" else 64))
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def note(self) -> str:
        """What the game layer should be told about how prompts are read (``""`` when by the model)."""
        if self.kind == "hashed":
            return "prompt: no text encoder loaded; hashed word embeddings stand in (offline fallback)"
        return ""

    def encode(self, prompt: str) -> Any:
        """``prompt_embeds`` for ``prompt``: ``(1, L, D)`` on the pipeline's device, in the transformer's dtype."""
        with self._lock:
            hit = self._cache.get(prompt)
            if hit is not None:
                self._cache.move_to_end(prompt)
                return hit
        emb = self._encode(prompt)
        dev = self.pipe.transformer.device
        emb = emb.to(device=dev, dtype=self.pipe.transformer.dtype)
        with self._lock:
            self._cache[prompt] = emb
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return emb

    def _encode(self, prompt: str) -> Any:
        if self.custom is not None:
            return self.custom(prompt)
        if self.kind == "pipeline":
            embeds, _ = self.pipe.encode_prompt(prompt=prompt, do_classifier_free_guidance=False,
                                                max_sequence_length=self.length,
                                                device=self.pipe.transformer.device)
            return embeds
        return hashed_prompt_embeds(prompt, self.dim, self.length)
