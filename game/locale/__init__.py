"""The game's own words: every player-visible string the game itself says, under a stable id.

A story's strings (lines, choices, names) are in its own catalogue
(:mod:`game.story.strings`); this table holds what the game says around them: the
window's labels, key hints, overlays and notices (``ui.*``), the input parser's
replies (``input.*``), the lines headless play and replay print around the story's
(``read.*``, :mod:`game.readable`) and the world edits' lines (``edit.*``). Text is English;
``{name}`` placeholders are filled by :func:`ui`.

Translations ship with the package as gettext catalogues, ``game/locale/<lang>.po``
(the id is the ``msgctxt``, the English the ``msgid``), read with ``polib`` through
:class:`~game.story.strings.Translation`: a string whose English changed since it was
translated falls back to English. :func:`ui` uses the language play uses
(:func:`game.story.strings.language`, set by ``worldloom play --lang``). A story's
catalogue may translate any of these ids too and then wins (a story that wants its own
wording, or a language this package does not ship): the session passes it to :func:`use_story`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from game.errors import WorldloomError
from game.story.story import Story
from game.story.strings import PLACEHOLDER, Translation, catalogue_path, language, language_file

#: The folder of the shipped catalogues (``<lang>.po``).
LOCALE_DIR = Path(__file__).parent

#: id -> English. ``{x}`` placeholders are filled from :func:`ui`'s keyword arguments.
UI: dict[str, str] = {
    # window chrome
    "ui.carrying": "CARRYING",
    "ui.hint.keys": "T  type    1–9  choose    WASD  move    V  talk    F1  keys",
    "ui.entry.placeholder": "Say or do something…",
    "ui.entry.placeholder_to": "Say something to {name}…",
    "ui.entry.answer": "Answer, or say something else…",
    "ui.entry.to": "to {name}",
    "ui.subtitles_off": "subtitles off  ·  F3",
    "ui.waking": "the world is waking{dots}",
    "ui.thinking": "{name} is thinking",
    "ui.banner.reload_failed": "The story did not reload — the old one plays on",
    "ui.banner.close": "F6 retry · click to close",
    "ui.history": "History",
    "ui.history.hint": "wheel / ↑ ↓ scroll    H or Esc close",
    "ui.history.empty": "Nothing has been said yet.",
    "ui.history.more": "↓ {n} more",
    "ui.saves": "Saves",
    "ui.saves.hint": "click a save to load it    N new save    Esc close",
    "ui.saves.new": "New save",
    "ui.saves.new_sub": "save the game here",
    "ui.saves.no_picture": "no picture",
    "ui.keys": "Keys",
    "ui.keys.hint": "F1 or Esc close",
    "ui.settings": "SETTINGS",
    "ui.ending": "AN ENDING",
    "ui.ending.hint": "Backspace rolls back    F9 loads    F2 saves",
    # the key help (key, what it does)
    "ui.key.choose": "1 – 9, click", "ui.key.choose.do": "take a choice (or answer a question asked back)",
    "ui.key.move": "W A S D, arrows", "ui.key.move.do": "move / look around (hold to keep going)",
    "ui.key.type": "T or Enter", "ui.key.type.do": "type: say or do something (Enter sends, Esc leaves)",
    "ui.key.address": "@name …, ask name …", "ui.key.address.do": "say it to someone; or click them, then type",
    "ui.key.voice": "hold V", "ui.key.voice.do": "speak (push-to-talk); release to send",
    "ui.key.drop": "drop a PNG / JPEG", "ui.key.drop.do": "put the picture in the world (on someone: give it)",
    "ui.key.next": "Space, click text", "ui.key.next.do": "finish the line / next line",
    "ui.key.drag": "drag an item", "ui.key.drag.do": "onto someone to give it to them",
    "ui.key.back": "Backspace", "ui.key.back.do": "roll back the last choice",
    "ui.key.forward": "Page Down", "ui.key.forward.do": "roll forward again (until you choose differently)",
    "ui.key.history": "H, wheel up", "ui.key.history.do": "history of past lines",
    "ui.key.saves": "F2", "ui.key.saves.do": "save screen (save, load by click)",
    "ui.key.quick": "F5 / F9", "ui.key.quick.do": "quick save / quick load",
    "ui.key.reload": "F6", "ui.key.reload.do": "reload the story from disk",
    "ui.key.subtitles": "F3", "ui.key.subtitles.do": "subtitles on / off",
    "ui.key.auto": "F4", "ui.key.auto.do": "auto-advance on / off",
    "ui.key.skip": "F7", "ui.key.skip.do": "skip seen lines",
    "ui.key.speed": "F8", "ui.key.speed.do": "text speed",
    "ui.key.volume": "+ / -", "ui.key.volume.do": "volume",
    "ui.key.stats": "F10", "ui.key.stats.do": "frame statistics",
    "ui.key.fullscreen": "F11", "ui.key.fullscreen.do": "fullscreen",
    "ui.key.quit": "Esc Esc", "ui.key.quit.do": "quit",
    # settings shown in the key help
    "ui.set.speed": "text speed", "ui.set.auto": "auto-advance", "ui.set.skip": "skip seen",
    "ui.set.subtitles": "subtitles", "ui.set.volume": "volume", "ui.set.world": "world",
    "ui.set.voice": "voice input", "ui.set.reload": "reload",
    "ui.on": "on", "ui.off": "off",
    "ui.speed.slow": "slow", "ui.speed.normal": "normal", "ui.speed.fast": "fast", "ui.speed.instant": "instant",
    "ui.no_sound": " (no sound)", "ui.sound_off": " (sound off)",
    "ui.voice.none": "off (no microphone)", "ui.voice.hold": "hold V",
    "ui.reload.watching": "watching the story's files",
    # toasts and notices
    "ui.fullscreen": "Fullscreen", "ui.windowed": "Windowed",
    "ui.no_choice": "There is no choice {n} here.",
    "ui.nothing_to_choose": "There is nothing to choose now.",
    "ui.not_here": "{name} is not here.",
    "ui.no_answer": "There is no answer {n} here.",
    "ui.heard": "Heard: “{text}”",
    "ui.nothing_back": "Nothing to roll back to.",
    "ui.nothing_forward": "Nothing to roll forward to.",
    "ui.rolled_back": "Rolled back", "ui.rolled_forward": "Rolled forward",
    "ui.saved": "Saved · {slot}",
    "ui.loaded": "Loaded · {slot}", "ui.loaded_previous": "Loaded · {slot} (previous copy)",
    "ui.voice_cancelled": "Voice input cancelled",
    "ui.quit_again": "Press Esc again to quit",
    "ui.loading": "Loading… {seconds} s",
    "ui.loading.world": "The world",
    "ui.loading.words": "The sentence model (what you type and what she remembers)",
    "ui.loading.dialogue": "The dialogue model",
    "ui.loading.cast": "The characters",
    "ui.loading.ready": "ready",
    "ui.loading.type": "Type now: it is kept until the game is ready",
    "ui.loading.kept": "Kept: “{text}”",
    "ui.loading.kept_hint": "Enter keeps a line; kept lines are said in order once the game is ready",
    "ui.subtitles_on_off": "Subtitles {state}",
    "ui.auto_on_off": "Auto-advance {state}",
    "ui.text_speed": "Text speed: {speed}",
    "ui.skip_on_off": "Skip seen lines {state}",
    "ui.volume": "Volume {percent}%",
    "ui.drag_to_give": "Drag the {item} onto someone to give it.",
    "ui.no_one_to_give": "There is no one here to give the {item} to.",
    "ui.only_pictures": "{name}: only PNG or JPEG pictures can be dropped here.",
    "ui.hold_v": "Hold V while you speak.",
    "ui.no_reload": "Hot reload is not available in this build.",
    "ui.reloaded": "Reloaded {names}", "ui.the_story": "the story",
    "ui.no_microphone": "no microphone: voice input is off",
    "ui.did_not_work": "that did not work: {why}",
    "ui.previous_copy": "{why} — the previous copy is still there: {again} to load it.",
    "ui.previous_copy.f9": "press F9 again", "ui.previous_copy.click": "click it again",
    # the frame statistics line (F10)
    "ui.stats": "{shown} fps shown · {world} fps world · queued {queued} · stalls {stalls} · chunks {chunks}"
                " · frame {frame} · sound {sound} · voice {voice}",
    "ui.stats.voice_off": "off ({why})",
    # errors a player can meet in the window (each is the ``why`` or ``hint`` of a WorldloomError
    # the game raises; :func:`error_text` finds them by their text, placeholders matching anything)
    "error.story_ended": "the story has ended", "error.story_ended.hint": "load a save or roll back",
    "error.choices_changed": "the choices changed before that one was taken",
    "error.choices_changed.hint": "choose again from the new menu",
    "error.no_save": "no such save",
    "error.not_a_save": "not a worldloom save file",
    "error.save_corrupt": "save is corrupt ({why})",
    "error.save_other_story": "save is for story {saved}, not {this}",
    "error.save_elsewhere": "save does not resume in this story: {why}",
    "error.cannot_read_save": "cannot read save: {why}",
    "error.cannot_write_save": "cannot write save: {why}",
    "error.cannot_write_saves": "cannot write saves here: {why}",
    "error.bad_slot": "bad save slot name {slot}", "error.bad_slot.hint": "use letters, digits, '_', '-', '.'",
    "error.previous.hint": "load the previous copy instead",
    # the input parser's replies
    "input.negated": "You decide not to.",
    "input.undo": "You take it back.",
    "input.unknown": "Nothing seems to come of that.",
    "input.question": "Nobody here answers that.",
    "input.empty": "You say nothing.",
    "input.all_right": "All right.",
    "input.nothing_to_undo": "There is nothing to take back.",
    "input.heard_nothing": "You hear nothing you could act on.",
    "input.ask.weather": "Rain, snow, fog, or clear skies?",
    "input.ask.time_of_day": "Night, dawn, day, or dusk?",
    "input.ask.light": "Lantern glow, moonlight, firelight, brighter, or dimmer?",
    "input.ask.add_object": "Add what?",
    "input.ask.remove_object": "Remove what?",
    "input.ask.change_object": "Change what, and how?",
    "input.ask.look": "Wear what?",
    # a question asked back: its wording and its options
    "input.or": "{names} or {last}?",
    "input.the": "the {name}",
    "input.option.give": "give the {name}",
    "input.value.weather.rain": "rain", "input.value.weather.snow": "snow", "input.value.weather.fog": "fog",
    "input.value.weather.clear": "clear",
    "input.value.time_of_day.night": "night", "input.value.time_of_day.dawn": "dawn",
    "input.value.time_of_day.day": "day", "input.value.time_of_day.dusk": "dusk",
    "input.value.light.lantern": "lantern", "input.value.light.moonlight": "moonlight",
    "input.value.light.firelight": "firelight", "input.value.light.candle": "candle",
    "input.value.light.glow": "glow", "input.value.light.bright": "bright", "input.value.light.dim": "dim",
    # what an edit is called in an option or a label (game.inputs.edits.describe)
    "input.do.weather": "change the weather", "input.do.weather.rain": "make it rain",
    "input.do.weather.snow": "make it snow", "input.do.weather.fog": "make it fog",
    "input.do.weather.clear": "clear the sky",
    "input.do.time_of_day": "change the time of day", "input.do.time_of_day.night": "make it night",
    "input.do.time_of_day.dawn": "make it dawn", "input.do.time_of_day.day": "make it day",
    "input.do.time_of_day.dusk": "make it dusk",
    "input.do.light": "change the light", "input.do.light.lantern": "light it with lantern",
    "input.do.light.moonlight": "light it with moonlight", "input.do.light.firelight": "light it with firelight",
    "input.do.light.candle": "light it with candle", "input.do.light.glow": "light it with glow",
    "input.do.light.bright": "light it with bright", "input.do.light.dim": "light it with dim",
    "input.do.add_object": "add a {thing}",
    "input.do.remove_object": "remove {target}",
    "input.do.change_object": "make {target} {look}",
    "input.do.look.colour": "make {who} {colour}",
    "input.do.look": "give {who} a {wear}",
    "input.do.give_new": "give {who} a {thing}",
    "input.do.give": "give {who} the {thing}",
    "input.the_character": "the character", "input.the_thing": "the thing", "input.thing": "thing",
    # what headless play and replay print (game.readable.Reader): a labelled line, the player's
    # give, what they carry, a quest's stage and a character acting in view
    "read.labelled": "{label}: {text}",
    "read.give": "Give the {item} to {name}",
    "read.use": "Use the {item} on the {target}",
    "read.carry": "(you now carry: {items})",
    "read.carry.nothing": "(you now carry nothing)",
    "read.quest": "Quest: {text}",
    "read.quest.done": "Quest done: {text}",
    "read.act.move": "{who} goes to {place}.",
    "read.act.take": "{who} takes the {item}.",
    "read.act.drop": "{who} drops the {item}.",
    "read.act.give_you": "{who} gives you the {item}.",
    "read.act.give": "{who} gives the {item} to {name}.",
    # what a script's save / load / rollback / rollforward did (headless play and replay)
    "read.saved": "(saved as '{slot}')",
    "read.loaded": "(loaded '{slot}')",
    "read.loaded.previous": "(loaded the save before '{slot}')",
    "read.rollback.one": "(rolled back one choice)",
    "read.rollback": "(rolled back {n} choices)",
    "read.rollforward.one": "(rolled forward one choice)",
    "read.rollforward": "(rolled forward {n} choices)",
    # the world edits' lines
    "edit.weather.rain": "Clouds close over, and rain begins to fall.",
    "edit.weather.snow": "The air turns cold, and snow begins to drift down.",
    "edit.weather.fog": "A fog comes in low over the ground.",
    "edit.weather.clear": "The sky clears.",
    "edit.time_of_day.night": "The light drains away; night comes on.",
    "edit.time_of_day.dawn": "The sky pales toward dawn.",
    "edit.time_of_day.day": "Daylight spreads over everything.",
    "edit.time_of_day.dusk": "The light goes long and blue: dusk.",
    "edit.light.lantern": "A warm lantern glow settles over everything.",
    "edit.light.moonlight": "Moonlight silvers the ground.",
    "edit.light.firelight": "Firelight flickers over everything.",
    "edit.light.candle": "Candlelight, small and golden, lights the place.",
    "edit.light.glow": "A soft glow warms the light.",
    "edit.light.bright": "The light brightens.",
    "edit.light.dim": "The light dims.",
    "edit.already.weather.rain": "It is already raining here.",
    "edit.already.weather.snow": "It is already snowing here.",
    "edit.already.weather.fog": "It is already foggy here.",
    "edit.already.weather.clear": "It is already clear here.",
    "edit.already.time_of_day.night": "It is already night.",
    "edit.already.time_of_day.dawn": "It is already dawn.",
    "edit.already.time_of_day.day": "It is already day.",
    "edit.already.time_of_day.dusk": "It is already dusk.",
    "edit.already.light": "The light is already like that.",
    "edit.weather.rain.indoors": "Outside, clouds close over; rain begins to run down the windows.",
    "edit.weather.snow.indoors": "Outside the windows, snow begins to drift down.",
    "edit.weather.fog.indoors": "A fog comes in against the windows outside.",
    "edit.weather.clear.indoors": "Outside the windows, the sky clears.",
    "edit.weather.indoors": "Outside the windows, the weather changes: {value}.",
    "edit.already.weather.rain.outside": "It is already raining outside.",
    "edit.already.weather.snow.outside": "It is already snowing outside.",
    "edit.already.weather.fog.outside": "It is already foggy outside.",
    "edit.already.weather.clear.outside": "It is already clear outside.",
    "edit.refuse.weather": "The sky here keeps its own counsel; the weather does not change.",
    "edit.refuse.time_of_day": "Time will not hurry here; it stays {time_of_day}.",
    "edit.refuse.light": "The light stays as it is.",
    "edit.refuse.add_object": "Nothing new will appear in this place.",
    "edit.refuse.remove_object": "Everything here stays where it is.",
    "edit.refuse.change_object": "Nothing here will change its colours for you.",
    "edit.refuse.look": "{character} will not be dressed up here.",
    "edit.refuse.default": "The world does not bend that way here.",
    "edit.word.night": "night", "edit.word.dawn": "dawn", "edit.word.day": "day", "edit.word.dusk": "dusk",
    "edit.give_new": "You hold out {look}.",
    "edit.nothing_happens": "Nothing happens.",
    "edit.unclear": "Nothing changes; it is not clear how.",
    "edit.nothing_comes": "You picture something, but nothing comes.",
    "edit.no_room": "There is no room for anything more here.",
    "edit.bad_picture": "The picture will not come into focus ({why}).",
}


@cache
def shipped(lang: str) -> Translation | None:
    """The catalogue this package ships for ``lang`` (``fr``; ``fr_CA`` falls back to ``fr``), or ``None``.

    Raises:
        game.errors.StoryError: the shipped file is not readable PO (a broken install).
    """
    found = language_file(LOCALE_DIR, lang, ".po")
    return Translation(found[1]) if found else None


def shipped_languages() -> list[str]:
    """The languages of the catalogues shipped in :data:`LOCALE_DIR` (``["fr"]``)."""
    return sorted(p.stem for p in LOCALE_DIR.glob("*.po"))


_story: list[Translation | None] = [None]


def use_story(translation: Translation | None) -> None:
    """Let the playing story's catalogue translate these ids first (``None``: only the shipped ones)."""
    _story[0] = translation


