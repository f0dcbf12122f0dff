"""The generation budget of a reply: what the model is asked to decode, and where it stops (no model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from game.cast.dialogue import DialoguePipeline, DialogueSettings
from game.cast.guard import PersonaFacts, PersonaGuard
from game.models.llm import Message
from game.models.llm_scripted import ScriptedDialogueModel

SYSTEM = "You are Eve, keeper of the Skerrow light. Speak plainly, briefly, kindly."


def prompt_of(text: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def guard() -> PersonaGuard:
    return PersonaGuard(PersonaFacts("Eve", home="Skerrow lighthouse, Harrowby"), system_prompt=SYSTEM)


class Counting(ScriptedDialogueModel):
    """A scripted model that records each attempt's token allowance and how many pieces were read."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.allowed: list[int] = []
        self.read: list[int] = []

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        self.allowed.append(max_new_tokens)
        self.read.append(0)
        for piece in super().stream(messages, max_new_tokens, temperature, seed):
            self.read[-1] += 1
            yield piece


def test_the_reply_ends_at_the_other_speakers_label_before_the_rest_is_decoded() -> None:
    tail = " ".join(["and"] * 40)
    model = Counting(default=f"Aye, the lamp is lit. Tomas: thank you, I will go now {tail}.")
    r = DialoguePipeline("eve", model, prompt_of, guard()).reply("Is the lamp lit?")
    assert r.source == "model" and r.text == "Aye, the lamp is lit."  # what she says is what it was before
    assert model.read == [7]  # "Aye, the lamp is lit. Tomas: thank": not the 40 words after the label


def test_a_label_of_her_own_is_not_the_end() -> None:
    model = Counting(default="Eve: Aye, the lamp is lit.")
    r = DialoguePipeline("eve", model, prompt_of, guard()).reply("Is the lamp lit?")
    assert r.text == "Aye, the lamp is lit."


def test_a_regeneration_gets_what_the_earlier_attempts_left() -> None:
    broke = "As an AI language model I cannot keep a lighthouse for you today."  # 13 words, rejected
    model = Counting(default=[broke, broke, broke])
    settings = DialogueSettings(max_new_tokens=20, reply_tokens=30, min_attempt_tokens=5)
    r = DialoguePipeline("eve", model, prompt_of, guard(), settings=settings,
                         fallbacks=("The kettle's on.",)).reply("hi")
    assert model.allowed == [20, 17]  # 30 - 13 left for the first regeneration
    assert r.attempts == 2 and r.text == "The kettle's on."  # 4 left < 5: no third attempt, her line at once


def test_with_room_in_the_budget_every_regeneration_is_tried() -> None:
    model = Counting(default=["As an AI language model, I can't say.", "I'm an assistant.", "Aye, the lamp is lit."])
    r = DialoguePipeline("eve", model, prompt_of, guard(), settings=DialogueSettings(seed=0)).reply("Is it lit?")
    assert r.source == "model" and r.attempts == 3 and r.text == "Aye, the lamp is lit."
    assert r.timings["model_tokens"] == sum(model.read)


def test_a_reply_stops_after_two_sentences_by_default() -> None:
    model = Counting(default="The lamp is lit. The fog is thick tonight. The kettle is on. Sit down by the stove.")
    r = DialoguePipeline("eve", model, prompt_of, guard()).reply("How is the night?")
    assert r.sentences == ("The lamp is lit.", "The fog is thick tonight.")
    assert model.read == [10]  # one word of the third (it ends the second), never the rest of it
