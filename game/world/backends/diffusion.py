"""The ``diffusion`` backend: a streaming adapter over SkyReels-V2 diffusion forcing (diffusers).

SkyReels-V2's diffusion-forcing models (``SkyReelsV2DiffusionForcingPipeline`` in
diffusers) make long videos by continuing from their own past frames: each pass
re-encodes the last ``overlap_history`` frames as a clean prefix and denoises new
frames after it. diffusers exposes that as whole-video calls; this backend turns it
into the game's block stream (``shared/reference/world-models.md`` (a), (b)):

* **one block = one pipeline call**: ``frames_per_block`` new frames (a multiple of
  the VAE's 4-frame temporal stride) are made, decoded and yielded before the next
  call starts, so a caller that stops early (pre-emption) pays for nothing more;
* **rolling history = the overlap frames**: the last ``overlap_frames`` frames the
  backend made (``(h, H, W, 3)`` uint8, ``h = 1 mod 4``) go in as ``video=`` /
  ``overlap_history=`` of ``SkyReelsV2DiffusionForcingVideoToVideoPipeline``; the
  new block is the last ``frames_per_block`` frames it returns;
* **current sink = the image anchor**: a block with no history (session start, a
  ``scene_cut``, a ``reanchor`` with an image, ``reset_history``) starts from the
  sink image through ``SkyReelsV2DiffusionForcingImageToVideoPipeline`` (``image=``),
  or from text alone through the plain pipeline when there is none. That is the only
  place the model takes an image (``ref_images="first_frame"``); image anchors it cannot
  use (characters, objects) and references given mid-shot are reported as ignored;
* **prompt switches**: ``plain`` swaps the prompt embeddings and keeps the history
  clean; ``recache`` does the same and, for the first block after it, re-noises the
  history by ``recache_noise`` (diffusers' ``addnoise_condition``, SkyReels' own
  smoothing knob) so the history is re-denoised under the new prompt: there is no KV
  cache to rebuild, every call re-reads its prefix under the current prompt, so the
  timing's ``recache_ms`` stays 0; ``scene_cut`` drops the history and starts from
  the sink;
* **pre-emption**: a caller that stops iterating drops the blocks not yet made;
  :meth:`DiffusionBackend.interrupt` abandons the pipeline call in flight at its next
  denoising step (diffusers' ``callback_on_step_end``; nothing of the block is kept,
  not even decoded) and ends the request's stream;
* **determinism**: the noise of block ``k`` of a session comes from
  ``torch.Generator("cpu").manual_seed(block_seed(seed, k))`` (and the global RNG is
  seeded the same way around the call), so the same state and requests give the same
  frames, byte for byte on one machine, and a fork replays its branch exactly;
* **snapshot / restore / fork** copy the session's state: the history frames (shared,
  never written in place), the prompt, the sinks and the block / frame counters;
* frames out are ``(frames_per_block, height, width, 3)`` uint8 RGB; no sound
  (``audio_out=False``).

Weights come from a folder or hub id through :mod:`game.models.diffusion_loader`
(``--backend diffusion --model PATH``), or from a pipeline object the caller built
(``pipeline=``, the tests' tiny random one). Without a text encoder the prompts are
embedded offline (:mod:`game.world.backends.diffusion_embed`; each chunk says so in
``ignored``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from game.errors import BackendError, WorldloomError
from game.models.diffusion_loader import load_diffusion_pipeline
from game.words import counted
from game.world.backends.diffusion_embed import PromptEncoder, TextEncoderFn
from game.world.backends.diffusion_timing import StageClock
from game.world.backends.sessions import Interrupts, SessionTable, check_start_size
from game.world.protocol import (
    Anchor,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    Timing,
    WorldRequest,
    ignored_inputs,
)

#: Snapshots kept per backend (oldest dropped first).
MAX_SNAPSHOTS = 64
#: Pipeline calls remembered in :attr:`DiffusionBackend.calls` (tests, debugging).
CALL_LOG = 64
#: Image-anchor roles that can be a shot's first frame.
SINK_ROLES = ("world", "style", "location")

Variant = Literal["t2v", "i2v", "v2v"]
U8 = np.ndarray

_PIPE_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_PIPE_LOCKS_GUARD = threading.Lock()


def _pipe_lock(transformer: Any) -> threading.Lock:
    """One lock per set of weights: pipelines sharing a transformer run one call at a time."""
    with _PIPE_LOCKS_GUARD:
        lock = _PIPE_LOCKS.get(transformer)
        if lock is None:
            lock = threading.Lock()
            _PIPE_LOCKS[transformer] = lock
        return lock


def block_seed(seed: int, block: int) -> int:
    """The noise seed of block ``block`` of a session seeded ``seed`` (63 bits, BLAKE2b)."""
    digest = hashlib.blake2b(f"worldloom.diffusion:{seed}:{block}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _fingerprint(request: WorldRequest) -> str:
    text = json.dumps(request.to_json(), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass
class _State:
    """Everything one backend session carries between blocks (snapshots copy it)."""

    session_id: str
    seed: int
    prompt: str
    start_prompt: str
    anchors_global: tuple[Anchor, ...]
    anchors_current: tuple[Anchor, ...] = ()
    history: U8 | None = None
    frame: int = 0
    block: int = 0
    last_seq: int = -1
    cut: bool = True
    renoise: bool = False
    switches: int = 0
    seen: dict[int, tuple[str, _State]] = field(default_factory=dict)

    def copy(self, session_id: str | None = None) -> _State:
        """An independent copy (the history array is shared: it is never written in place)."""
        return replace(self, session_id=session_id or self.session_id, seen=dict(self.seen))


@dataclass(frozen=True)
class BlockCall:
    """What one pipeline call was asked for (kept in :attr:`DiffusionBackend.calls`).

    Attributes:
        session_id: backend session.
        seq, block: the request and the block within it.
        variant: ``t2v`` (text only), ``i2v`` (from the sink image) or ``v2v`` (from the history).
        prompt: the conditioning text.
        history_frames: overlap frames passed (0 for ``t2v`` / ``i2v``).
        image: id of the anchor (or ``reference:PATH``) used as the first frame, or ``""``.
        addnoise: ``addnoise_condition`` passed (history re-noising, 0 = clean).
        seed: the block's noise seed.
    """

    session_id: str
    seq: int
    block: int
    variant: Variant
    prompt: str
    history_frames: int
    image: str
    addnoise: float
    seed: int


class _Abandoned(Exception):
    """The block in flight was interrupted (never leaves the backend)."""


@dataclass(frozen=True)
class _Made:
    frames: U8
    keep: U8
    call: BlockCall
    encode_ms: float
    denoise_ms: float
    decode_ms: float
    notes: tuple[str, ...]


class DiffusionBackend:
    """SkyReels-V2 diffusion forcing behind the world protocol (see the module doc).

    Args:
        model: a pipeline folder or hub id (loaded once via :mod:`game.models.diffusion_loader`);
            default ``$WORLDLOOM_DIFFUSION_MODEL``.
        pipeline: an already built ``SkyReelsV2DiffusionForcingPipeline`` (instead of ``model``).
        width, height: frame size in pixels, multiples of 16 (the published 540P model: 960 x 544).
        fps: frames per second (SkyReels-V2 knows 24 and 16).
        frames_per_block: new frames per pipeline call, a multiple of 4.
        overlap_frames: history frames fed back as the overlap, ``1 mod 4`` (17 or 37 published).
        steps: denoising steps per call.
        guidance_scale: classifier-free guidance (> 1 runs the transformer twice per step).
        history_noise: ``addnoise_condition`` on every continuation (0 = clean history; SkyReels suggests 20).
        recache_noise: ``addnoise_condition`` of the first block after a ``recache`` switch.
        negative_prompt: the negative prompt used with guidance.
        text_encoder: a custom ``prompt -> (1, L, D)`` encoder; default: the pipeline's own
            UMT5 when loaded, else the offline hashed fallback.
        load_text_encoder: with ``model``: load the UMT5 text encoder (``False`` saves ~11 GB).
        device, dtype: with ``model``: where and in what precision it runs (``auto``).
        ar_step, causal_block_size: SkyReels' asynchronous schedule (0 / ``None``: synchronous).

    Raises:
        BackendError: no model given, it cannot be loaded, or the sizes do not fit the model.
    """

    def __init__(self, model: str | Path | None = None, *, pipeline: Any = None, width: int = 960,
                 height: int = 544, fps: float = 24.0, frames_per_block: int = 20, overlap_frames: int = 17,
                 steps: int = 30, guidance_scale: float = 6.0, history_noise: float = 0.0,
                 recache_noise: float = 20.0, negative_prompt: str = "", text_encoder: TextEncoderFn | None = None,
                 load_text_encoder: bool = True, device: str = "auto", dtype: str = "auto", ar_step: int = 0,
                 causal_block_size: int | None = None) -> None:
        if pipeline is None:
            model = model or os.environ.get("WORLDLOOM_DIFFUSION_MODEL") or None
            if model is None:
                raise BackendError("the diffusion backend needs a model",
                                   hint="--model PATH (a diffusers folder) or a hub id such as "
                                        "Skywork/SkyReels-V2-DF-1.3B-540P-Diffusers")
            try:
                pipeline = load_diffusion_pipeline(model, device=device, dtype=dtype,
                                                   text_encoder=load_text_encoder)
            except WorldloomError as exc:
                raise BackendError(exc.why, exc.where, exc.hint) from exc
        self._pipe = pipeline
        temporal = int(getattr(pipeline, "vae_scale_factor_temporal", 4))
        spatial = int(getattr(pipeline, "vae_scale_factor_spatial", 8))
        patch = tuple(pipeline.transformer.config.patch_size)
        unit = spatial * int(patch[1])
        problems = []
        if width < unit or height < unit or width % unit or height % unit:
            problems.append(f"frame size {width}x{height} must be multiples of {unit}")
        if frames_per_block < temporal or frames_per_block % temporal:
            problems.append(f"frames_per_block {frames_per_block} must be a multiple of {temporal}")
        if overlap_frames < 1 or overlap_frames % temporal != 1:
            problems.append(f"overlap_frames {overlap_frames} must be 1 more than a multiple of {temporal}")
        if steps < 1 or fps <= 0:
            problems.append(f"steps {steps} and fps {fps} must be positive")
        if problems:
            raise BackendError("diffusion backend: " + "; ".join(problems))
        self._temporal = temporal
        self._overlap = overlap_frames
        self._steps = steps
        self._guidance = guidance_scale
        self._history_noise = history_noise
        self._recache_noise = recache_noise
        self._negative = negative_prompt
        self._ar_step = ar_step
        self._causal_block = causal_block_size
        self._caps = Capabilities(
            backend="diffusion",
            frames_per_block=frames_per_block,
            fps=fps,
            width=width,
            height=height,
            text=True,
            switch_modes=("recache", "scene_cut", "plain"),
            actions=(),
            mouse=False,
            camera=(),
            ref_images="first_frame",
            audio_in=False,
            audio_out=False,
            structured_scene=False,
            sink_frames=1,
            window_frames=overlap_frames,
            object_cache=False,
            snapshot=True,
        )
        self._t2v, self._v2v, self._i2v = _variants(pipeline)
        self._encoder = PromptEncoder(pipeline, text_encoder)
        device_name = str(getattr(pipeline.transformer, "device", "cpu"))
        self._clock = StageClock(device_name)
        self._call_lock = _pipe_lock(pipeline.transformer)
        self._lock = threading.RLock()
        self._table: SessionTable[_State] = SessionTable(MAX_SNAPSHOTS)
        self._stop = Interrupts()
        self._images: OrderedDict[str, Any] = OrderedDict()
        self._closed = False
        #: The last pipeline calls, newest last.
        self.calls: deque[BlockCall] = deque(maxlen=CALL_LOG)
        #: How the backend runs: device, dtype, text encoding, model.
        self.info: dict[str, str] = {
            "model": str(model) if model is not None else type(pipeline).__name__,
            "device": device_name,
            "dtype": str(getattr(pipeline.transformer, "dtype", "")),
            "text": self._encoder.kind,
        }

    # -- protocol ------------------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        """What this backend does (the same object every call)."""
        return self._caps

    def start(self, start: SessionStart) -> None:
        """Open (or reopen from scratch) session ``start.session_id``.

        Raises:
            BackendError: the backend is closed, or another frame size is asked for.
        """
        with self._lock:
            self._check_open()
            check_start_size(self._caps, start)
            self._table.sessions[start.session_id] = _State(session_id=start.session_id, seed=int(start.seed),
                                                      prompt=start.prompt, start_prompt=start.prompt,
                                                      anchors_global=tuple(start.anchors))
            self._table.current = start.session_id

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """Yield ``round_up(min_frames) / frames_per_block`` blocks, each made by one pipeline call.

        Each block is ``(frames_per_block, height, width, 3)`` uint8. The session advances
        block by block (before each is yielded), so stopping early advances it only by
        the blocks taken. A repeated ``seq`` with the identical request regenerates the
        same frames from the state it started from, without advancing the session.

        Raises:
            BackendError: closed backend, unknown session, a ``seq`` that goes backwards
                or is reused for another request, or the pipeline failed.
        """
        with self._lock:
            self._check_open()
            work = self._table.admit(request, _fingerprint(request))
            self._stop.arm(work.session_id)
        return self._blocks(work, request)

    def interrupt(self, session_id: str = "") -> None:
        """Abandon the pipeline call in flight in ``session_id`` (default: the current one) at its
        next denoising step and end that request's stream; nothing of the abandoned block is kept."""
        with self._lock:
            self._stop.interrupt(session_id or self._table.current)

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Apply a memory operation to the current session (the last one started or used).

        ``snapshot`` returns a handle; ``restore`` puts its session back to it; ``fork``
        copies a snapshot (or the current session) to ``new_session_id``; ``reset``
        starts the session over (same seed: it replays from its first block);
        ``reset_history`` drops the overlap frames (the next block starts from the sink);
        ``reanchor`` makes ``op.anchors`` the current sink: an image among them becomes
        the first frame of the next block (the history is dropped), text joins the
        conditioning.
        """
        with self._lock:
            self._check_open()
            sess = self._table.target(op)
            if isinstance(sess, MemoryResult):
                return sess
            if op.op == "reset":
                self._table.sessions[sess.session_id] = _State(session_id=sess.session_id, seed=sess.seed,
                                                         prompt=sess.start_prompt, start_prompt=sess.start_prompt,
                                                         anchors_global=sess.anchors_global)
                return MemoryResult(ok=True, note="session started over")
            if op.op == "reset_history":
                sess.history = None
                sess.cut = True
                sess.renoise = False
                return MemoryResult(ok=True, note="overlap history dropped; the next block starts from the sink")
            if op.op == "reanchor":
                sess.anchors_current = tuple(op.anchors)
                images = [a for a in op.anchors if a.kind == "image"]
                if images:
                    sess.cut = True
                    sess.renoise = False
                    return MemoryResult(ok=True, note=f"current sink {images[-1].id}: the next block starts from it")
                return MemoryResult(ok=True,
                                    note=f"current sink: {counted(len(op.anchors), 'text anchor')}; in the prompt")
            return MemoryResult(ok=False, note=f"unknown memory op {op.op!r}")

    def close(self) -> None:
        """Drop every session and snapshot; later calls raise :class:`BackendError`.

        The weights stay loaded (the loader shares them) until nothing holds them.
        """
        with self._lock:
            self._table.clear()
            self._images.clear()
            self._closed = True

    # -- blocks --------------------------------------------------------------------------------
    def _blocks(self, sess: _State, request: WorldRequest) -> Iterator[FrameChunk]:
        caps = self._caps
        fpb = caps.frames_per_block
        total = caps.round_up(request.min_frames)
        with self._lock:
            self._switch(sess, request)
        base_ignored = self._ignored(request, sess)
        for b in range(total // fpb):
            t0 = time.perf_counter()
            if self._stop.stopped(sess.session_id):
                return
            with self._call_lock:
                t1 = time.perf_counter()
                try:
                    made = self._make(sess, request, b)
                except _Abandoned:
                    return
            with self._lock:
                first = sess.frame
                history = made.keep if made.call.variant != "v2v" or sess.history is None \
                    else np.concatenate([sess.history, made.keep], axis=0)
                sess.history = history[-self._overlap:]
                sess.frame += fpb
                sess.block += 1
                sess.cut = False
                sess.renoise = False
                self.calls.append(made.call)
                memory = self._stats(sess, made.call)
            t2 = time.perf_counter()
            luma = float((made.frames[:, ::4, ::4].astype(np.float32) @ np.array([0.299, 0.587, 0.114],
                                                                               np.float32)).mean() / 255.0)
            end = (b + 1) * fpb
            yield FrameChunk(
                seq=request.seq,
                block=b,
                last=end >= total,
                first_frame=first,
                frames=made.frames,
                fps=caps.fps,
                audio=None,
                audio_rate=caps.audio_rate,
                ignored=base_ignored + made.notes,
                drawn=(),
                memory=memory,
                probes={"luma": luma, "from_sink": 1.0 if made.call.variant != "v2v" else 0.0},
                timing=Timing(queue_ms=(t1 - t0) * 1000.0, encode_ms=made.encode_ms, recache_ms=0.0,
                              denoise_ms=made.denoise_ms, decode_ms=made.decode_ms, total_ms=(t2 - t0) * 1000.0),
            )

    def _switch(self, sess: _State, request: WorldRequest) -> None:
        mode = request.switch_mode
        if mode is None or not request.prompt:
            return
        if request.prompt != sess.prompt:
            sess.switches += 1
        sess.prompt = request.prompt
        if mode == "scene_cut":
            sess.cut = True
            sess.renoise = False
        elif mode == "recache":
            sess.renoise = sess.history is not None and not sess.cut

    def _conditioning(self, sess: _State) -> str:
        """The text the block is conditioned on: the prompt plus current-sink text not already in it."""
        extra = [a.ref for a in sess.anchors_current if a.kind == "text" and a.ref and a.ref not in sess.prompt]
        return ". ".join([sess.prompt.rstrip(". "), *extra]) if extra else sess.prompt

    def _usable_history(self, sess: _State) -> int:
        """Overlap frames to pass: the most ``<= overlap_frames`` available that the VAE and the
        causal blocks accept (``1 mod 4``); 0 when there are none."""
        if sess.history is None or sess.cut:
            return 0
        h = min(len(sess.history), self._overlap)
        latents = (h - 1) // self._temporal + 1 if h >= 1 else 0
        if self._causal_block:
            latents = latents // self._causal_block * self._causal_block
        return (latents - 1) * self._temporal + 1 if latents >= 1 else 0

    def _make(self, sess: _State, request: WorldRequest, b: int) -> _Made:
        """Run one pipeline call for block ``b`` of ``request`` (caller holds the pipeline lock)."""
        import torch

        caps = self._caps
        fpb = caps.frames_per_block
        notes: list[str] = []
        t0 = self._clock.now()
        text = self._conditioning(sess)
        embeds = self._encoder.encode(text)
        negative = self._encoder.encode(self._negative) if self._guidance > 1.0 else None
        h = self._usable_history(sess)
        image_id, image = "", None
        if h == 0:
            image_id, image, unread = self._sink_image(sess, request if b == 0 else None)
            notes += unread
        if request.references and not (b == 0 and image_id.startswith("reference:")):
            notes.append("references: this model takes an image only as the first frame of a shot "
                         "(scene cut, re-anchor); this block continues the shot")
        seed = block_seed(sess.seed, sess.block)
        kwargs: dict[str, Any] = dict(
            prompt=None, prompt_embeds=embeds, negative_prompt_embeds=negative, height=caps.height,
            width=caps.width, num_inference_steps=self._steps, guidance_scale=self._guidance,
            generator=torch.Generator(device="cpu").manual_seed(seed), output_type="np", ar_step=self._ar_step,
            causal_block_size=self._causal_block, fps=int(round(caps.fps)),
        )
        addnoise = 0.0
        variant: Variant
        if h:
            variant, pipe = "v2v", self._v2v
            addnoise = max(self._history_noise, self._recache_noise if sess.renoise else 0.0)
            assert sess.history is not None
            video = [_pil(f) for f in sess.history[-h:]]
            kwargs.update(video=video, num_frames=h + fpb, base_num_frames=h + fpb, overlap_history=h,
                          addnoise_condition=addnoise)
        elif image is not None:
            variant, pipe = "i2v", self._i2v
            kwargs.update(image=image, num_frames=fpb + 1, base_num_frames=fpb + 1)
        else:
            variant, pipe = "t2v", self._t2v
            kwargs.update(num_frames=fpb + 1, base_num_frames=fpb + 1)
        embed_ms = (self._clock.now() - t0) * 1000.0
        devices = [torch.cuda.current_device()] if self._clock.cuda else []
        try:
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(seed)
                with self._clock.measure(pipe) as times:
                    out = pipe(**kwargs, callback_on_step_end=self._step_check(sess.session_id)).frames
        except _Abandoned:
            raise
        except Exception as exc:  # diffusers raises ValueError, RuntimeError, torch OOM...
            raise BackendError(f"diffusion pipeline failed ({variant}): {type(exc).__name__}: {exc}",
                               where=f"session {sess.session_id} seq {request.seq} block {b}") from exc
        t1 = self._clock.now()
        video_out = np.asarray(out[0] if isinstance(out, list | tuple) or np.ndim(out) == 5 else out)
        u8 = (np.clip(video_out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
        if u8.ndim != 4 or u8.shape[1:] != (caps.height, caps.width, 3):
            raise BackendError(f"diffusion pipeline returned frames of shape {u8.shape}, "
                               f"not (T, {caps.height}, {caps.width}, 3)")
        frames = np.ascontiguousarray(u8[-fpb:])
        keep = frames if variant == "v2v" else np.ascontiguousarray(u8)
        if frames.shape[0] != fpb:
            raise BackendError(f"diffusion pipeline returned {u8.shape[0]} frames, fewer than {fpb}")
        decode_extra = (self._clock.now() - t1) * 1000.0
        call = BlockCall(session_id=sess.session_id, seq=request.seq, block=b, variant=variant, prompt=text,
                         history_frames=h, image=image_id, addnoise=addnoise, seed=seed)
        return _Made(frames=frames, keep=keep, call=call, encode_ms=embed_ms + times.encode_ms,
                     denoise_ms=times.denoise_ms, decode_ms=times.decode_ms + decode_extra, notes=tuple(notes))

    def _step_check(self, session_id: str) -> Any:
        """diffusers' ``callback_on_step_end``: raises :class:`_Abandoned` once ``session_id`` is interrupted."""
        def check(pipe: Any, step: int, timestep: Any, tensors: dict[str, Any]) -> dict[str, Any]:
            if self._stop.stopped(session_id):
                raise _Abandoned(f"session {session_id} interrupted at step {step}")
            return tensors

        return check

    def _sink_image(self, sess: _State, request: WorldRequest | None) -> tuple[str, Any, list[str]]:
        """The first frame of a new shot: ``(id, PIL image at the frame size, notes)``, or ``("", None, notes)``.

        Order: the request's own reference images (first block only), the current sink's
        images (``reanchor``), the request's ``sink_current`` images, then the global sink's
        world / style / location images. Unreadable images are skipped with a note.
        """
        candidates: list[tuple[str, str]] = []
        if request is not None:
            candidates += [(f"reference:{p}", p) for p in reversed(request.references)]
        candidates += [(a.id, a.ref) for a in reversed(sess.anchors_current) if a.kind == "image"]
        if request is not None:
            candidates += [(a.id, a.ref) for a in request.anchors if a.kind == "image" and a.tier == "sink_current"]
            candidates += [(a.id, a.ref) for a in request.anchors
                           if a.kind == "image" and a.tier == "sink_global" and a.role in SINK_ROLES]
        candidates += [(a.id, a.ref) for a in sess.anchors_global if a.kind == "image" and a.role in SINK_ROLES]
        notes: list[str] = []
        for ident, path in candidates:
            try:
                return ident, self._image(path), notes
            except (OSError, ValueError) as exc:
                notes.append(f"anchor {ident}: unreadable image ({type(exc).__name__}); not used")
        return "", None, notes

    def _image(self, path: str) -> Any:
        from PIL import Image, ImageOps

        hit = self._images.get(path)
        if hit is not None:
            return hit
        with Image.open(path) as im:
            img = ImageOps.fit(im.convert("RGB"), (self._caps.width, self._caps.height),
                               method=Image.Resampling.BICUBIC)
        self._images[path] = img
        while len(self._images) > 16:
            self._images.popitem(last=False)
        return img

    def _ignored(self, request: WorldRequest, sess: _State) -> tuple[str, ...]:
        notes = list(ignored_inputs(self._caps, request))
        if request.camera_dx and not request.action_frames:  # else the pose is reported by ignored_inputs
            notes.append("camera: no camera control (SkyReels-DF reads text and a first frame)")
        if request.cue:
            notes.append(f"cue {request.cue}: no reaction control")
        anchors = {a.id: a for a in (*sess.anchors_global, *request.anchors, *sess.anchors_current)}
        for a in anchors.values():
            if a.kind == "image" and a.role not in SINK_ROLES:
                notes.append(f"anchor {a.id}: no identity conditioning; images are used only as a shot's first frame")
            elif a.kind == "audio":
                notes.append(f"anchor {a.id}: no audio conditioning")
        if self._encoder.note:
            notes.append(self._encoder.note)
        return tuple(notes)

    def _stats(self, sess: _State, call: BlockCall) -> dict[str, float]:
        return {
            "sink_frames": 1.0 if call.image else 0.0,
            "window_frames": float(self._overlap),
            "window_used": float(0 if sess.history is None else len(sess.history)),
            "history_in": float(call.history_frames),
            "history_noise": float(call.addnoise),
            "frames_total": float(sess.frame),
            "blocks_total": float(sess.block),
            "prompt_switches": float(sess.switches),
            "sink_anchors": float(len(sess.anchors_global) + len(sess.anchors_current)),
        }

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError("diffusion backend is closed")