def ui(string_id: str, /, **values: object) -> str:
    """The game's string ``string_id`` in the play language, with ``{name}`` placeholders filled.

    Looks in the story's catalogue (:func:`use_story`), then the shipped one for
    :func:`~game.story.strings.language`; an id no catalogue translates is English.

    Raises:
        KeyError: ``string_id`` is not in :data:`UI` (a programming error, not a player's).
    """
    source = UI[string_id]
    text = source
    lang = language()
    if lang:
        story = _story[0]
        found = story.by_id.get(string_id) if story is not None else None
        if found is not None and found[0] == source:
            text = found[1]
        else:
            cat = shipped(lang)
            if cat is not None:
                text = cat.get(string_id, source)
    if not values:
        return text
    filled = {k: str(v) for k, v in values.items()}
    return PLACEHOLDER.sub(lambda m: filled.get(m.group(1), m.group(0)), text)


#: ``(id, pattern)`` of every ``error.*`` string, its placeholders matching any text (built on first use).
_ERROR_PATTERNS: list[tuple[str, re.Pattern[str]]] = []


def message(text: str) -> str:
    """``text`` (an English error message the game wrote: a ``why`` or a ``hint``) in the play
    language: the ``error.*`` string of :data:`UI` whose English it is, its placeholders taking
    what stands in their place; ``text`` itself when none is, or when playing in English."""
    if not text or not language():
        return text
    if not _ERROR_PATTERNS:
        for sid, source in UI.items():
            if sid.startswith("error."):
                parts = PLACEHOLDER.split(source)
                pattern = "".join(re.escape(x) if k % 2 == 0 else f"(?P<{x}>.+?)" for k, x in enumerate(parts))
                _ERROR_PATTERNS.append((sid, re.compile(pattern, re.S)))
    for sid, rx in _ERROR_PATTERNS:
        found = rx.fullmatch(text)
        if found is not None:
            return ui(sid, **found.groupdict())
    return text


