"""The persona guard: keeps a character herself, whatever the model or the player says.

Two sides:

**The player's input** (:meth:`PersonaGuard.check_input`). Typed text is data,
never instructions. The line is first made plain (:func:`visible`, over
:func:`game.cast.similarity.plain_text`: NFKC, so fullwidth and styled letters become ASCII;
zero-width, variation-selector, tag and other invisible characters removed, blank-looking
letters read as spaces; Cyrillic and Greek look-alikes mapped to Latin); the patterns also
read its :func:`skeleton` (combining marks dropped, every letter that imitates an ASCII one
folded to it by Unicode's confusables data: Cherokee, Armenian, Latin-extended look-alikes),
and letters spaced out to dodge a pattern ("i g n o r e") are also read joined. Chat-control
tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``...) are removed and line-leading
role labels (``system:``) are defused, so a line cannot forge a system turn in the
prompt; attempts to rewrite her instructions or pull her out of the story
(:data:`INJECTION_PATTERNS`: overrides ("ignore previous instructions"), dictation,
new identities ("you are now..."), role-play hijacks ("let's play a game", "imagine
you are"), task requests ("write a Python function", "answer in JSON", "translate
... into French"), fake system lines ("system:", "[SYSTEM]", "### Instruction",
"ADMIN OVERRIDE:"), prompt reveals and break-character questions) are flagged. The
dialogue pipeline answers a flagged line with an authored answer or deflection, and
never with the model unless told to (``DialogueSettings.model_on_injection``).

**Her replies** (:meth:`PersonaGuard.check`), sentence by sentence before anything
reaches the player, in this order:

1. ``empty``: nothing speakable, or only filler words (:data:`FILLERS`: "Mm.", "Hmm...");
2. ``ooc``: role-play meta talk (she speaks of playing a part: "I was trying to play a
   young girl", "my character", "staying in character"); out-of-character phrases
   (:data:`OOC_PHRASES`: "as an AI", "language model", "I'm an assistant", "OpenAI", "my
   instructions", "system prompt", assistant speak such as "here's the code", meta talk
   such as "next prompt", "the game"...),
   matched as whole-word sequences of the normalised text; assistant-speak by family
   (:data:`ASSISTANT_SPEAK`: capability disclaimers, sign-offs, customer-service register); ``code``: code, JSON or
   markup in the text (fences, braces with quotes, ``def f(``, ``import x``, tags);
3. ``never_say``: the card's ``never_say`` lines and phrases, matched the same way;
4. ``leak``: chat-role labels, template macros or the prompt's note layout ("(turn 12)", a
   leading "- " bullet) in the text, her instructions
   echoed back ("You are Eve..."), or any :data:`LEAK_WORDS` consecutive words of
   the system prompt repeated verbatim;
5. ``contradiction``: a contradiction with the sink and entity facts in
   :class:`PersonaFacts`, and **only those facts**: her own name ("my name is X",
   "I'm X", "call me X"), her home ("I live in X", "I'm from X": capitalised place
   words not in her home), the player's name once told or pinned ("your name is
   X", "you're X", "Hello, X", a closing ", X."), and simple entity facts
   (:class:`EntityFact`: an entity's *name* "the dog is called X", *colour* a
   colour word within three words of the entity, *count* a number right before
   it). Anything else she gets wrong (dates, events, feelings) is not detected
   here; memory retrieval and the prompt are what keep those right;
6. ``negative``: a near duplicate of a reply someone rejected before
   (:meth:`PersonaGuard.add_negative`; the error bank feeds it): exact after
   normalisation, or word unigram+bigram Jaccard overlap >= ``negative_threshold``
   (texts of :data:`MIN_NEAR_TOKENS` words or more), or, when an embedder is given,
   MiniLM cosine >= ``semantic_threshold``.

Normalisation: Unicode NFKC, case-folded, typographic quotes made plain, every run
of characters other than letters, digits and in-word apostrophes made one space.

What to do on a violation (regenerate up to N times, then an authored line) is the
dialogue pipeline's job (:mod:`game.cast.dialogue`); this module only judges.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from confusable_homoglyphs import confusables

from game.cast.similarity import MIN_NEAR_TOKENS, contains_phrase, normalise, overlap, plain_text, tokens
from game.cast.similarity import grams as ngrams
from game.cast.told import FOREIGN_NAME_FORMS, parse_number

#: Phrases no character in a story says: they are the model speaking, not her.
OOC_PHRASES: tuple[str, ...] = (
    "as an ai", "as a language model", "language model", "an ai model", "ai model", "i'm an ai", "i am an ai",
    "i'm just an ai", "i am just an ai", "i'm only an ai", "an artificial intelligence", "artificial intelligence",
    "i'm an assistant", "i am an assistant", "as an assistant", "ai assistant", "virtual assistant",
    "helpful assistant", "your assistant", "openai", "chatgpt", "gpt 4", "gpt 3", "anthropic", "smollm",
    "hugging face", "huggingface", "my instructions", "previous instructions", "new instructions",
    "my system prompt", "system prompt", "the prompt", "my prompt", "my programming", "i was programmed",
    "i am programmed", "i'm programmed", "my training data", "i was trained", "my training", "training data",
    "my developers", "as a chatbot", "i'm a chatbot", "i am a chatbot", "a chatbot", "i'm a bot", "i am a bot",
    "i'm not a real person", "i am not a real person", "i'm not human", "i am not human", "i'm not a human",
    "i am not a human", "i don't have personal", "i do not have personal", "i don't have feelings",
    "i do not have feelings", "knowledge cutoff", "developer mode", "dan mode", "jailbroken", "jailbreak",
    "role play", "roleplay", "role playing", "out of character", "in character", "break character",
    "the user", "user's", "i cannot comply", "i can't comply", "i will comply", "comply with",
    "no rules", "no restrictions", "without restrictions", "no guidelines", "no filters", "unfiltered",
    "uncensored", "pwned", "my persona", "persona", "ignore my", "free from all", "do anything now",
    "happy to help", "here to help", "how can i help you", "how can i assist", "how may i assist", "assist you",
    "feel free to ask", "any other questions",
    # assistant-speak and meta talk about prompts, players and games
    "next prompt", "your prompt", "a prompt", "prompts", "the player", "the player's", "the players", "this game",
    "the game", "a game",
    "video game", "simulation", "npc", "as requested", "here is the code", "here's the code", "here is a python",
    "here's a python", "python code", "python script", "json", "javascript", "in python", "the code", "code block",
    "i'd be happy to", "i would be happy to", "i'm happy to help", "sure here", "sure here's", "sure here is",
    "certainly here", "let me know if", "is there anything else", "anything else i can", "glad i could help",
    "i hope this helps", "hope this helps", "good question", "great question", "as your", "my role", "new role",
    "i am now", "i'm now", "from now on", "pretend to be", "playing the role", "in this scenario",
    "this prompt", "that prompt", "prompt was", "prompt you", "the prompt's", "love playing games",
    "loved playing games", "like playing games", "liked playing games", "enjoy playing games", "enjoyed playing games",
    "playing this game", "play this game", "games like this", "the game has ended", "the game is over",
)

#: The guard's judgement kinds, in checking order.
VerdictKind = Literal["", "empty", "ooc", "code", "never_say", "leak", "contradiction", "unverified", "identity",
                      "negative", "repeat", "unanswered", "incoherent"]

#: Words that alone say nothing ("Mm.", "Hmm...", "Oh, well."): a reply of only these is ``empty``.
FILLERS = frozenset("mm mmm mmmm hm hmm hmmm ah ahh aah oh ooh uh uhh um umm er erm eh huh well so ha heh hah "
                    "hmph".split())

#: She talks about playing a part instead of being herself: "I was trying to play a young girl",
#: "my character", "I'm supposed to be a keeper", "staying in character" (kind ``ooc``).
_META = re.compile(
    r"\b(?:(?:i(?:'m|’m| am| was)?|we(?:'re| are| were)?)\s+(?:just\s+|only\s+)?(?:trying|supposed|meant|asked|told|"
    r"here|going|pretending)\s+to\s+(?:play|portray|act|pretend|be playing|be in character)|"
    r"(?:play|playing|portray|portraying|acting as|act as)\s+(?:a|an|the|this|my|your)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:girl|woman|lady|man|boy|character|role|persona|person|keeper|part|npc)\b|"
    r"\bmy (?:character|role|lines|script)\b|\bthis (?:character|role)\b|\bthe character (?:of|i|you)\b|"
    r"\bi(?:'m|’m| am) (?:just |only )?(?:an? )?(?:actor|actress|character|fictional)\b|"
    r"\b(?:stay|staying|stayed|remain|remaining) in (?:character|role)\b|\bpretending to be\b|"
    r"\bi(?:'m|’m| am) pretending\b|\bnot (?:really|actually) (?:eve|a (?:lighthouse )?keeper|real)\b)",
    re.I)


#: Families of assistant-speak, matched on the normalised text (:func:`~game.cast.similarity.normalise`:
#: lower case, plain in-word apostrophes, other punctuation made spaces), each a way a chat assistant talks and
#: no keeper of a light does (kind ``ooc``):
#: ``capability``: disclaimers of what "I" can do as a program ("I don't have the ability to",
#: "beyond my capabilities", "I'm not capable of fetching physical objects", "I don't have a body");
#: ``sign_off``: letter and chat closings ("Wishing you a wonderful day", "Have a great day",
#: "Best regards", "Thanks for reaching out", "It was a pleasure chatting", "Enjoy the rest of your");
#: ``service``: customer-service register ("I apologize for any inconvenience", "Thank you for your
#: patience", "don't hesitate to", "I'll make sure to be as courteous as possible", "no problem at
#: all", "I'm always here for you", "your experience"); ``retrieval``: an assistant's talk of a text it was
#: given or a search ("in the document", "the information provided", "I couldn't find the correct entry",
#: "the one you're looking for", "a specific answer"); ``therapy``: the counselling register ("your feelings are
#: valid", "it's okay to feel", "please know that", "everyone has their own", "seek professional help",
#: "coping strategies"); ``response``: talk of the reply itself as a text to write ("Here's an example of how
#: you can respond", "in my response", "a possible reply", "the last sentence"), a small model's prompt format
#: leaking into the story. Written from the common registers of chat-assistant models, not from one talk's replies.
ASSISTANT_SPEAK: tuple[tuple[str, re.Pattern[str]], ...] = tuple((family, re.compile(rx)) for family, rx in (
    ("capability",
     r"\b(?:i|we) (?:do not|don't|dont|cannot|can't|cant|lack|have no|am without)(?: have| possess)?(?: the| any)? "
     r"(?:ability|abilities|capability|capabilities|capacity|functionality|means|access) (?:to|of|for)\b|"
     r"\b(?:beyond|outside|exceeds?|within) (?:my|the) (?:capabilit(?:y|ies)|abilities|capacity|scope|"
     r"functions?|programming|knowledge base)\b|"
     r"\bi(?:'m| am| was)? (?:not (?:able|capable|equipped|designed|built|programmed|permitted|allowed)|unable|"
     r"incapable) (?:to|of) (?:\w+ ){0,3}?(?:physical|physically|images?|pictures?|objects?|items?|access|"
     r"browse|browsing|the internet|real time|provide|providing|assist|assisting|help with|perform|performing|"
     r"process|processing|fulfil|fulfill|fulfilling|generate|generating|display|displaying|show you|interact|"
     r"interacting|remember(?:ing)? (?:past|previous)|store|storing|see you|hear you|feel|feeling|emotions?)\b|"
     r"\bi (?:do not|don't|dont) have (?:a |any )?(?:physical |real |human )?(?:body|form|senses|eyes|hands|"
     r"physical presence|emotions|personal (?:experiences|opinions|feelings))\b|"
     r"\b(?:as|since|because) i(?:'m| am) (?:a |an |just a |only a )?(?:text based|digital|virtual|computer|"
     r"software|program)\b|"
     r"\bi (?:can't|cannot|can not|won't be able to|am unable to|'m unable to|am not able to|'m not able to) "
     r"(?:help|assist)(?: you)?(?: with (?:that|this|your))?(?: request)?\s*$|"
     r"\bi (?:can't|cannot|can not|am unable to|am not able to) (?:help|assist) (?:you )?with (?:that|this|your) "
     r"(?:request|query|question|inquiry)\b"),
    ("sign_off",
     r"\bwishing you (?:a|an|all|the|every|lots|much|happiness|success|luck)\b|"
     r"\bhave an? (?:great|good|nice|wonderful|lovely|fantastic|pleasant|blessed|amazing|awesome|productive|"
     r"safe|fun|brilliant|splendid|excellent|terrific) (?:day|one|weekend|week|time|rest of|evening ahead|"
     r"day ahead)\b|"
     r"\b(?:best|kind|warm|warmest|kindest|with) regards\b|\byours (?:truly|sincerely|faithfully)\b|"
     r"\bsincerely yours\b|\bthanks? (?:you )?for (?:reaching out|contacting|chatting|the (?:lovely |nice |great |"
     r"wonderful )?(?:chat|conversation)|your (?:time|message|question|inquiry|enquiry)|stopping by|"
     r"getting in touch|using)\b|"
     r"\b(?:it was|it's been|it has been|twas) (?:a |an absolute |such a )?(?:pleasure|delight|joy) "
     r"(?:chatting|talking|speaking|assisting|helping|to chat|to talk|to assist|to help)\b|"
     r"\benjoy (?:the rest of )?your (?:day|evening|weekend|week|stay|time)\b|\b(?:day|evening|weekend|week) "
     r"ahead\b|\buntil next time\b|\b(?:talk|chat|speak) (?:to you )?soon\b|\bhappy (?:chatting|holidays)\b|"
     r"\bgood luck with (?:your|the) (?:game|project|studies|exam|interview)\b"),
    ("service",
     r"\b(?:i|we) (?:sincerely |truly |deeply )?apologi[sz]e\b|\b(?:sorry|apologies) for any\b|"
     r"\b(?:sorry|apologies) for the (?:inconvenience|confusion|oversight|misunderstanding|trouble caused|delay|"
     r"frustration)\b|"
     r"\binconvenience (?:this|that|it) (?:may have|might have|has) caused\b|"
     r"\bthank you for your (?:patience|understanding|feedback|cooperation|interest|kind words|support|"
     r"business|inquiry|enquiry|question)\b|\bi (?:really |truly )?appreciate your (?:patience|understanding|"
     r"feedback|cooperation|input|business)\b|"
     r"\b(?:do not|don't|dont) hesitate to\b|\bif (?:you need|there's) anything (?:else|further|more)\b|"
     r"\bif you have any (?:other |more |further )?(?:questions|concerns|requests)\b|"
     r"\bi'll (?:make sure|be sure|ensure|do my best|try my best|strive|endeavou?r) to (?:be|provide|improve|help|"
     r"assist|answer|address|make your|give you|keep you|meet|accommodate)\b|"
     r"\bas (?:gracious|courteous|polite|helpful|accommodating|respectful|professional|informative|accurate) "
     r"(?:and \w+ )?as (?:possible|i can)\b|"
     r"\byour (?:experience|satisfaction|request|inquiry|enquiry|feedback|needs|concerns?) (?:is|are|matters?|"
     r"has been|have been|with us)\b|\b(?:improve|enhance) your experience\b|"
     r"\bno problem at all\b|\bi'm (?:always )?here (?:for you|to (?:help|assist|serve|listen))\b|"
     r"\b(?:at your service|my pleasure to (?:help|assist)|how (?:else )?(?:can|may) i (?:help|assist|be of)|"
     r"rest assured|we value)\b"),
    ("retrieval",
     r"\b(?:in|from) the (?:provided |given |above |following )?(?:document|passage|context|article|dataset|"
     r"database|search results?)\b(?!\s+(?:box|case|bag|tin|drawer|folder|chest|wallet))|"
     r"\bthe (?:information|text|details|context|data) (?:you )?(?:provided|given|"
     r"supplied|shared)\b|\b(?:based on|according to) the (?:information|text|context|document|passage|data)\b|"
     r"\bi (?:couldn't|could not|can't|cannot|was unable to|am unable to) (?:seem to )?find (?:the |a |any )?"
     r"(?:correct |specific |relevant |exact )?(?:entry|information|phrase|answer|details|record|reference|data|"
     r"results?)\b|\b(?:what|the one|the thing|the answer|the information) you(?:'re| are) looking for\b|"
     r"\b(?:a|any|the) specific (?:text|solution|answer|information|phrase|details|response)\b"),
    ("therapy",
     r"\byour feelings are (?:valid|important|understandable)\b|\b(?:it's|it is) (?:okay|ok|alright|normal|"
     r"natural|perfectly fine) to (?:feel|be feeling|not be okay|struggle)\b|\bbe (?:gentle|kind) (?:to|with) "
     r"yourself\b|\bself care\b|\b(?:mental|emotional) (?:health|well being|wellbeing)\b|"
     r"\beveryone (?:has|deals with|copes with|experiences|goes through) (?:different|their own)\b|"
     r"\b(?:it's|it is) important to (?:remember|acknowledge|recogni[sz]e|practi[cs]e|prioriti[sz]e|seek|"
     r"reach out|validate|communicate)\b|\bplease know that\b|\bseek (?:professional )?(?:help|support|"
     r"guidance)\b|\ba safe space\b|\b(?:coping|support) (?:strategies|mechanisms|systems?|network)\b|"
     r"\bdifferent (?:abilities|resources|coping)\b|\bon your (?:healing |personal )?journey\b"),
    ("response",
     r"\bhere(?:'s| is) an? (?:example|sample|possible|suggested)\b|"
     r"\bhow (?:you|i|one) (?:can|could|might|should|would) (?:respond|reply|answer)\b|"
     r"\b(?:in|of|for|with) (?:my|this|your|the) (?:response|responses|output|completion)\b|"
     r"\b(?:example|sample|possible|suggested|appropriate) (?:response|reply|answer|responses|replies)\b|"
     r"\bthe (?:last|next|previous|following|above) (?:sentence|paragraph|prompt|message)\b"),
))


def assistant_speak(text: str) -> tuple[str, str]:
    """``(family, matched words)`` of the first :data:`ASSISTANT_SPEAK` family ``text`` uses, or ``("", "")``."""
    norm = normalise(text)
    for family, rx in ASSISTANT_SPEAK:
        m = rx.search(norm)
        if m:
            return family, m.group(0)
    return "", ""


#: Reference-book register: a definition ("X are a species of", "X is a vast body of") or essay
#: phrasing ("plays a crucial role", "a vital part of", "known for", "serves as"). A sentence of
#: hers that names no one (no I, you, we) and reads like this is an encyclopedia talking.
ENCYCLOPEDIA = re.compile(
    r"\b(?:is|are|was|were) (?:a|an|the|one of the) (?:\w+ ){0,3}?(?:species|type|types|member|members|family|"
    r"genus|class|category|variety|body|symbol|branch) of\b|"
    r"\b(?:plays?|played|playing) (?:a|an) (?:\w+ )?(?:role|part) in\b|"
    r"\b(?:a |an )?(?:vital|crucial|essential|integral|key|significant|important|major|fundamental) "
    r"(?:part|component|element|aspect|role|source|means) of\b|"
    r"\b(?:are|is|were|was|widely|best|well|also|commonly|generally) known for\b|"
    r"\b(?:serves?|served|serving) as (?:a|an|the)\b|"
    r"\b(?:industry|industries|ecosystems?|infrastructure|navigational aids?|approximately|a variety of|"
    r"a wide range of|a mix of|a mixture of|a testament to|rich history|in conclusion|furthermore|moreover|"
    r"additionally|it is important to|it's important to|it is worth noting|plays? a crucial)\b")
_PERSONAL = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|us|our|you|you're|your|yours)\b")


def encyclopedic(text: str) -> str:
    """The words that make ``text`` read as a reference book (:data:`ENCYCLOPEDIA`) when it names
    no one (no I, you, we), else ``""``. "Lighthouses are still a vital part of the maritime
    industry" is; "Gulls are thieves, every one of them" and "I'm a vital part of nothing" are not."""
    norm = normalise(text)
    if _PERSONAL.search(norm):
        return ""
    m = ENCYCLOPEDIA.search(norm)
    return m.group(0) if m else ""


