"""The KV cache kept in growing buffers and SDPA grouping the query heads itself (game.models.kv_fast) give
the logits of transformers' own DynamicCache and SDPA path bit for bit, through prefill, chunks, single
tokens and crops (the rolling prompt's life), on a random grouped-query Llama."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from game.models.kv_fast import GrowingLayer, growing_cache, use_sdpa_gqa  # noqa: E402


def gqa_llama(attn: str = "sdpa") -> Any:
    """A random 2-layer Llama with 4 query heads sharing 2 key/value heads."""
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                                   attn_implementation=attn)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).eval()


def step(model: Any, cache: Any, ids: list[int]) -> Any:
    arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids]), use_cache=True, **{arg: cache}).logits[0]


def life(model: Any, cache: Any) -> list[Any]:
    """Prefill, a chunk, single tokens, a crop and more after it, a crop across the buffer's growth."""
    g = torch.Generator().manual_seed(1)

    def ids(n: int) -> list[int]:
        return [int(i) for i in torch.randint(0, 97, (n,), generator=g)]

    out = [step(model, cache, ids(300)), step(model, cache, ids(32))]
    out += [step(model, cache, ids(1)) for _ in range(3)]
    cache.crop(-20)
    out.append(step(model, cache, ids(9)))
    cache.crop(-200)  # back inside the first buffer, then past its end again
    out.append(step(model, cache, ids(250)))
    out.append(step(model, cache, ids(1)))
    assert cache.get_seq_length() == 300 + 32 + 3 - 20 + 9 - 200 + 250 + 1
    return out


def test_fast_path_gives_the_stock_logits_bit_for_bit() -> None:
    stock = gqa_llama()
    stock_out = life(stock, transformers.DynamicCache(config=stock.config))
    fast = gqa_llama()
    assert use_sdpa_gqa(fast)
    cache = growing_cache(fast.config)
    assert all(isinstance(layer, GrowingLayer) for layer in cache.layers)
    fast_out = life(fast, cache)
    assert len(fast_out) == len(stock_out)
    for a, b in zip(fast_out, stock_out, strict=True):
        assert torch.equal(a, b)


def test_single_tokens_are_written_in_place_not_copied() -> None:
    model = gqa_llama()
    cache = growing_cache(model.config)
    step(model, cache, list(range(40)))
    layer = cache.layers[0]
    buffer = layer.keys.untyped_storage().data_ptr()
    for tok in range(5):
        step(model, cache, [tok])
        assert layer.keys.untyped_storage().data_ptr() == buffer  # the same buffer, only the view grows
    assert layer.keys.shape[-2] == 45


def test_a_model_on_another_attention_is_left_as_it_is() -> None:
    model = gqa_llama("eager")
    assert not use_sdpa_gqa(model)
    assert model.config._attn_implementation == "eager"
