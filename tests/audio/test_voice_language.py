"""The voice speaks the language play is in (``play --lang fr``): the card's timbre, the language's voice."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from game.audio.tts import TextToSpeech, VoiceSettings, espeak_ng_command, voice_in_language
from game.cast.card import load_yaml_card

CARD = Path(__file__).parents[2] / "characters" / "eve.yaml"


def test_the_language_replaces_the_voice_and_keeps_its_variant() -> None:
    assert voice_in_language("en-gb-scotland+f3", "fr") == "fr+f3"
    assert voice_in_language("en-us", "de") == "de"
    assert voice_in_language("fr-be+m2", "fr") == "fr-be+m2"  # already that language
    assert voice_in_language("en-us+f3", "") == "en-us+f3"  # no language: the card's own
    assert voice_in_language("en-us+f3", "pt_BR") == "pt-br+f3"


def test_eves_card_voice_in_french_is_a_french_espeak_voice() -> None:
    card = load_yaml_card(CARD)
    english = VoiceSettings.from_card(card.voice)
    french = VoiceSettings.from_card(card.voice, None, "fr")
    assert french.voice == voice_in_language(card.voice.voice, "fr") and french.voice.startswith("fr")
    assert (french.rate, french.pitch, french.volume) == (english.rate, english.pitch, english.volume)
    assert espeak_ng_command(french, "/tmp/x.wav")[1:3] == ["-v", french.voice]


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_french_is_spoken_with_french_phonemes() -> None:
    """espeak-ng reads the French line with its French rules (``-x`` prints the phonemes it speaks)."""
    line = "Le soir sur l'Échine."

    def phonemes(voice: str) -> str:
        done = subprocess.run(["espeak-ng", "-q", "-x", "-v", voice], input=line.encode(), capture_output=True,
                              check=True)
        return done.stdout.decode().strip()

    fr, en = phonemes(voice_in_language("en-gb-scotland+f3", "fr")), phonemes("en-gb-scotland+f3")
    assert fr and fr != en
    audio = TextToSpeech(engine="espeak-ng").synthesise(line, VoiceSettings(voice_in_language("en-us+f3", "fr")))
    assert len(audio) > 0 and float(np.abs(audio).max()) > 0.01