def error_text(exc: WorldloomError) -> str:
    """What the window says for ``exc``: as ``str(exc)`` (``where: why (hint)``), with ``why``
    and ``hint`` in the play language where :data:`UI` has them (:func:`message`)."""
    why, hint = message(exc.why), message(exc.hint)
    text = f"{exc.where}: {why}" if exc.where else why
    return f"{text} ({hint})" if hint else text


def missing_translations(story: Story, lang: str) -> list[str]:
    """What playing ``story`` in ``lang`` will show untranslated, one sentence each (``[]``: nothing).

    The story has no catalogue for ``lang`` (its text stays in its own language), and/or
    the game ships none for its own words (the window's labels, the parser's replies).
    """
    out: list[str] = []
    if not lang:
        return out
    path = catalogue_path(story, lang)
    if not path.is_file():
        out.append(f"{story.folder.name} has no {lang} translation ({path} not found): its lines, choices "
                   f"and names stay untranslated; `worldloom strings extract {story.folder} --lang {lang}` "
                   "writes a catalogue to translate")
    if shipped(lang) is None:
        out.append(f"the game's own words (window labels, key hints, replies) have no {lang} translation; "
                   f"shipped: {', '.join(shipped_languages()) or 'none'}")
    return out


__all__ = ["LOCALE_DIR", "UI", "error_text", "message", "missing_translations", "shipped", "shipped_languages", "ui",
           "use_story"]
