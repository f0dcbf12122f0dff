"""Who a typed or scripted line is said to: ``@eve hi``, ``ask eve ...``, ``Eve, hello``.

One parser for the window's text line (:mod:`game.app.app`) and a headless script's ``say``
(:mod:`game.headless`), so a line means the same in both (docs/inputs.md).
"""

from __future__ import annotations

import re

_LEAD = re.compile(r"^\s*(?:@|(?:ask|tell)\s+)", re.IGNORECASE)


def _aliases(cid: str, name: str) -> list[str]:
    out = [cid.replace("_", " "), name]
    for art in ("the ", "a ", "an "):
        if name.lower().startswith(art):
            out.append(name[len(art):])
    return sorted({a.strip().lower() for a in out if a.strip()}, key=len, reverse=True)


def parse_address(text: str, names: dict[str, str]) -> tuple[str, str]:
    """Who ``text`` is said to, and what is said.

    Recognised: ``@eve hi``, ``@eve: hi``, ``ask eve where she lives``, ``tell eve
    about the kite``, and the vocative ``Eve, hello`` / ``Eve: hello``. Names match
    a character's id or display name ("the creature", "creature"), ignoring case.

    Args:
        text: the typed line.
        names: character id -> display name (the story's cast).

    Returns:
        ``(character id, the rest of the line)``, or ``("", text)`` when it names no one.
    """
    lead = _LEAD.match(text)
    body = text[lead.end():] if lead else text
    low = body.lower()
    best: tuple[int, str] = (0, "")
    for cid, name in names.items():
        for alias in _aliases(cid, name):
            if not low.startswith(alias) or len(alias) <= best[0]:
                continue
            after = body[len(alias):]
            if lead and (not after or not after[0].isalnum()):
                best = (len(alias), cid)
            elif not lead and after[:1] in (",", ":"):
                best = (len(alias), cid)
    if not best[1]:
        return "", text
    rest = body[best[0]:].lstrip(" ,:;-—").strip()
    return best[1], rest