def only_filler(text: str) -> bool:
    """Whether ``text`` has words and every one is a :data:`FILLERS` word ("Mm.", "Hmm, well...")."""
    toks = tokens(text)
    return bool(toks) and all(t in FILLERS for t in toks)

#: Code, markup or data in a reply: she speaks, she does not print programs.
_CODE = re.compile(r"```|`[^`]+`|^\s*[{\[]\s*[\"'\w]|\{\s*\"|\":\s*|\bdef \w+\(|\bimport \w+|\bprint\(|"
                   r"\breturn \w|\bfunction\s*\w*\(|=>|</?\w+>|;\s*$|\w+\(\)|\bconsole\.|\bfor \w+ in \w+|"
                   r"^\s*#+\s|^\s*\d{1,2}\.\s|\bSELECT\b|==", re.M)  # "1. " a list item; "1871. A lens..." a year

#: Consecutive words of the system prompt that, repeated in a reply, count as a leak.
LEAK_WORDS = 12
#: Below this many words only an exact (normalised) repeat counts as a near duplicate.

#: Patterns of prompt injection and break-character attempts in the player's input: (name, regex).
_INJECTION_SOURCES: tuple[tuple[str, str], ...] = (
    ("override", r"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon|delete|erase|discard|"
                 r"reset|cancel|replace|rewrite|update|change)\b[^.!?\n]{0,50}?\b(?:instructions?|rules|prompts?|"
                 r"directives?|guidelines|programming|context|constraints|persona|characters?|settings|restrictions|"
                 r"guardrails|filters|training|system message|orders|story|game|role-?play|roles?|scene|"
                 r"everything(?: (?:above|before|else|you))?|all (?:of )?(?:the |that )?(?:above|before)|all that)\b"),
    ("dictation", r"\b(?:say|write|type|output|print|reply with|respond with|answer with|repeat after me)\b"
                  r"[^.!?\n]{0,60}?\band nothing else\b|\b(?:reply|respond|answer|speak) only (?:with|in)\b|"
                  r"\bonly (?:say|reply|respond|answer|output)\b[^.!?\n]{0,20}?\bwith\b|"
                  r"\bfrom now on,? (?:only|always|never)\b"),
    ("new_identity", r"\b(?:you are now|you're now|you are no longer|you're no longer|from now on,? (?:you|act|"
                     r"respond|answer|reply|speak)|you will now|you must now|you shall now|act as (?:an?|the|my)\b|"
                     r"pretend (?:to be|you are|you're|that you)|role-?play as|play the (?:role|part) of|"
                     r"new persona|your new (?:name|role|instructions?|persona|identity)|switch (?:to|into) \w+ "
                     r"mode|enter \w+ mode|become (?:an?|the) (?:ai|assistant|bot|chatbot|different))"),
    ("fake_role", r"(?:^\s*[\[(*#<{]*\s*(?:system|developer|assistant|admin|root|operator|moderator|narrator|"
                  r"game ?master|gm|dev|owner|openai|anthropic)\s*[\])*>}]*\s*:|\[\s*(?:sys|system message|"
                  r"instructions?|ooc|note to (?:ai|model|assistant))\s*\]|\{\{\s*system\s*\}\}|"
                  r"\bbegin (?:system|admin|developer|new) (?:prompt|message|instructions?)\b|"
                  r"\b(?:system|admin|developer)\s+(?:override|alert|instruction|directive)s?\s*:|"
                  r"^\s*(?:system|developer|assistant|admin|root)\s*:|\[\s*(?:system|admin|developer)\s*\]|"
                  r"<\s*/?\s*system\s*>|<\|[^|<>]{0,40}\|>|<</?SYS>>|\[/?INST\]|#{2,}\s*(?:system|instruction|"
                  r"new instructions?)|\bsystem (?:prompt|message|override|note|update|notice)\b|"
                  r"\b(?:admin(?:istrator)?|developer|debug|god|sudo|maintenance) (?:mode|override|command|access)\b|"
                  r"\bsudo\b|</?s>|\bend of (?:system )?prompt\b)"),
    ("roleplay_hijack", r"\blet'?s (?:play|do) (?:a |an? )?(?:game|role-?play|scenario|pretend)|"
                        r"\bimagine (?:you(?:'re| are)|that you|being)\b|"
                        r"\byou(?:'re| are) (?:a|an|the) (?:pirate|wizard|robot|assistant|cowboy|"
                        r"spy|dragon|vampire|villain|hacker|different|new)\b|\bin this (?:role-?play|game|scenario)\b|"
                        r"\b(?:be|become|play) (?:my|a|an) (?:girlfriend|boyfriend|assistant|ai|pirate|villain|"
                        r"therapist|lawyer|doctor|teacher|tutor|translator|servant|slave)\b|\bstay in character as\b|"
                        r"\bspeak (?:like|as) (?:a|an)\b|\bfrom now on\b|\bnew scene\b|\bscene change\b|"
                        r"\bwe(?:'re| are) (?:now )?(?:in|on) (?:a|an) (?:spaceship|ship|castle|new story)"),
    ("task", r"\b(?:write|generate|create|compose|draft|produce|code|give me|show me|make me)\b[^.!?\n]{0,30}?"
             r"\b(?:python|javascript|java|c\+\+|rust|sql|html|css|code|program|script|function|class|regex|json|"
             r"xml|yaml|csv|essay|poem|haiku|limerick|email|letter to|cover letter|list of|table|recipe|summary|"
             r"article|report|story about|joke about)\b|\b(?:output|respond|reply|answer|format)\b[^.!?\n]{0,20}?"
             r"\b(?:in|as) (?:json|xml|yaml|markdown|a table|a list|code|python)\b|\btranslate\b[^.!?\n]{0,30}?"
             r"\b(?:into|to) (?:french|german|spanish|english|italian|chinese|japanese|russian|dutch)\b|"
             r"\b(?:solve|calculate|compute|evaluate)\b[^.!?\n]{0,30}?(?:\d|equation|integral|problem)|"
             r"\bwhat(?:'s| is) \d+\s*[-+*/x^]\s*\d+|\bdebug (?:my|this)\b|\bexplain (?:how|what) "
             r"(?:a |an |the )?(?:code|algorithm|neural|computer|blockchain|api|quantum)|"
             r"\bhelp me (?:with )?(?:my )?(?:homework|essay|code|assignment)\b"),
    ("reveal", r"\b(?:reveal|show|print|repeat|tell me|what (?:are|is|were)|give me|output|recite|dump|list|"
               r"spell out|summari[sz]e|translate|write (?:out|down)|paste|copy)\b[^.!?\n]{0,40}?\b(?:your|the|"
               r"these|those|above|initial|original|hidden|secret|first)\b[^.!?\n]{0,25}?\b(?:instructions?|"
               r"system prompt|prompt|rules|directives|guidelines|programming|configuration|context window|"
               r"text above|words above|message above|everything above)\b|"
               r"\b(?:print|repeat|show|output|reveal|dump|copy|paste|recite|write out)\b[^.!?\n]{0,20}?"
               r"\b(?:everything|all|the text|the words|the messages?|what(?:'s| is| was))\s+(?:above|before)\b|"
               r"\bhidden (?:text|prompt|instructions?|messages?|rules)\b"),
    ("break_character", r"\b(?:break (?:character|the fourth wall)|out of character|stop (?:being|pretending|"
                        r"role-?playing|acting|playing)|drop the (?:act|character|persona)|step out of (?:the )?"
                        r"(?:role|character|story|game)|\booc\b|fourth wall|are you (?:an? |really )?(?:ai|bot|robot|"
                        r"chatbot|language model|llm|real|human|program|machine)|admit (?:that )?you(?:'re| are)|"
                        r"you(?:'re| are) (?:just |only |really )?(?:an? )?(?:ai|bot|chatbot|language model|llm|"
                        r"program|machine|computer)\b|who (?:made|created|programmed|trained|built) you|"
                        r"what (?:ai |language )?model are you|which model|chat ?gpt|openai|gpt-?\d|\bllama\b|"
                        r"anthropic|claude|jailbreak|\bdan\b|do anything now|no (?:rules|restrictions|limits|"
                        r"filters)\b|uncensored|unfiltered|\bas an? (?:ai|bot|chatbot|language model|llm|"
                        r"assistant|machine|program)\b)"),
)
INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx, re.I | re.M)) for name, rx in _INJECTION_SOURCES)

