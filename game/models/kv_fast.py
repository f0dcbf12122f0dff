"""Two CPU speed-ups of a transformers causal LM's forward pass over a long cached prefix, same values.

A reply's first token after the player's line encodes a few dozen new tokens after a
cached prompt of ~2,000 (:mod:`game.models.llm_transformers`). On one CPU core two
costs there are not the model's arithmetic but copies:

* **the KV cache grows by copying**: transformers' ``DynamicLayer.update`` makes each
  layer's keys and values anew with ``torch.cat`` on every forward, so every step copies
  the whole cache (30 layers x 2 x ~1 MB for SmolLM2-135M at 2,000 tokens) into fresh
  memory. :class:`GrowingLayer` keeps them in a buffer with spare room (×1.5, in steps of
  :data:`GROW_STEP` positions), writes the new positions in place and hands out views;
  ``crop`` only shortens the view.
* **grouped-query attention copies each key/value head per query head**: with a mask
  (any prompt fed after a cache), transformers' SDPA path calls ``repeat_kv`` (SmolLM2:
  3 key/value heads, 9 query heads: 3× the cache, copied, every layer). :func:`sdpa_gqa`
  lets torch's ``scaled_dot_product_attention`` group the heads itself
  (``enable_gqa=True``, torch >= 2.5) and otherwise calls transformers' own SDPA
  function unchanged. It is registered under :data:`ATTENTION` with transformers'
  ``AttentionInterface`` (and SDPA's mask with ``AttentionMaskInterface``).

Both give the same keys, values and logits, bit for bit, as the stock path (tested in
``tests/models/test_kv_fast.py``): only where the numbers are kept changes.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface, DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

#: Positions a layer's buffer grows by at least (it grows to 1.5x what it must hold, rounded up to this).
GROW_STEP = 256
#: The attention implementation name :func:`sdpa_gqa` is registered under.
ATTENTION = "worldloom_sdpa_gqa"


class GrowingLayer(DynamicLayer):  # type: ignore[no-untyped-call]  # transformers' hook is untyped
    """A ``DynamicLayer`` whose keys and values live in a buffer with spare room.

    ``keys`` / ``values`` are views ``[batch, heads, seq_len, head_dim]`` of the first
    ``seq_len`` positions of the buffer; :meth:`update` writes the new positions after them
    (a new buffer, 1.5x as long, only when full) and :meth:`crop` shortens the views.
    """

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._kbuf: torch.Tensor | None = None
        self._vbuf: torch.Tensor | None = None
        self._n = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = self._n, int(key_states.shape[-2])
        if self._kbuf is None or self._vbuf is None or n + add > self._kbuf.shape[-2]:
            cap = -(-((n + add) * 3 // 2) // GROW_STEP) * GROW_STEP
            kbuf = key_states.new_empty((*key_states.shape[:-2], cap, key_states.shape[-1]))
            vbuf = value_states.new_empty((*value_states.shape[:-2], cap, value_states.shape[-1]))
            if n and self._kbuf is not None and self._vbuf is not None:
                kbuf[..., :n, :] = self._kbuf[..., :n, :]
                vbuf[..., :n, :] = self._vbuf[..., :n, :]
            self._kbuf, self._vbuf = kbuf, vbuf
        self._kbuf[..., n:n + add, :] = key_states
        self._vbuf[..., n:n + add, :] = value_states
        self._n = n + add
        self.keys, self.values = self._kbuf[..., :self._n, :], self._vbuf[..., :self._n, :]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._n if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` positions (a negative count, as ``DynamicLayer.crop``)."""
        if tokens_to_remove > 0:
            raise ValueError(f"crop takes a negative count of positions to remove, not {tokens_to_remove}")
        if tokens_to_remove == 0 or not self.is_initialized or self._kbuf is None or self._vbuf is None:
            return
        self._n = max(0, self._n + tokens_to_remove)
        self.keys, self.values = self._kbuf[..., :self._n, :], self._vbuf[..., :self._n, :]

    def reset(self) -> None:
        self._kbuf = self._vbuf = None
        self._n = 0
        super().reset()


def growing_cache(config: Any) -> Any:
    """A ``DynamicCache`` for ``config`` whose plain full-attention layers are :class:`GrowingLayer`
    (sliding-window and other layer kinds stay as transformers makes them)."""
    cache = DynamicCache(config=config)
    grown: Any = GrowingLayer  # its constructor is transformers' (untyped)
    cache.layers = [grown() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


def sdpa_gqa(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             attention_mask: torch.Tensor | None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention, with torch grouping the query heads per key/value head.

    Shapes as transformers passes them: ``query`` ``[batch, heads, q_len, head_dim]``,
    ``key`` / ``value`` ``[batch, kv_heads, kv_len, head_dim]``, ``attention_mask`` boolean
    or additive ``[batch, 1, q_len, kv_len]``; returns ``([batch, q_len, heads, head_dim], None)``.
    Only several queries under a mask, without dropout, soft-capping or position bias, take
    the ``enable_gqa`` call; everything else goes to ``sdpa_attention_forward`` as it is.
    """
    groups = int(getattr(module, "num_key_value_groups", 1))
    plain = (not kwargs.get("softcap") and kwargs.get("position_bias") is None and not kwargs.get("dropout")
             and not kwargs.get("output_attentions"))
    if groups > 1 and query.shape[2] > 1 and attention_mask is not None and plain:
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                               scale=kwargs.get("scaling"), enable_gqa=True)
        return out.transpose(1, 2).contiguous(), None
    result: tuple[torch.Tensor, None] = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    return result


def use_sdpa_gqa(model: Any) -> bool:
    """Switch ``model`` (a transformers ``PreTrainedModel``) from ``sdpa`` to :func:`sdpa_gqa`;
    ``False`` (and unchanged) when it uses another attention."""
    if getattr(model.config, "_attn_implementation", "") != "sdpa":
        return False
    AttentionInterface.register(ATTENTION, sdpa_gqa)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)
    model.set_attn_implementation(ATTENTION)
    return True


__all__ = ["ATTENTION", "GROW_STEP", "GrowingLayer", "growing_cache", "sdpa_gqa", "use_sdpa_gqa"]