def _pil(frame: U8) -> Any:
    from PIL import Image

    return Image.fromarray(np.ascontiguousarray(frame))


def _variants(pipe: Any) -> tuple[Any, Any, Any]:
    """The text-, video- and image-conditioned SkyReels-DF pipelines over ``pipe``'s components (shared weights).

    Raises:
        BackendError: diffusers is missing or ``pipe`` is not a SkyReels-V2 pipeline.
    """
    try:
        from diffusers import (
            SkyReelsV2DiffusionForcingImageToVideoPipeline,
            SkyReelsV2DiffusionForcingPipeline,
            SkyReelsV2DiffusionForcingVideoToVideoPipeline,
        )
    except ImportError as exc:
        raise BackendError(f"the diffusion backend needs diffusers: {exc}", hint="pip install diffusers") from exc
    try:
        comps = {k: pipe.components[k] for k in ("tokenizer", "text_encoder", "transformer", "vae", "scheduler")}
    except (AttributeError, KeyError) as exc:
        raise BackendError(f"not a SkyReels-V2 pipeline: {type(pipe).__name__}") from exc
    out: list[Any] = []
    classes: tuple[Any, ...] = (SkyReelsV2DiffusionForcingPipeline, SkyReelsV2DiffusionForcingVideoToVideoPipeline,
                                SkyReelsV2DiffusionForcingImageToVideoPipeline)
    for cls in classes:
        p: Any = pipe if type(pipe) is cls else cls(**comps)
        p.set_progress_bar_config(disable=True)
        out.append(p)
    return out[0], out[1], out[2]
