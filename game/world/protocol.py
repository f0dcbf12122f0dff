"""The backend protocol: what the game asks a world model for and what comes back.

Transport-agnostic and complete from the start (see
``shared/reference/world-models.md`` section b for the systems it must fit:
LongLive, Self-Forcing, CausVid, Matrix-Game, SkyReels-V2, Helios):

* the backend owns the granularity: a request asks for *at least* ``min_frames``;
  the backend rounds up to whole blocks and says what it produced;
* a prompt switch is one of three modes: ``recache`` (rebuild the KV cache from
  the recent window with the new prompt, LongLive), ``scene_cut`` (pin a new sink,
  keep the global sink, LongLive 2) or ``plain`` (only the conditioning changes);
* memory operations are explicit (reset history, re-anchor, reset, snapshot,
  restore, fork);
* inputs a backend cannot use are reported in ``FrameChunk.ignored``, never
  dropped silently;
* actions are one :class:`ActionFrame` per output frame (keys held, mouse motion,
  an optional camera pose); :class:`Capabilities` says which parts a backend reads
  (``actions`` keys, ``mouse``, ``camera`` pose components), :func:`ignored_inputs`
  reports the rest.

Frames are ``numpy.ndarray`` of shape ``(T, H, W, 3)``, ``uint8``, RGB. Audio is
``float32`` mono in [-1, 1] at ``audio_rate`` Hz, ``round(T * audio_rate / fps)``
samples long, aligned with the frames.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

SwitchMode = Literal["recache", "scene_cut", "plain"]
MemoryOpKind = Literal["reset_history", "reanchor", "reset", "snapshot", "restore", "fork"]
Tier = Literal["sink_global", "sink_current", "rolling", "object_cache", "request"]
#: Components of a :class:`CameraPose`, in the order of its fields.
POSE_PARTS = ("x", "y", "z", "yaw", "pitch")


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, announced once.

    Attributes:
        backend: backend name.
        frames_per_block: frames per autoregressive block (the rounding unit).
        fps: output frames per second.
        width, height: frame size in pixels.
        text: whether it reads the text prompt.
        switch_modes: the prompt-switch modes it honours.
        actions: the keys it reads from each :class:`ActionFrame` (e.g. ``("w","a","s","d")``).
        mouse: whether it reads the mouse motion of each :class:`ActionFrame`.
        camera: the :class:`CameraPose` components it reads (a subset of :data:`POSE_PARTS`).
        min_block_frames: frames of its smallest block (what a request's
            ``first_block_frames`` rounds up to); ``0``: every block is ``frames_per_block``.
        ref_images: ``"none"``, ``"first_frame"`` (I2V only) or ``"any_chunk"``.
        audio_in: whether it takes audio cues; ``audio_out``: whether it makes sound.
        audio_rate: sample rate of the sound it makes, Hz.
        structured_scene: whether it reads the structured scene (entities, positions).
        sink_frames, window_frames: memory sizes in frames (0 = none).
        object_cache: whether it keeps per-entity memory.
        snapshot: whether snapshot / restore / fork are supported.
        directives: the keys of the story directives it acts on (``camera`` for an Ink
            ``# camera: low``); any other directive of a request is reported as ignored.
        max_session_frames: hard cap on a session's length, or ``None``.
        placeholder_frames: its frames stand in for pictures by design (the ``null``
            backend's flat grey): they never move and never look like the scene. A guard
            (:class:`game.errorbank.guard.GuardedBackend`) does not call a still block of
            such a backend frozen and renders no reference for it, so no drift is measured;
            shape, dtype, black, lateness and the story's entities are still checked.
    """

    backend: str
    frames_per_block: int
    fps: float
    width: int
    height: int
    text: bool = True
    switch_modes: tuple[SwitchMode, ...] = ("plain",)
    actions: tuple[str, ...] = ()
    mouse: bool = False
    camera: tuple[str, ...] = ()
    min_block_frames: int = 0
    ref_images: Literal["none", "first_frame", "any_chunk"] = "none"
    audio_in: bool = False
    audio_out: bool = False
    audio_rate: int = 22050
    structured_scene: bool = False
    sink_frames: int = 0
    window_frames: int = 0
    object_cache: bool = False
    snapshot: bool = False
    max_session_frames: int | None = None
    directives: tuple[str, ...] = ()
    placeholder_frames: bool = False

    def round_up(self, min_frames: int) -> int:
        """Frames the backend will produce for ``min_frames``: whole blocks, at least one."""
        blocks = max(1, math.ceil(max(1, min_frames) / self.frames_per_block))
        return blocks * self.frames_per_block

    def block_plan(self, min_frames: int, first_block_frames: int = 0) -> tuple[int, ...]:
        """Frames of each block a request yields, in order; they sum to at least ``min_frames``.

        Whole ``frames_per_block`` blocks, except that with ``first_block_frames`` and a
        backend that has smaller blocks (``min_block_frames``) the first block is the
        smallest multiple of ``min_block_frames`` that is ``>= first_block_frames``
        (at most ``frames_per_block``), then whole blocks cover the rest.
        """
        fpb = self.frames_per_block
        if first_block_frames <= 0 or self.min_block_frames <= 0:
            return (fpb,) * (self.round_up(min_frames) // fpb)
        unit = self.min_block_frames
        first = min(fpb, max(unit, math.ceil(first_block_frames / unit) * unit))
        rest = max(0, max(1, min_frames) - first)
        return (first,) + (fpb,) * math.ceil(rest / fpb)


@dataclass(frozen=True)
class CameraPose:
    """Where the camera is in one frame.

    Attributes:
        x: horizontal position in world units (0 = the location's origin, 1 = one screen
            width; the story's pan, ``GameState.camera_x``).
        y: height above the ground, world units.
        z: depth, world units (positive = forward).
        yaw: turn to the right, radians. ``pitch``: tilt up, radians.
    """

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    yaw: float = 0.0
    pitch: float = 0.0


@dataclass(frozen=True)
class ActionFrame:
    """What the player does during one output frame.

    Attributes:
        keys: the keys held, sorted, lower case (``("a", "w")``; ``()`` for none).
        mouse: ``(dx, dy)`` look motion during the frame, normalised: ``1.0`` is a
            full-speed turn right (``dx``) or down (``dy``) for the whole frame.
        camera: the camera pose in this frame, or ``None`` when the game does not
            dictate one (the model moves the camera itself).
    """

    keys: tuple[str, ...] = ()
    mouse: tuple[float, float] = (0.0, 0.0)
    camera: CameraPose | None = None


@dataclass(frozen=True)
class Anchor:
    """Persistent conditioning (the client side of a sink).

    Attributes:
        id: stable id (``"world.style"``, ``"char.creature"``).
        kind: ``text``, ``image`` or ``audio``.
        role: ``world``, ``style``, ``character`` or ``object``.
        ref: the text itself, or a path to the image / sound.
        tier: ``sink_global`` (never changes) or ``sink_current`` (rebuilt from state).
    """

    id: str
    kind: Literal["text", "image", "audio"]
    role: Literal["world", "style", "character", "object", "location"]
    ref: str
    tier: Tier = "sink_global"


@dataclass(frozen=True)
class Entity:
    """One thing in the structured scene.

    Attributes:
        id: entity id (character or item id).
        kind: ``character``, ``item`` or ``object``.
        name: display name.
        look: text description.
        image: path of its reference image, or ``""``.
        x: horizontal position in world units (0 = the location's origin, 1 = one screen).
        y: vertical position, 0 (ground) .. 1 (top of screen).
        state: current state, e.g. ``idle``, ``leap``, ``recoil``, ``nuzzle``; a thing's
            ``held:<id>`` / ``worn:<id>`` (in a character's hands, on her) or ``on:<feature>``
            (set down on that feature of the place, e.g. ``on:shelf``).
        holding: item ids it holds.
        tier: which memory tier this entry came from.
        expression: a character's expression from the relationship (a card's ``warm``,
            ``guarded``...; or ``smile``, ``frown``...), ``""`` for none.
        pose: a body pose asked for (``stand``, ``sit``, ``walk``, ``hold``, ``give``), ``""``
            to let the backend pick one from the state.
    """

    id: str
    kind: Literal["character", "item", "object"]
    name: str
    look: str = ""
    image: str = ""
    x: float = 0.5
    y: float = 0.0
    state: str = "idle"
    holding: tuple[str, ...] = ()
    tier: Tier = "object_cache"
    expression: str = ""
    pose: str = ""


@dataclass(frozen=True)
class Scene:
    """The structured scene: where we are and what is there.

    Attributes:
        location: location id.
        palette: the location's palette name (``dusk``, ``creek``, ``hollow``...).
        time_of_day: ``dusk``, ``day``, ``night``...
        weather: ``clear``, ``rain``, ``snow``, ``fog``...
        entities: what is present.
        setting: what the place shows, in words (the location's prompt, then the
            scene's own): the landmarks and props a structured backend draws.
        light: the light the story set (``lantern``, ``moonlight``, ``firelight``...), or ``""``.
    """

    location: str
    palette: str = "dusk"
    time_of_day: str = "dusk"
    weather: str = "clear"
    entities: tuple[Entity, ...] = ()
    setting: str = ""
    light: str = ""


@dataclass(frozen=True)
class SessionStart:
    """Opens a backend session.

    Attributes:
        session_id: the game session's id.
        seed: seed of all randomness in the backend.
        prompt: opening text prompt.
        anchors: global sink anchors (style, identities).
        width, height: requested frame size, or ``None`` for the backend default.
    """

    session_id: str
    seed: int
    prompt: str
    anchors: tuple[Anchor, ...] = ()
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class WorldRequest:
    """One chunk request.

    Attributes:
        session_id: backend session id.
        seq: strictly increasing sequence number (idempotency key).
        min_frames: at least this many frames; the backend rounds up to whole blocks.
        prompt: the full text prompt for this chunk.
        switch_mode: how to switch prompt, or ``None`` to keep the previous prompt.
        scene: the structured scene.
        actions: one action per frame (``""`` for none; ``"w"``, ``"a"``...), length
            ``min_frames`` or shorter (the backend holds the last one).
        action_frames: one :class:`ActionFrame` per output frame (keys held, mouse,
            camera pose), or shorter (the backend holds the last one); ``()``: no input.
        first_block_frames: make the first block only this many frames (rounded up
            to the backend's ``min_block_frames``) so the reaction shows soonest;
            ``0``: the backend's usual block.
        camera_x: camera position at the chunk's start, in world units.
        camera_dx: camera motion per frame, in world units.
        references: paths of reference images to honour.
        audio: path of an audio cue, or ``""``.
        cue: the reaction / sound cue of this chunk (``leap``, ``recoil``...), or ``""``.
        sounds: every sound cue of the turn, in order, as ``channel:cue`` (``sound:gull``,
            ``music:tide``; an Ink ``# sound:`` / ``# music:`` tag each).
        directives: the custom tags of the turn's lines and choices (an Ink ``# camera: low``
            the runtime does not act on), for a backend that does; one that does not
            reports each in ``FrameChunk.ignored``.
        event: the story event that caused the request (``scene``, ``choice``, ``move``...).
        event_id: the stable id behind that event (choice id, scene id).
        anchors: sink anchors in force (global then current level).
        rolling: summaries of the last chunks (rolling history tier), oldest first.
        deadline_ms: the chunk is late after this many ms of wall time (0 = none).
        tiers: part name -> tier it came from (``"prompt.location": "sink_current"``).
        ahead: the scenes one choice or exit away, so a backend can prepare them while
            the player reads (the procedural backend paints their static layers).
    """

    session_id: str
    seq: int
    min_frames: int
    prompt: str
    switch_mode: SwitchMode | None = None
    scene: Scene = field(default_factory=lambda: Scene(location=""))
    actions: tuple[str, ...] = ()
    action_frames: tuple[ActionFrame, ...] = ()
    first_block_frames: int = 0
    camera_x: float = 0.0
    camera_dx: float = 0.0
    references: tuple[str, ...] = ()
    audio: str = ""
    cue: str = ""
    sounds: tuple[str, ...] = ()
    directives: tuple[str, ...] = ()
    event: str = ""
    event_id: str = ""
    anchors: tuple[Anchor, ...] = ()
    rolling: tuple[str, ...] = ()
    deadline_ms: int = 0
    tiers: dict[str, str] = field(default_factory=dict)
    ahead: tuple[Scene, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict of the whole request."""
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """The short form written into transcripts."""
        return {
            "seq": self.seq,
            "min_frames": self.min_frames,
            "switch": self.switch_mode,
            "event": self.event,
            "event_id": self.event_id,
            "cue": self.cue,
            "sounds": list(self.sounds),
            "directives": list(self.directives),
            "location": self.scene.location,
            "entities": [f"{e.id}:{e.state}" for e in self.scene.entities],
            "prompt": self.prompt[:160],
        }


@dataclass(frozen=True)
class Timing:
    """Per-stage wall time of one chunk, milliseconds (not part of determinism)."""

    queue_ms: float = 0.0
    encode_ms: float = 0.0
    recache_ms: float = 0.0
    denoise_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0


@dataclass(frozen=True)
class FrameChunk:
    """Frames one request yields, one block at a time.

    Attributes:
        seq: the request's sequence number.
        block: index of this block within the request (0-based).
        last: whether this is the request's last block.
        first_frame: index of its first frame in the backend session.
        frames: ``(T, H, W, 3)`` uint8 RGB.
        fps: frames per second.
        audio: ``(round(T * audio_rate / fps),)`` float32 mono, or ``None``.
        audio_rate: Hz.
        ignored: inputs of the request this backend did not use, with why
            (``"references: no reference images"``).
        drawn: entity ids the backend actually drew (for story-fault monitors).
        memory: memory stats (``sink_frames``, ``window_frames``, ``cache_hits``...).
        probes: drift probes, name -> value.
        timing: per-stage timing.
    """

    seq: int
    block: int
    last: bool
    first_frame: int
    frames: np.ndarray
    fps: float
    audio: np.ndarray | None = None
    audio_rate: int = 22050
    ignored: tuple[str, ...] = ()
    drawn: tuple[str, ...] = ()
    memory: dict[str, float] = field(default_factory=dict)
    probes: dict[str, float] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])


@dataclass(frozen=True)
class MemoryOp:
    """A memory operation.

    Attributes:
        op: ``reset_history`` (keep sinks), ``reanchor`` (replace the current sink
            with ``anchors``), ``reset`` (start over), ``snapshot`` (returns a
            handle), ``restore`` (to ``handle``), ``fork`` (copy ``handle`` into
            ``new_session_id``).
    """

    op: MemoryOpKind
    anchors: tuple[Anchor, ...] = ()
    handle: str = ""
    new_session_id: str = ""


@dataclass(frozen=True)
class MemoryResult:
    """Outcome of a :class:`MemoryOp`: ``ok``, the snapshot ``handle``, and a note."""

    ok: bool
    handle: str = ""
    note: str = ""


@runtime_checkable
class Backend(Protocol):
    """What every world backend implements.

    ``generate`` yields the request's blocks as they are made; a caller may stop
    iterating early (pre-emption) and the backend then discards the rest.

    Raises (any method):
        game.errors.BackendError: the backend failed, timed out or is unreachable.
    """

    def capabilities(self) -> Capabilities: ...

    def start(self, start: SessionStart) -> None: ...

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]: ...

    def memory(self, op: MemoryOp) -> MemoryResult: ...

    def close(self) -> None: ...


@runtime_checkable
class Interruptible(Protocol):
    """A backend that can abandon the block it is making (optional).

    ``interrupt(session_id)`` asks the block in flight in that session (``""``: the
    current one) to stop at its next step; the stream of that request then ends
    without it, and nothing of the abandoned block is kept. A block-causal model takes
    ~0.1–1 s a block, so a player's new input waits at most one denoising step instead
    of a whole block. The wrapping layers (guard, voice) forward it; a backend without
    it is simply cut short after its current block.
    """

    def interrupt(self, session_id: str = "") -> None: ...


def interrupt(backend: Backend, session_id: str = "") -> bool:
    """Call ``backend.interrupt(session_id)`` if it has one; whether it did."""
    if isinstance(backend, Interruptible):
        backend.interrupt(session_id)
        return True
    return False


@runtime_checkable
class PaintsAhead(Protocol):
    """A backend that can prepare scenes before a request names them (optional).

    :func:`game.session.assembly.open_game` gives it the opening scene and the scenes one
    choice away from it (:func:`game.world.director.opening`) while the game is
    still loading, so the first block of play costs what a warm block costs. Requests
    name their own scenes ahead in :attr:`WorldRequest.ahead`.
    """

    def prepare(self, scenes: tuple[Scene, ...], seed: int) -> None:
        """Start preparing ``scenes`` for sessions of ``seed`` (returns at once; work runs
        in the background and a request that needs it waits for it)."""
        ...


def ignored_inputs(caps: Capabilities, request: WorldRequest) -> tuple[str, ...]:
    """The inputs of ``request`` that a backend with ``caps`` cannot use, with why.

    Backends call this so the report is the same everywhere.
    """
    out: list[str] = []
    if request.prompt and not caps.text:
        out.append("prompt: backend takes no text")
    if request.switch_mode and request.switch_mode not in caps.switch_modes:
        out.append(f"switch_mode {request.switch_mode}: supports {', '.join(caps.switch_modes)}")
    if any(request.actions) and not caps.actions and not request.action_frames:
        out.append("actions: backend takes no actions")
    out += ignored_action_parts(caps, request.action_frames)
    if request.references and caps.ref_images == "none":
        out.append("references: backend takes no reference images")
    if request.audio and not caps.audio_in:
        out.append("audio: backend takes no audio cues")
    if request.scene.entities and not caps.structured_scene:
        out.append("scene: backend reads no structured scene")
    out += [f"directive {d}: not acted on by this backend" for d in request.directives
            if d.split(":", 1)[0].strip() not in caps.directives]
    return tuple(out)


def ignored_action_parts(caps: Capabilities, frames: tuple[ActionFrame, ...]) -> list[str]:
    """The parts of ``frames`` a backend with ``caps`` does not read, one sentence per kind.

    Keys outside ``caps.actions``, any non-zero mouse motion without ``caps.mouse``, and
    camera-pose components outside ``caps.camera`` that move or are non-zero.
    """
    out: list[str] = []
    keys = sorted({k for f in frames for k in f.keys if k not in caps.actions})
    if keys:
        reads = ", ".join(caps.actions) if caps.actions else "no keys"
        out.append(f"action keys {', '.join(keys)}: backend reads {reads}")
    if not caps.mouse and any(f.mouse != (0.0, 0.0) for f in frames):
        out.append("action mouse: backend reads no mouse")
    poses = [f.camera for f in frames if f.camera is not None]
    unread = [p for p in POSE_PARTS if p not in caps.camera and any(getattr(c, p) for c in poses)]
    if unread:
        reads = ", ".join(caps.camera) if caps.camera else "no camera pose"
        out.append(f"action camera {', '.join(unread)}: backend reads {reads}")
    return out


def check_frames(frames: np.ndarray, caps: Capabilities) -> str:
    """Return ``""`` if ``frames`` is a valid ``(T, H, W, 3)`` uint8 block for ``caps``,
    else a sentence saying what is wrong."""
    if not isinstance(frames, np.ndarray):
        return f"frames are {type(frames).__name__}, not numpy.ndarray"
    if frames.dtype != np.uint8:
        return f"frames dtype is {frames.dtype}, not uint8"
    if frames.ndim != 4 or frames.shape[3] != 3:
        return f"frames shape is {frames.shape}, not (T, H, W, 3)"
    if frames.shape[1:3] != (caps.height, caps.width):
        return f"frames are {frames.shape[2]}x{frames.shape[1]}, not {caps.width}x{caps.height}"
    return ""
