"""Phrase books: a player's own language rewritten to the English the input parser reads.

The parser (:mod:`game.inputs.meaning`, :mod:`game.inputs.edits`, :mod:`game.inputs.slots`)
knows English verbs, values and nouns ("make it rain", "give her a lantern"). A phrase
book, ``game/locale/<lang>.phrases.toml``, maps the player's words to those: a
``[phrases]`` table (several words, rewritten first, longest first) and a ``[words]``
table (single words). Matching ignores case; a phrase matches whole words only (an
elided article such as ``l'`` also before a word).

A word that names something in the story (an item, a character, a location: in the
play language, from the story's catalogue) is never rewritten, so "offre le
cerf-volant" keeps the story's own "cerf-volant". :class:`~game.inputs.meaning.Resolver`
tries the line as typed and as rewritten, and keeps the better reading.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from game.errors import StoryError
from game.story.strings import language_file

#: Where the phrase books ship (next to the game's own string catalogues).
PHRASEBOOK_DIR = Path(__file__).parents[1] / "locale"


@dataclass(frozen=True)
class Phrasebook:
    """One language's rewrites: ``(player's phrase, English)`` pairs, longest first."""

    lang: str
    pairs: tuple[tuple[str, str], ...]

    def _pattern(self) -> re.Pattern[str]:
        return _alternation(self.pairs)

    def rewrite(self, text: str, keep: frozenset[str] = frozenset()) -> str:
        """``text`` with every phrase of the book replaced by its English (lower case).

        Args:
            text: what the player typed or said.
            keep: lower-case words and names never rewritten (the story's names).

        Returns:
            The rewritten line; ``text`` lower-cased when nothing matched.
        """
        out = " ".join(text.lower().replace("’", "'").split())
        out = re.sub(r"(?<![\w'-])l'(?=\w)", "l' ", out)  # an elided article is a word of its own
        protected: dict[str, str] = {}
        for n, name in enumerate(sorted(keep, key=len, reverse=True)):
            if name and name in out:
                mark = f"\x00{n}\x00"
                out = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", mark, out)
                protected[mark] = name
        table = dict(self.pairs)
        out = self._pattern().sub(lambda m: table[m.group(0)], out)  # one pass: no English is rewritten again
        for mark, name in protected.items():
            out = out.replace(mark, name)
        return " ".join(out.split())

    def native(self, english: str) -> str:
        """The book's own single word for the English word ``english`` (``lantern`` -> ``lanterne``:
        the first of its words that :meth:`rewrite` reads as it), else ``english`` itself."""
        return next((src for src, en in self.pairs if en == english and " " not in src and "'" not in src), english)


@cache
def _alternation(pairs: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One regex matching any phrase of ``pairs`` as whole words, longest first."""
    alts = [re.escape(src) + ("" if src.endswith("'") else r"(?![\w-])") for src, _ in pairs]
    return re.compile(r"(?<![\w'-])(?:" + "|".join(alts) + ")")


@cache
def phrasebook(lang: str) -> Phrasebook | None:
    """The phrase book for ``lang`` (``fr``; ``fr_CA`` falls back to ``fr``), or ``None`` (English, or none).

    Raises:
        game.errors.StoryError: the shipped file is not valid TOML (a broken install).
    """
    found = language_file(PHRASEBOOK_DIR, lang, ".phrases.toml")
    if found is None:
        return None
    code, path = found
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise StoryError(f"not a readable phrase book: {exc}", where=str(path)) from exc
    pairs = {**data.get("words", {}), **data.get("phrases", {})}
    ordered = sorted(((k.lower(), str(v)) for k, v in pairs.items()), key=lambda kv: -len(kv[0]))
    return Phrasebook(code, tuple(ordered))


__all__ = ["PHRASEBOOK_DIR", "Phrasebook", "phrasebook"]
