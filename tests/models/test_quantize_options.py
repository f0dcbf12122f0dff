"""int8 quantization of the dialogue model: every linear layer with one scale per output row, or the output
matrix alone; chosen in a spec string (``transformers:?quantize=int8``) as in a settings file."""

from __future__ import annotations

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
    """Module name -> ``float`` or ``int8`` for each linear layer of the loaded transformers model."""
    out = {}
    for name, module in model._model.named_modules():
        if type(module) is torch.nn.Linear:
            out[name] = "float"
        elif type(module).__name__ == "Linear" and "quantized" in type(module).__module__:
            out[name] = "int8"
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
