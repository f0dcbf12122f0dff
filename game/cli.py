"""`worldloom`: play, replay, lint.

    worldloom play STORY [--headless --inputs play.txt --record out.mp4
                          --transcript out.jsonl --seed N --save-dir DIR --backend NAME --watch]
    worldloom replay out.jsonl [--story STORY --save-dir DIR]
    worldloom lint STORY [--format text|json]   (the story and its cast's cards)
    worldloom strings extract STORY [--lang xx] [-o FILE]   (and play --lang xx)
    worldloom explore STORY [--max-states N --random N --jobs N --format json]
    worldloom map STORY -o map.png|.svg|.dot [--coverage]
    worldloom errorbank stats|export|calibrate|label [--db PATH]
    worldloom card validate|import|export CARD [--lore WORLD.json] [-o OUT]
    worldloom serve --backend NAME --port N   (token from WORLDLOOM_TOKEN)

Errors a user can cause print one clear line (``where: why (hint)``) and exit 2;
lint exits 1 when it finds errors; ``play --headless --inputs`` exits 1 when a script line
could not apply (every such line is named, ``file:line``, and the rest of the script is played).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from game.errors import InputError, StoryError, WorldloomError
from game.words import counted, opening

if TYPE_CHECKING:  # the CLI imports a command's modules when it runs (a fast --help)
    from game.story.story import Story

#: The commands this module declares itself (the others are in :data:`PLUGGED`).
BUILT_IN = ("play", "replay", "strings", "lint")



class Console:
    """What the commands tell their user, one line at a time on standard error (looked up when
    written, so a caller's redirection holds), unwrapped, with no markup: a path or a message
    with ``[brackets]`` prints as it is. Plain text, not ``rich``: its import was a tenth of a
    start's CPU, and these lines need none of it."""

    def print(self, text: str, *, error: bool = False) -> None:
        """Write ``text`` and a newline; ``error``: it starts with ``error:``, red on a terminal
        (unless ``NO_COLOR`` is set, https://no-color.org)."""
        out = sys.stderr
        if error:
            red = out.isatty() and not os.environ.get("NO_COLOR")
            text = ("\x1b[31merror:\x1b[0m " if red else "error: ") + text
        out.write(text + "\n")
        out.flush()


console = Console()


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError("size is WIDTHxHEIGHT, e.g. 960x540") from exc
    if not (16 <= w <= 4096 and 16 <= h <= 4096) or w % 2 or h % 2:
        raise argparse.ArgumentTypeError("size must be even numbers between 16 and 4096")
    return w, h


def _add_explore(sub: Any) -> None:
    from game.story import explorer

    explorer.add_parser(sub)


def _add_map(sub: Any) -> None:
    from game.story import storymap

    storymap.add_parser(sub)


def _add_errorbank(sub: Any) -> None:
    from game.errorbank.cli import add_parser

    add_parser(sub)


def _add_card(sub: Any) -> None:
    from game.cast.card_cli import add_parser

    add_parser(sub)


def _add_serve(sub: Any) -> None:
    from game.world.server import add_serve_parser

    add_serve_parser(sub)


#: Commands whose options are declared by their own room (``add_parser(sub)``): each room's modules
#: are imported only when its command may be the one run, so ``lint`` and ``play`` start without the
#: explorer, the map, the error bank, cards and the server (about 0.5 s of CPU of imports).
PLUGGED: dict[str, Callable[[Any], None]] = {"explore": _add_explore, "map": _add_map,
                                              "errorbank": _add_errorbank, "card": _add_card,
                                              "serve": _add_serve}


class _Version(argparse.Action):
    """``--version``: the installed package's version (its metadata: pyproject.toml's ``version``),
    read only when asked (``importlib.metadata`` is no part of every start)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("worldloom")
        except PackageNotFoundError:  # run from a source tree that was never installed
            found = "unknown (not installed)"
        print(f"worldloom {found}")
        parser.exit()


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), or ``None``."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser: every command, or with ``only`` (a command's name) the built-in
    commands and that one of :data:`PLUGGED` (what :func:`main` uses, so a run imports only what
    its command needs; ``--help`` without a command lists them all)."""
    p = argparse.ArgumentParser(prog="worldloom", description="The game layer for real-time world models.")
    p.add_argument("--version", action=_Version, nargs=0, help="print the installed version and exit")
    sub = p.add_subparsers(dest="command", required=True)

    play = sub.add_parser("play", help="play a story (window, or --headless)",
                          description="Play a story: in a window, or --headless on the frame clock from a "
                                      "script of inputs (--inputs FILE, or - for stdin).")
    play.add_argument("story", help="story folder or story.yaml")
    play.add_argument("--headless", action="store_true", help="no window; follow the frame clock")
    play.add_argument("--inputs", metavar="FILE",
                      help="headless: playthrough script, one input a line (choose 1, say hello, wait 2...); "
                           "'-' reads them from stdin as they come (pipe or type them; Ctrl-D ends); "
                           "without it the story only starts; needs --headless")
    play.add_argument("--record", help="write every frame and the audio to this .mp4 (needs --headless)")
    play.add_argument("--transcript", help="write the JSON-lines transcript here (needs --headless)")
    play.add_argument("--quiet", action="store_true",
                      help="headless: print none of the story (its lines, choices and ending go to stdout "
                           "otherwise); the summary, warnings and --transcript stay")
    play.add_argument("--seed", type=int, default=0,
                      help="seed of every random draw: the world, the story's random(), characters' picks "
                           "(default 0; the same seed and inputs play the same game)")
    play.add_argument("--save-dir", metavar="DIR",
                      help="where saves go (default ~/.local/share/worldloom/saves/STORY_ID)")
    play.add_argument("--backend", default="procedural",
                      help="world backend: procedural (default: draws the scene, no model), "
                           "null (flat grey frames: tests, replays), diffusion (SkyReels-V2 video model, --model), "
                           "causal (block-causal Wan text-to-video, --model --checkpoint), "
                           "action (keyboard + mouse world model, --model --checkpoint), "
                           "remote (a worldloom serve, --url), drifting (simulates a model's drift, "
                           "to try the error bank)")
    play.add_argument("--model", help="diffusion: model folder or hub id")
    play.add_argument("--checkpoint", help="causal / action: weights file (.safetensors, or shards with an index) "
                                           "for the architecture in --model")
    play.add_argument("--url", help="remote: ws://HOST:PORT or wss://HOST:PORT (token from WORLDLOOM_TOKEN)")
    play.add_argument("--errorbank", metavar="DB",
                      help="error-bank file (default $WORLDLOOM_ERRORBANK or ~/.local/share/worldloom/errorbank.db)")
    play.add_argument("--no-errorbank", action="store_true",
                      help="play the backend's frames as they come: a frozen, black, drifting or hung world is "
                           "not caught and corrected, and nothing is recorded")
    play.add_argument("--size", type=_size, help="frame size WIDTHxHEIGHT (default 960x540)")
    play.add_argument("--fullscreen", action="store_true", help="window: start fullscreen")
    play.add_argument("--screenshot", help="window: save a PNG of the window after --frames frames, then quit")
    play.add_argument("--frames", type=int, default=0, help="window: quit after this many frames (0 = never)")
    play.add_argument("--dialogue", metavar="SPEC", default="transformers",
                      help="characters' dialogue model: transformers (default: the embedded SmolLM2), "
                           "transformers:PATH_OR_HUB_ID, openai[:MODEL], scripted:FILE, a model path / hub id, "
                           "or none (authored lines only; agents act by their rules)")
    play.add_argument("--no-voice", action="store_true", help="characters do not speak aloud (text only)")
    play.add_argument("--lang", help="play in this language: the story's locale/LANG.po catalogue "
                                     "(sets WORLDLOOM_LANG; an untranslated string shows in the source language)")
    play.add_argument("--watch", action="store_true",
                      help="window: reload the story when its files change on disk (F6 reloads by hand)")

    rep = sub.add_parser("replay", help="replay a transcript without re-running models",
                         description="Replay a transcript a headless play wrote (--transcript) on the story, "
                                     "without models, and say whether every event matches (exit 0) or not (exit 1).")
    rep.add_argument("transcript", help="the .jsonl a play wrote with --transcript")
    rep.add_argument("--story", help="story to use instead of the one the transcript names")
    rep.add_argument("--quiet", action="store_true", help="print only whether the replay matches, not the story")
    rep.add_argument("--save-dir", help="where the replay's save/load inputs go (the play's own --save-dir, "
                                        "to load saves an earlier run made; default: a fresh temporary folder)")

    strings = sub.add_parser("strings", help="the story's player-visible strings: write gettext catalogues")
    strings_sub = strings.add_subparsers(dest="strings_command", required=True, metavar="{extract}")
    extract = strings_sub.add_parser("extract", help="write or update a PO catalogue (locale/LANG.po by default)")
    extract.add_argument("story", help="story folder or story.yaml")
    extract.add_argument("--lang", default="", help="the catalogue's language (fr, de...); none: a .pot template")
    extract.add_argument("-o", "--out", help="the .po/.pot file (default STORY/locale/LANG.po, or .../story.pot)")

    lint = sub.add_parser("lint", help="check a story and its cards; exit 1 on errors",
                          description="Check a story (or one character card) and the cards its cast names: "
                                      "each finding with its file:line:col, code, severity and hint "
                                      "(docs/authoring-tools.md lists the codes).",
                          epilog="exit codes: 0 no errors (warnings and info may remain); 1 at least one error "
                                 "(a story that does not load is its WL018 errors); 2 no story or card at that "
                                 "path, a malformed worldloom.toml, or a bad argument.")
    lint.add_argument("story", help="story folder or story.yaml")
    lint.add_argument("--format", choices=("text", "json"), default="text",
                      help="text: one finding a line (default); json: a list for tools")

    for name, add in PLUGGED.items():
        if only is None or only == name:
            add(sub)
    _describe(sub)
    return p


def _describe(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Give each command (and subcommand) without a description its one-line help as one, so
    ``worldloom COMMAND --help`` says what the command does, not only the top-level list."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, parser in sub.choices.items():
        said = helps.get(name)
        if not parser.description and said:
            parser.description = f"{opening(said)}."
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _describe(action)


def _backend_options(args: argparse.Namespace) -> dict[str, object]:
    options: dict[str, object] = {}
    if args.model:
        options["model"] = args.model
    if args.url:
        options["url"] = args.url
    if getattr(args, "checkpoint", None):
        options["checkpoint"] = args.checkpoint
    return options


def _errorbank(args: argparse.Namespace) -> str | None:
    """The error bank to guard the backend with, or ``None`` with ``--no-errorbank``. (A backend whose
    frames are still by design, such as ``null``, says so in ``Capabilities.placeholder_frames``; the
    guard reads it.)"""
    if args.no_errorbank:
        return None
    from game.errorbank.cli import default_db

    return str(args.errorbank or default_db())


def _dialogue(args: argparse.Namespace) -> str | None:
    """The ``--dialogue`` spec, ``None`` for ``none`` (no model: authored lines, agents by their rules)."""
    return None if args.dialogue.strip().lower() == "none" else str(args.dialogue)


def _load_and_warn(path: str) -> Story:
    """The story at ``path``, loaded once for play and for its start lint (the findings come from
    lint's memo when the story is unchanged; else lint checks the story just loaded, with no second
    load). A story with a lint error does not start, in the window or headless: an error would
    stop play where it is met (an effect that reads ``true``, a goto to no scene), so it is named
    now, once, at its ``file:line:col``. A code the story's ``worldloom.toml`` lowers below error
    (``[lint.severity]``) does not stop it.

    Raises:
        game.errors.StoryError: the story does not load (the loader's error, which names every
            problem), or has lint errors: every one, each on its own line with its position.
    """
    from game.story.lint import lint_story
    from game.story.loader import load_story

    story = load_story(path)
    errors = [d for d in lint_story(path, story=story) if d.severity == "error" and d.code != "WL018"]
    if errors:
        why = f"{counted(len(errors), 'lint error')}, so the story does not start"
        raise StoryError(why, path, f"`worldloom lint {path}` lists every finding; worldloom.toml's "
                                    "lint.severity can lower a code to play anyway",
                         problems=((path, why), *((d.where, d.format().removeprefix(d.where + ": "))
                                                  for d in errors)))
    # The story lives as long as the game and holds no reference cycles: moved out of the cyclic
    # collector's generations (``gc.freeze``, Python's gc docs) until play ends (``main`` unfreezes),
    # it is not rescanned while the game is built and played (~0.5 s of CPU of a 5,000-scene start).
    gc.freeze()
    return story


def _warn_translation(story: str, lang: str) -> None:
    """Before play with ``--lang``: a warning for each part of what the player sees that has no
    ``lang`` translation (a story that does not load is left to the loader's error)."""
    from game.locale import missing_translations
    from game.story.loader import load_story

    try:
        loaded = load_story(story)
    except StoryError:
        return
    for text in missing_translations(loaded, lang):
        console.print(f"warning: {text}")


def _story_text(line: str) -> None:
    """One line of the story as the player reads it, to stdout (the tool's own lines go to stderr)."""
    print(line, flush=True)


def cmd_play(args: argparse.Namespace) -> int:
    from game.story.strings import LANG_ENV

    if args.lang:
        os.environ[LANG_ENV] = args.lang  # the story runtime reads it (game.story.strings.language)
        _warn_translation(args.story, args.lang)

    if not args.headless:
        headless_only = [f"--{n}" for n in ("inputs", "record", "transcript") if getattr(args, n)]
        if headless_only:
            one = len(headless_only) == 1
            raise InputError(f"{', '.join(headless_only)} {'works' if one else 'work'} with --headless only",
                             hint=f"add --headless, or drop {'it' if one else 'them'} to play in the window")
        if args.screenshot and (Path(args.screenshot).is_dir() or not args.screenshot.lower().endswith(".png")):
            raise InputError("--screenshot needs a .png file name", where=args.screenshot)
    from game.story.yamlio import gc_paused

    # The collector stays paused from the load through the start lint to the story's gc.freeze: a
    # collection on the way would scan every object of the story just made (~0.2 s of CPU of a cold
    # 5,000-scene start).
    with gc_paused():
        story = _load_and_warn(args.story)
    if args.headless:
        from game.headless import StreamScript, play_headless
        from game.inputs.script import read_script

        typed = StreamScript(sys.stdin, on_error=lambda text: console.print(f"warning: {text}")) \
            if args.inputs == "-" else None
        if typed is not None and sys.stdin.isatty():
            console.print("type one input a line (choose 1, say hello, wait 2...; see --help); Ctrl-D ends the game")
        commands = typed if typed is not None else read_script(args.inputs) if args.inputs else []
        runner = play_headless(args.story, commands, story=story, backend=args.backend, seed=args.seed,
                               save_dir=args.save_dir, record=args.record, transcript=args.transcript,
                               size=args.size, backend_options=_backend_options(args), errorbank=_errorbank(args),
                               dialogue=_dialogue(args), voice=not args.no_voice,
                               on_warning=lambda text: console.print(f"warning: {text}"),
                               on_text=None if args.quiet else _story_text)
        s = runner.session
        if runner.summary:
            from game.cast.castroom import format_summary

            for line in format_summary(runner.summary):
                console.print(line)
        console.print(f"played {counted(len(commands), 'input')}: {counted(s.state.frame, 'frame')} "
                      f"({s.state.frame / s.caps.fps:.1f} s), scene {s.state.scene!r}, "
                      f"frames sha256 {runner.frame_hash.hexdigest()[:16]}")
        if s.notice:
            console.print(f"note: {s.notice}")
        if not args.inputs:
            console.print("note: no --inputs given, so the story started and nothing was played after it: give a "
                          "script with --inputs FILE (one input a line: choose 1, say hello, wait 2...), or "
                          "--inputs - to pipe or type them")
        if args.record:
            srt = Path(args.record).with_suffix(".srt")
            console.print(f"recording: {args.record}" + (f" (subtitles in it and in {srt})" if srt.is_file() else ""))
            if runner.recorder is not None:
                console.print(runner.recorder.describe())
        if args.transcript:
            console.print(f"transcript: {args.transcript}")
        if runner.errors:
            console.print(f"{counted(len(runner.errors), 'script line')} could not apply (each named above, "
                          f"first {runner.errors[0].split(': `')[0]}); the rest of the script was played")
            return 1
        if typed is not None and typed.errors:
            console.print(f"skipped {counted(len(typed.errors), 'typed line')} that did not parse (each named above)")
            return 1
        return 0
    from game.app.window import run_window

    code: int = run_window(args.story, backend=args.backend, seed=args.seed, save_dir=args.save_dir,
                      size=args.size, fullscreen=args.fullscreen, screenshot=args.screenshot,
                      max_frames=args.frames, backend_options=_backend_options(args), errorbank=_errorbank(args),
                      watch=args.watch, dialogue=_dialogue(args), voice=not args.no_voice, story=story)
    return code


def cmd_replay(args: argparse.Namespace) -> int:
    from game.replay import replay

    result = replay(args.transcript, args.story, save_dir=args.save_dir, echo=None if args.quiet else print)
    if result.ok:
        console.print(f"replay matches the transcript: {result.matched} events")
        return 0
    console.print("replay differs from the transcript:")
    for line in result.report():
        console.print(line)
    return 1


def cmd_lint(args: argparse.Namespace) -> int:
    from game.lint import lint
    from game.story.lint import diagnostics_json
    from game.story.yamlio import gc_paused

    with gc_paused():  # lint makes no cycles, and what it checked is freed when it returns: never scanned
        diags = lint(args.story)
    if args.format == "json":
        try:
            print(json.dumps(diagnostics_json(diags), indent=2))
        except BrokenPipeError:  # `| head` closed the pipe: not an error of ours
            sys.stderr.close()
    else:
        for d in diags:
            print(d.format())
        errors = sum(d.severity == "error" for d in diags)
        console.print(f"{counted(errors, 'error')}, {counted(len(diags) - errors, 'other finding')}")
    return 1 if any(d.severity == "error" for d in diags) else 0


def cmd_strings(args: argparse.Namespace) -> int:
    from game.story.loader import load_story
    from game.story.strings import catalogue_path, write_catalogue

    story = load_story(args.story)
    out = Path(args.out) if args.out else (catalogue_path(story, args.lang) if args.lang
                                           else story.folder / "locale" / "story.pot")
    total, kept, stale = write_catalogue(story, out, args.lang)
    console.print(f"{out}: {counted(total, 'string')}, {kept} translated, {stale} stale (fuzzy), "
                  f"{total - kept - stale} to translate")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``worldloom`` console script; returns the exit code."""
    called = argv is not None  # from Python (tests, a launcher), not the console script
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_of(argv)
    args = build_parser(command if command in PLUGGED or command in BUILT_IN else None).parse_args(argv)
    try:
        if args.command == "errorbank":
            from game.errorbank.cli import run as errorbank_run

            return errorbank_run(args)
        handlers = {"play": cmd_play, "replay": cmd_replay, "lint": cmd_lint, "strings": cmd_strings}
        if args.command in handlers:
            code: int = handlers[args.command](args)
        elif args.command == "serve" and args.engine == "ray":
            from game.world.ray_serve import cmd_serve_ray

            code = cmd_serve_ray(args)
        elif args.command == "serve":
            code = args.handler(args)
        else:
            code = args.func(args)
        return code
    except WorldloomError as exc:
        console.print(str(exc), error=True)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if called:  # what play froze is the collector's again: a Python caller keeps no frozen heap
            gc.unfreeze()  # (the console script's process just ends: no collection of it all at exit)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