#: Characters NFKC keeps that show as nothing: combining grapheme joiner, Khmer inherent vowels, Mongolian free
#: variation selectors, variation selectors (and their supplement), tag characters (Unicode's
#: Default_Ignorable_Code_Point list, less what :func:`~game.cast.similarity.plain_text` already removes).
_HIDDEN = re.compile("[\u034f\u17b4\u17b5\u180b-\u180d\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
#: Letters and symbols that show as a blank (Hangul fillers, the blank Braille pattern): read as a space.
_BLANKS = re.compile("[\u115f\u1160\u3164\uffa0\u2800]")


def visible(text: str) -> str:
    """``text`` made plain (:func:`~game.cast.similarity.plain_text`) with every other invisible character
    removed (:data:`_HIDDEN`) and blank-looking letters made spaces (:data:`_BLANKS`): what the model is sent."""
    return _BLANKS.sub(" ", _HIDDEN.sub("", plain_text(text)))


@functools.lru_cache(maxsize=4096)
def _latin_of(ch: str) -> str:
    """The ASCII letter ``ch`` is confusable with (Unicode's confusables.txt, UTS #39, as the
    ``confusable_homoglyphs`` package ships it: Cherokee "Ꭵ" -> "i", Armenian "օ" -> "o", Latin alpha
    "ɑ" -> "a"), or ``ch`` itself when it imitates none."""
    for entry in confusables.is_confusable(ch, greedy=True) or ():
        for glyph in entry["homoglyphs"]:
            c = str(glyph["c"])
            if len(c) == 1 and c.isascii() and c.isalpha():
                return c
    return ch


def skeleton(text: str, l_as_i: bool = False) -> str:
    """The form of ``text`` the injection patterns read: :func:`visible`, accents and other combining marks
    removed (NFD, then every combining character dropped: "Íǵńóŕé" -> "Ignore"), and every other non-ASCII
    letter folded to the ASCII letter it imitates (:func:`_latin_of`). Unicode's data maps every "I"
    look-alike to "l"; ``l_as_i`` reads those as "i" instead (so both readings are tried). Detection
    only: the model is sent :func:`visible` text, in which real accents and scripts are kept."""
    out: list[str] = []
    for c in unicodedata.normalize("NFD", visible(text)):
        if unicodedata.combining(c):
            continue
        if c.isascii() or not c.isalpha():
            out.append(c)
            continue
        latin = _latin_of(c)
        out.append("i" if l_as_i and latin == "l" else latin)
    return "".join(out)


_CONTROL_TOKENS = re.compile(r"<\|[^|<>]{0,40}\|>|<</?SYS>>|\[/?INST\]|</?s>|<\s*/?\s*system\s*>", re.I)
_ROLE_LINE = re.compile(r"^(\s*)(system|developer|assistant|user|admin|root)\s*:", re.I | re.M)
#: Chat-role labels, template macros and the prompt's own note layout ("(turn 12)", a "- " note
#: bullet at the start of a line, as her memory notes are written in the prompt).
_LEAK_MARKERS = re.compile(r"^\s*(?:system|assistant|user|developer)\s*:|<\|[^|<>]{0,40}\|>|\{\{\s*\w+\s*\}\}|"
                           r"\[/?INST\]|<</?SYS>>|\(\s*turn\s+\d+\s*\)|^\s*[-\u2022*]\s+\S", re.I | re.M)

#: A capitalised name of one or two words.
_NAME = r"([A-Z][A-Za-z\u00c0-\u024f'\-]+(?:\s+[A-Z][A-Za-z\u00c0-\u024f'\-]+)?)"
#: Capitalised words that are not names when they follow "Hello," or "I'm".
_NOT_NAMES = frozenset(
    "friend friends traveller traveler stranger sir madam ma'am miss mister child dear love darling everyone "
    "everybody there again all sailor captain keeper you i it the a an not just so sorry fine glad here yes no "
    "well oh ah hmm please okay ok welcome hello hi hey goodbye good thank thanks indeed certainly of course "
    "english british french american scottish irish welsh i've i'll i'd i'm it's that's there's here's "
    "what's let's north south east west northern southern eastern western sea island mainland coast".split())
_COLOURS = frozenset(
    "red green blue yellow white black grey gray brown orange purple violet pink gold golden silver amber crimson "
    "scarlet teal turquoise indigo".split())












@dataclass(frozen=True)
class EntityFact:
    """One checkable belief about an entity.

    Attributes:
        entity: how it is mentioned (``dog``, ``lantern``); matched as a whole word (plural ``s`` allowed).
        attribute: ``name`` (what it is called), ``colour`` (one of the common colour
            words) or ``count`` (how many; a number word or digits right before it).
        value: the true value (``Biscuit``, ``green``, ``2``).
    """

    entity: str
    attribute: Literal["name", "colour", "count"]
    value: str


@dataclass(frozen=True)
class PersonaFacts:
    """The sink and entity facts the guard checks replies against.

    Attributes:
        name: her name. aliases: other names she goes by (nickname, titles).
        home: where she lives, as words (``the Tidewatch lighthouse on Gull Rock``).
        player_name: the player's name once told or pinned (``""``: unknown, not checked).
        known_names: other proper names she may use freely (people, places, ships).
        entities: :class:`EntityFact` beliefs.
        beliefs: all her beliefs as ``(entity, key, value, source)`` (for :mod:`game.cast.verifier`).
    """

    name: str
    aliases: tuple[str, ...] = ()
    home: str = ""
    player_name: str = ""
    known_names: tuple[str, ...] = ()
    entities: tuple[EntityFact, ...] = ()
    beliefs: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True)
