"""The dialogue model's weight formats: float16 weights by default (float32 everything else: the replies of
float32, half the bytes read a token), float32 as loaded, int8 with one scale per output row, or the
output matrix alone in int8; chosen in a spec string (``transformers:?quantize=int8``) as in a settings file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from game.models.llm import ModelError
from game.models.registry import ModelSpec, build_model, parse_model_spec

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.cast.test_dialogue import build_tiny_llama, prompt_of  # noqa: E402


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama-q"))


def linear_kinds(model: Any) -> dict[str, str]:
    """Module name -> ``float``, ``fp16`` or ``int8`` for each linear layer of the loaded transformers model."""
    out = {}
    for name, module in model._model.named_modules():
        if type(module) is torch.nn.Linear:
            out[name] = "float"
        elif type(module).__name__ == "Linear" and "quantized" in type(module).__module__:
            out[name] = {torch.float16: "fp16", torch.qint8: "int8"}[module._packed_params.dtype]
    return out


def test_spec_strings_carry_model_options() -> None:
    assert parse_model_spec("transformers:?quantize=int8") == ModelSpec("transformers", options={"quantize": "int8"})
    spec = parse_model_spec("transformers:/m/x#f.gguf?quantize=int8-head&top_p=0.8&reuse_prefix=false")
    assert (spec.source, spec.gguf_file) == ("/m/x", "f.gguf")
    assert spec.options == {"quantize": "int8-head", "top_p": 0.8, "reuse_prefix": False}
    assert parse_model_spec("transformers").options == {}
    with pytest.raises(ModelError, match="unknown model option 'temperature=2'"):
        parse_model_spec("transformers:?temperature=2")
    with pytest.raises(ModelError, match="top_p must be a float"):
        parse_model_spec("transformers:?top_p=high")
    with pytest.raises(ModelError, match="unknown model option 'quantize'"):
        parse_model_spec("transformers:?quantize")


def test_int8_quantizes_every_linear_layer_per_output_row(tiny_llama: Path) -> None:
    model: Any = build_model(ModelSpec("transformers", source=str(tiny_llama), options={"quantize": "int8"}))
    kinds = linear_kinds(model)
    assert kinds and set(kinds.values()) == {"int8"}
    weight = model._model.get_output_embeddings().weight()
    assert weight.qscheme() == torch.per_channel_affine  # one scale per output row, not one per matrix
    assert weight.q_per_channel_scales().numel() == weight.shape[0]
    assert model.name.endswith("-int8")
    assert "".join(model.stream(prompt_of("Tea?"), max_new_tokens=4, temperature=0.0)) is not None


def test_int8_head_quantizes_only_the_output_matrix(tiny_llama: Path) -> None:
    model: Any = build_model(ModelSpec("transformers", source=str(tiny_llama), options={"quantize": "int8-head"}))
    kinds = linear_kinds(model)
    assert kinds.pop("lm_head") == "int8"
    assert kinds and set(kinds.values()) == {"float"}  # the attention and MLP layers stay float32
    assert model.name.endswith("-int8-head")
    float_model: Any = build_model(ModelSpec("transformers", source=str(tiny_llama)))
    a = model.next_logits(prompt_of("Where is the lamp?"))
    b = float_model.next_logits(prompt_of("Where is the lamp?"))
    # int8 rows with their own scale: each logit within the rounding a row's scale allows
    assert float((a - b).abs().max()) < 0.05 * float(b.abs().max())


def test_fp16_weights_are_the_default_and_keep_the_float32_replies(tiny_llama: Path) -> None:
    default: Any = build_model(ModelSpec("transformers", source=str(tiny_llama)))
    kinds = linear_kinds(default)
    assert kinds and set(kinds.values()) == {"fp16"}
    plain: Any = build_model(ModelSpec("transformers", source=str(tiny_llama), options={"quantize": "float32"}))
    assert set(linear_kinds(plain).values()) == {"float"}
    assert default.name == plain.name  # the same model, up to rounding: records name it the same
    a = default.next_logits(prompt_of("Where is the lamp?"))
    b = plain.next_logits(prompt_of("Where is the lamp?"))
    assert float((a - b).abs().max()) < 1e-2 * float(b.abs().max())
    for line in ("Where is the lamp?", "Tea?", "Is the tide in?"):
        want = "".join(plain.stream(prompt_of(line), max_new_tokens=12, temperature=0.0))
        assert "".join(default.stream(prompt_of(line), max_new_tokens=12, temperature=0.0)) == want


@pytest.mark.skipif(os.environ.get("WORLDLOOM_SKIP_REAL_MODEL") == "1", reason="WORLDLOOM_SKIP_REAL_MODEL=1")
def test_embedded_model_in_fp16_writes_the_float32_greedy_reply_and_keeps_it_across_chunks() -> None:
    """SmolLM2-135M itself (the game's default): float16 weights give float32's greedy reply, and a
    prompt pre-encoded in chunks gives the whole prompt's (int8 does not: its activations share a scale)."""
    pytest.importorskip("gguf")
    from game.models.llm_transformers import TransformersDialogueModel

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker (and quick on a busy machine)
    try:
        check_fp16_on_the_embedded_model(TransformersDialogueModel)
    finally:
        torch.set_num_threads(threads)


def check_fp16_on_the_embedded_model(model_class: Any) -> None:
    fp16 = model_class()
    plain = model_class(quantize="float32")
    prompt = [{"role": "system", "content": "You are Eve, keeper of the Skerrow light. You answer in one short, "
                                            "plain sentence."},
              {"role": "user", "content": "What do you do when the fog comes in?"}]
    want = "".join(plain.stream(prompt, max_new_tokens=16, temperature=0.0))
    fp16.reuse_prefix = False
    assert "".join(fp16.stream(prompt, max_new_tokens=16, temperature=0.0)) == want
    fp16.reuse_prefix = True
    fp16.clear_prefix_cache()
    fp16.preencode(prompt[:1], chunk_tokens=8)
    assert "".join(fp16.stream(prompt, max_new_tokens=16, temperature=0.0)) == want
    assert fp16.last_stats["reused_tokens"] > 8