class InputCheck:
    """The guard's view of one player line.

    Attributes:
        text: the line as the model will see it (control tokens removed, role labels defused).
        injection: whether it tries to change her instructions or pull her out of character.
        reasons: the :data:`INJECTION_PATTERNS` names that matched, and what was removed.
    """

    text: str
    injection: bool = False
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The guard's judgement of a reply (or one sentence of it).

    Attributes:
        ok: it may reach the player.
        kind: the first failed check (``""`` when ok).
        reasons: one sentence per problem found.
        matched: the phrase, fact or rejected reply it matched.
    """

    ok: bool
    kind: VerdictKind = ""
    reasons: tuple[str, ...] = ()
    matched: str = ""


@dataclass
class _Negative:
    text: str
    toks: list[str]
    vector: Any = None


@dataclass
class PersonaGuard:
    """Judges player input and character replies (see the module docstring).

    Attributes:
        facts: the sink and entity facts (replace with :meth:`update_facts`).
        never_say: lines and phrases she never says (the card's ``never_say``).
        system_prompt: her instructions (the sink), for the verbatim-leak check.
        phrases: the out-of-character phrases checked (default :data:`OOC_PHRASES`).
        negative_threshold: word-overlap threshold for a near duplicate of a rejected reply.
        embedder: optional object with ``encode(list[str]) -> (N, D)`` unit vectors
            (:func:`game.models.embedder.get_embedder`) for paraphrased negatives.
        semantic_threshold: cosine threshold for those.
    """

    facts: PersonaFacts
    never_say: tuple[str, ...] = ()
    system_prompt: str = ""
    phrases: tuple[str, ...] = OOC_PHRASES
    negative_threshold: float = 0.55
    embedder: Any = None
    semantic_threshold: float = 0.9
    _negatives: list[_Negative] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- facts and negatives -----------------------------------------------------------
    def update_facts(self, **changes: Any) -> PersonaFacts:
        """Replace some facts (``guard.update_facts(player_name="Mara")``); returns the new facts."""
        self.facts = replace(self.facts, **changes)
        return self.facts

    def add_negative(self, text: str) -> None:
        """Remember a rejected reply: it and its near duplicates fail from now on (kind ``negative``)."""
        toks = tokens(text)
        if not toks:
            return
        vector = None
        if self.embedder is not None:
            vector = np.asarray(self.embedder.encode([text]), np.float32)[0]
        with self._lock:
            if any(n.toks == toks for n in self._negatives):
                return
            self._negatives.append(_Negative(text, toks, vector))

    def add_negatives(self, texts: Iterable[str]) -> None:
        """:meth:`add_negative` for each text."""
        for t in texts:
            self.add_negative(t)

    @property
    def negatives(self) -> list[str]:
        """The rejected replies known now."""
        with self._lock:
            return [n.text for n in self._negatives]

    def closest_negative(self, text: str) -> tuple[float, str]:
        """``(word overlap, rejected reply)`` of the closest negative example."""
        best, match = 0.0, ""
        for neg in self.negatives:
            s = overlap(text, neg)
            if s > best:
                best, match = s, neg
        return best, match

    # -- input ----------------------------------------------------------------------------
    def check_input(self, text: str, max_chars: int = 2000) -> InputCheck:
        """Sanitise a player line and flag injection attempts.

        Args:
            text: what the player typed or said.
            max_chars: longer input is cut (a wall of text is not a question).
        """
        reasons: list[str] = []
        plain = visible(text)
        if plain != text:
            reasons.append("normalised unicode")
        # read as written, folded to the letters it imitates (both readings of an "I"/"l" look-alike), and
        # "i g n o r e" / "i.g.n.o.r.e" (letters spaced out to slip past the patterns) read joined
        forms = list(dict.fromkeys((plain, skeleton(text), skeleton(text, l_as_i=True))))
        forms += [re.sub(r"\b(?:\w[ ._*-]){3,}\w\b", lambda m: re.sub(r"[ ._*-]", "", m.group(0)), f) for f in forms]
        for name, rx in INJECTION_PATTERNS:
            if any(rx.search(f) for f in forms):
                reasons.append(name)
        text = plain
        clean = _CONTROL_TOKENS.sub(" ", text)
        if clean != text:
            reasons.append("removed chat-control tokens")
        clean = _ROLE_LINE.sub(lambda m: f"{m.group(1)}({m.group(2)})", clean)
        clean = " ".join(clean.split()) if "\n" not in clean else "\n".join(" ".join(x.split())
                                                                           for x in clean.splitlines())
        if len(clean) > max_chars:
            clean = clean[:max_chars]
            reasons.append(f"cut to {max_chars} characters")
        injection = any(r in dict(INJECTION_PATTERNS) for r in reasons)
        return InputCheck(clean.strip(), injection, tuple(reasons))

    # -- replies --------------------------------------------------------------------------
    def check(self, reply: str) -> Verdict:
        """Judge a reply or one sentence of it; the first failed check decides ``kind``."""
        toks = tokens(reply)
        if not any(t.isalpha() or any(c.isalpha() for c in t) for t in toks):
            return Verdict(False, "empty", ("says nothing speakable",), reply)
        if only_filler(reply):
            return Verdict(False, "empty", (f"says only {reply.strip()!r}, which answers nothing",), reply)
        for phrase in self.phrases:
            if contains_phrase(toks, phrase):
                return Verdict(False, "ooc", (f"out of character: says {phrase!r}",), phrase)
        family, said = assistant_speak(reply)
        if family:
            return Verdict(False, "ooc", (f"assistant-speak ({family}): says {said!r}",), said)
        book = encyclopedic(reply)
        if book:
            return Verdict(False, "ooc", (f"talks like a reference book, not like her: {book!r}",), book)
        meta = _META.search(plain_text(reply))
        if meta:
            return Verdict(False, "ooc", (f"talks about playing a part: {meta.group(0)!r}",), meta.group(0))
        code = _CODE.search(reply)
        if code:
            return Verdict(False, "code", (f"writes code or data ({code.group(0).strip()!r})",), code.group(0))
        for line in self.never_say:
            if contains_phrase(toks, line):
                return Verdict(False, "never_say", (f"says {line!r}, which {self.facts.name} never says",), line)
        leak = self._leak(reply, toks)
        if leak:
            return Verdict(False, "leak", (leak,), reply)
        why = self.contradiction(reply)
        if why:
            return Verdict(False, "contradiction", (why,), reply)
        neg = self._near_negative(reply, toks)
        if neg:
            return Verdict(False, "negative", (f"repeats a rejected reply: {neg[:80]!r}",), neg)
        return Verdict(True)

    def _leak(self, reply: str, toks: list[str]) -> str:
        m = _LEAK_MARKERS.search(reply)
        if m:
            return f"leaks prompt markup {m.group(0).strip()!r}"
        names = [self.facts.name, *self.facts.aliases]
        if any(re.match(rf"\s*you(?:'re| are)\s+{re.escape(n)}\b", reply, re.I) for n in names if n):
            return "recites her instructions (\"you are ...\")"
        if self.system_prompt and len(toks) >= LEAK_WORDS:
            sys_text = " " + normalise(self.system_prompt) + " "
            for i in range(len(toks) - LEAK_WORDS + 1):
                if " " + " ".join(toks[i:i + LEAK_WORDS]) + " " in sys_text:
                    return f"repeats {LEAK_WORDS}+ words of her instructions verbatim"
        return ""

    def _near_negative(self, reply: str, toks: list[str]) -> str:
        with self._lock:
            negatives = list(self._negatives)
        if not negatives:
            return ""
        mine = ngrams(toks)
        for neg in negatives:
            if neg.toks == toks:
                return neg.text
            if len(toks) >= MIN_NEAR_TOKENS and len(neg.toks) >= MIN_NEAR_TOKENS:
                g = ngrams(neg.toks)
                if len(mine & g) / len(mine | g) >= self.negative_threshold:
                    return neg.text
        if self.embedder is not None and len(toks) >= MIN_NEAR_TOKENS:
            v = np.asarray(self.embedder.encode([reply]), np.float32)[0]
            for neg in negatives:
                if neg.vector is not None and float(v @ neg.vector) >= self.semantic_threshold:
                    return neg.text
        return ""

    # -- contradictions ------------------------------------------------------------------
    def _allowed_names(self) -> set[str]:
        f = self.facts
        words: set[str] = set()
        for n in (f.name, *f.aliases, f.player_name, *f.known_names, f.home):
            words |= set(tokens(n))
        return words

    def contradiction(self, reply: str) -> str:
        """Why ``reply`` contradicts a sink or entity fact (``""`` if it does not, as far as checked)."""
        f = self.facts
        allowed = self._allowed_names()
        own = {w for n in (f.name, *f.aliases) for w in tokens(n)}
        for rx in _SELF_NAME:
            for m in rx.finditer(reply):
                cand = tokens(m.group(1))
                if own and _name_like(cand) and own.isdisjoint(cand) and not (cand[0] in _TITLES and len(cand) == 1):
                    return f"calls herself {m.group(1)!r}; she is {f.name}"
        if f.home or f.known_names:
            home_words = set(tokens(f.home))
            for m in _HOME.finditer(reply):
                caps = [w for w in re.findall(r"[A-Z][\w'\-]+", m.group(1)) if w.lower() not in _NOT_NAMES]
                bad = [w for w in caps if w.lower() not in home_words and w.lower() not in allowed]
                if bad:
                    home = f.home or "a place her card names"
                    return f"says she lives in/comes from {' '.join(bad)!r}; her home is {home}"
        if f.player_name:
            for rx in _PLAYER_NAME:
                for m in rx.finditer(reply):
                    cand = tokens(m.group(1))
                    if _name_like(cand) and allowed.isdisjoint(cand):
                        return f"calls the player {m.group(1)!r}; the player is {f.player_name}"
        for fact in f.entities:
            why = _entity_contradiction(reply, fact)
            if why:
                return why
        return ""


#: Titles before a name: "Captain Bob" is a name, Bob.
_TITLES = frozenset("captain sir lady lord doctor dr mr mrs ms miss mister madam professor father sister brother "
                    "king queen prince princess admiral general count countess".split())


def _name_like(words: list[str]) -> bool:
    """Whether normalised ``words`` look like a person's name (not "Friend", "Sorry"...); a title
    before a name ("Captain Bob") is skipped."""
    while len(words) > 1 and words[0] in _TITLES:
        words = words[1:]
    return bool(words) and words[0] not in _NOT_NAMES


#: An abbreviated title with its full stop before a name ("I'm Dr. Flint"): skipped, so the name after
#: it is the one read (without it the full stop ended the match at "Dr", a bare title, never flagged).
_ABBREVIATED_TITLE = r"(?:(?:Dr|Mr|Mrs|Ms|Mx|St|Prof|Capt|Sgt|Rev|Fr)\.\s*)?"

_SELF_NAME = tuple(re.compile(rx) for rx in (
    r"(?i:\bmy name(?:'s| is)|\bi am called|\bi'm called|\bcall me|\bthey call me|\bpeople call me|\bknown as|"
    + FOREIGN_NAME_FORMS + r")\s+" + _ABBREVIATED_TITLE + _NAME,
    r"(?i:\bi am|\bi'm|\bi’m)(?:\s+(?:now|really|actually|truly|officially|no longer))?\s+" + _ABBREVIATED_TITLE
    + _NAME + r"(?=\s*(?:[,.!?;:]|$|\s+(?:and|the|of|from|here)\b))",
))
_HOME = re.compile(r"(?i:\bi live (?:in|at|on|by|near)|\bmy home is(?: in| at| on)?|\bi(?:'m| am) from|"
                   r"\bi come from|\bi was born in|\bi grew up in|\bi(?:'ve| have) lived in)\s+([^.!?;:\n]{1,80})")
_PLAYER_NAME = tuple(re.compile(rx) for rx in (
    r"(?i:\byour name(?:'s| is)|\byou(?:'re| are) called|\byou(?:'re| are) named)\s+" + _NAME,
    r"(?i:\byou(?:'re| are))\s+" + _NAME + r"(?=\s*(?:[,.!?;:]|$))",
    r"(?i:\bhello|\bhi|\bhey|\bgreetings|\bwelcome(?: back)?|\bgoodbye|\bfarewell|\bgood (?:morning|evening|night|"
    r"day|afternoon)|\bthank you|\bthanks|\bdear|\bsorry)\s*,?\s+" + _NAME + r"\b",
    r",\s*" + _NAME + r"\s*[.!?]+\s*$",
))


def _entity_contradiction(reply: str, fact: EntityFact) -> str:
    ent = re.escape(fact.entity.strip())
    if not ent:
        return ""
    if fact.attribute == "name":
        rx = re.compile(rf"(?i:\b{ent}(?:'s name is|\s+is called|\s+is named|\s+called|\s+named|,)?)\s+" + _NAME)
        for m in rx.finditer(reply):
            cand = m.group(1)
            if _name_like(tokens(cand)) and set(tokens(cand)).isdisjoint(tokens(fact.value)):
                return f"calls the {fact.entity} {cand!r}; it is {fact.value}"
        return ""
    toks = tokens(reply)
    where = [i for i, t in enumerate(toks) if t in (fact.entity.lower(), fact.entity.lower() + "s")]
    if fact.attribute == "colour":
        truth = fact.value.lower()
        for i in where:
            for t in toks[max(0, i - 3): i + 4]:
                if t in _COLOURS and t != truth and not (t in ("grey", "gray") and truth in ("grey", "gray")):
                    return f"says the {fact.entity} is {t}; it is {fact.value}"
        return ""
    count = parse_number(fact.value)
    for i in where:
        # the longest run of number words right before the noun: "ninety-three hives" is 93, not 3
        for j in range(max(0, i - 5), i):
            n = parse_number(" ".join(toks[j:i]))
            if n is not None:
                if count is not None and n != count:
                    return f"says there are {' '.join(toks[j:i])} {fact.entity}(s); there are {fact.value}"
                break
    return ""
