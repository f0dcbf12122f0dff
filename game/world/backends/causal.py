"""The ``causal`` backend: block-causal streaming with a real KV cache (Wan family).

A Self-Forcing / CausVid / LongLive style text-to-video world model behind the
protocol, over diffusers' Wan components (``WanTransformer3DModel``,
``AutoencoderKLWan``) driven block by block by :mod:`game.models.causal_model` /
:mod:`causal_sampler` / :mod:`causal_vae`:

* **a session holds the KV cache** (:class:`~game.models.causal_model.KVCache`),
  the VAE decoder's stream state, the prompt and counters; nothing else carries
  state between blocks;
* **one block** = ``latent_frames`` latent frames (``4 x latent_frames`` frames out)
  denoised with a few steps (:class:`~game.world.backends.causal_sampler.Schedule`)
  against the cache, then written into it and decoded; a request's first block may
  be a single latent frame (``first_block_frames``, ``min_block_frames = 4``) so a
  reaction shows soonest. The first latent frame of a session decodes to one frame
  (the VAE is causal in time); it is held for 4 frames so every block has whole frames;
* **memory tiers map onto the cache**: the first ``sink_latents`` latent frames of the
  session are the global sink, and the first ones after a ``scene_cut`` the current
  sink, both pinned and never evicted; the ``rolling`` window keeps the newest
  ``window_latents`` frames, the oldest evicted first. ``reset_history`` drops the
  window; ``reset`` drops everything;
* **prompt switches**: ``plain`` swaps the cross-attention context and keeps the cache
  as it is (no set-up cost); ``recache`` rebuilds the cached frames' keys and values
  under the new prompt (LongLive's KV recache; its time is the chunk's
  ``timing.recache_ms``); ``scene_cut`` drops the window and the current sink, keeps
  the global sink and recaches it under the new prompt;
* **text conditioning** is encoded once per conditioning text (prompt embeddings and
  every layer's cross-attention keys / values) and reused until it changes
  (``memory["context_encodes"]`` counts encodings);
* **snapshot / restore / fork** copy the session: the cache is never written in place,
  so a copy restores exactly the frames it left (the noise of block ``k`` comes from
  ``block_seed(seed, k)``);
* **pre-emption**: a caller that stops iterating drops the blocks not yet made;
  :meth:`CausalBackend.interrupt` abandons the block being denoised at its next step
  (nothing is written) and ends the request's stream;
* ``kv_cache=False`` is the no-cache loop used as a baseline: every block recomputes
  the keys and values of the *whole* history (nothing evicted), so its cost grows.

Frames are ``(4 * latent_frames, height, width, 3)`` uint8 RGB per block (a
single-latent first block: 4 frames); no sound. Without a text encoder the prompts go
through the offline hashed embeddings (:mod:`game.world.backends.diffusion_embed`,
reported in ``ignored``).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from game.errors import BackendError, WorldloomError
from game.models.causal_loader import load_causal_model
from game.models.causal_model import CausalWan, CrossContext, FrameTier, KVCache
from game.words import counted
from game.world.backends.causal_sampler import Abandoned, AddonFactory, Schedule, recache, sample_block
from game.world.backends.causal_vae import DecoderState, WanStream
from game.world.backends.diffusion import block_seed
from game.world.backends.diffusion_embed import PromptEncoder, TextEncoderFn
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

#: Conditioning contexts kept (prompt -> cross-attention keys / values).
CONTEXTS = 16


@dataclass
class CausalState:
    """Everything one session carries between blocks (a copy is an exact snapshot)."""

    session_id: str
    seed: int
    prompt: str
    start_prompt: str
    anchors_global: tuple[Anchor, ...]
    anchors_current: tuple[Anchor, ...] = ()
    cache: KVCache = field(default_factory=KVCache)
    decoder: DecoderState = None
    frame: int = 0
    latent_frame: int = 0
    block: int = 0
    last_seq: int = -1
    shot_latents: int = 0
    switches: int = 0
    recaches: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    seen: dict[int, tuple[WorldRequest, CausalState]] = field(default_factory=dict)

    def copy(self, session_id: str | None = None) -> CausalState:
        """An independent copy (tensors are shared: none is ever written in place)."""
        return replace(self, session_id=session_id or self.session_id, seen=dict(self.seen), extra=dict(self.extra),
                       decoder=None if self.decoder is None else list(self.decoder))


@dataclass(frozen=True)
class Block:
    """What one block was made from (kept in :attr:`CausalBackend.blocks`)."""

    session_id: str
    seq: int
    block: int
    latent_frames: int
    cached_frames: int
    tokens_attended: int
    prompt: str
    seed: int


class CausalBackend:
    """Block-causal text-to-video streaming with a KV cache (see the module doc).

    Args:
        model: a folder with ``transformer/`` and ``vae/`` (diffusers format; loaded once by
            :mod:`game.models.causal_loader`); default ``$WORLDLOOM_CAUSAL_MODEL``.
        checkpoint: the transformer's weights from a ``.safetensors`` file or a shard folder / index
            instead of ``model``'s own (``model`` then gives the architecture and the VAE).
        transformer, vae: already built ``WanTransformer3DModel`` / ``AutoencoderKLWan`` (instead of ``model``).
        width, height: frame size in pixels, multiples of 16 (Self-Forcing's Wan 1.3B: 832 x 480).
        fps: frames per second (Wan 2.1: 16).
        latent_frames: latent frames per block (Self-Forcing: 3, i.e. 12 frames).
        timesteps, shift: the few-step schedule (Self-Forcing: 1000, 750, 500, 250; shift 5).
        sink_latents: latent frames pinned as the sink (global at the start, current after a cut).
        window_latents: latent frames of the rolling window.
        kv_cache: ``False`` runs the growing no-cache baseline loop.
        text_encoder: ``prompt -> (1, L, text_dim)``; default: the offline hashed embeddings.
        device, dtype: with ``model``: where and in what precision (``auto``).

    Raises:
        BackendError: no model, it cannot be loaded, or sizes that do not fit it.
    """

    name = "causal"

    def __init__(self, model: str | Path | None = None, *, checkpoint: str | Path | None = None,
                 transformer: Any = None, vae: Any = None, width: int = 832, height: int = 480,
                 fps: float = 16.0, latent_frames: int = 3,
                 timesteps: tuple[float, ...] = (1000.0, 750.0, 500.0, 250.0), shift: float = 5.0,
                 sink_latents: int = 3, window_latents: int = 12, kv_cache: bool = True,
                 text_encoder: TextEncoderFn | None = None, device: str = "auto", dtype: str = "auto") -> None:
        if transformer is None or vae is None:
            model = model or os.environ.get("WORLDLOOM_CAUSAL_MODEL") or None
            if model is None:
                raise BackendError(f"the {self.name} backend needs a model",
                                   hint="--model PATH (a folder with transformer/ and vae/, diffusers format)")
            try:
                comps = load_causal_model(model, checkpoint=checkpoint, device=device, dtype=dtype)
            except WorldloomError as exc:
                raise BackendError(exc.why, exc.where, exc.hint) from exc
            transformer, vae = comps.transformer, comps.vae
            self._loaded = comps
        self.net = CausalWan(transformer)
        self.stream = WanStream(vae)
        unit = self.stream.spatial * self.net.patch[1]
        problems = []
        if width < unit or height < unit or width % unit or height % unit:
            problems.append(f"frame size {width}x{height} must be multiples of {unit}")
        if latent_frames < 1 or sink_latents < 0 or window_latents < 0 or fps <= 0 or not timesteps:
            problems.append("latent_frames, fps and the schedule must be positive; sink and window not negative")
        slots = sink_latents * 2 + window_latents + latent_frames
        if kv_cache and slots > self.net.max_positions:
            problems.append(f"sink {sink_latents} x 2 + window {window_latents} + block {latent_frames} latent frames "
                            f"exceed the model's {self.net.max_positions} RoPE positions")
        if problems:
            raise BackendError(f"{self.name} backend: " + "; ".join(problems))
        self.latent_frames = latent_frames
        self.schedule = Schedule(tuple(float(t) for t in timesteps), shift)
        self.sink_latents = sink_latents
        self.window_latents = window_latents
        self.kv_cache = kv_cache
        self._lat_hw = (height // self.stream.spatial, width // self.stream.spatial)
        self._caps = self._capabilities(width, height, fps)
        self._encoder = PromptEncoder(SimpleNamespace(transformer=transformer, text_encoder=None, tokenizer=None),
                                      text_encoder)
        self._contexts: OrderedDict[str, CrossContext] = OrderedDict()
        self.context_encodes = 0
        self._lock = threading.RLock()
        self._call_lock = threading.Lock()
        self._table: SessionTable[CausalState] = SessionTable()
        self._stop = Interrupts()
        self._closed = False
        #: The last blocks made, newest last (tests, debugging).
        self.blocks: list[Block] = []
        self.info = {"device": str(self.net.device), "dtype": str(self.net.dtype), "text": self._encoder.kind}

    def _capabilities(self, width: int, height: int, fps: float) -> Capabilities:
        return Capabilities(backend=self.name, frames_per_block=4 * self.latent_frames, fps=fps, width=width,
                            height=height, text=True, switch_modes=("recache", "scene_cut", "plain"), actions=(),
                            mouse=False, camera=(), min_block_frames=4, ref_images="none",
                            structured_scene=False, sink_frames=4 * self.sink_latents,
                            window_frames=4 * self.window_latents, snapshot=True)

    # -- protocol ---------------------------------------------------------------------------------------
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
            sess = CausalState(session_id=start.session_id, seed=int(start.seed), prompt=start.prompt,
                               start_prompt=start.prompt, anchors_global=tuple(start.anchors))
            self._opened(sess, start)
            self._table.sessions[start.session_id] = sess
            self._table.current = start.session_id

    def _opened(self, sess: CausalState, start: SessionStart) -> None:
        """Subclass hook: a session was just opened."""

    def interrupt(self, session_id: str = "") -> None:
        """Abandon the block being denoised in ``session_id`` (default: the current one) at its
        next step and end that request's stream; nothing of the abandoned block is kept."""
        with self._lock:
            self._stop.interrupt(session_id or self._table.current)

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """Yield the request's blocks (``caps.block_plan``), each made when asked for.

        The session advances block by block; a repeated ``seq`` with the identical request
        regenerates the same frames from the state it started from.

        Raises:
            BackendError: closed, unknown session, a ``seq`` that goes backwards or is reused
                for another request, or the model failed.
        """
        with self._lock:
            self._check_open()
            work = self._table.admit(request, request)
            self._stop.arm(work.session_id)
        return self._blocks(work, request)

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Apply a memory operation to the current session.

        ``snapshot`` / ``restore`` / ``fork`` copy the whole session (KV cache, decoder
        state, prompt); ``reset`` starts it over (same seed: the same frames again);
        ``reset_history`` drops the rolling window (the sinks stay); ``reanchor`` makes
        ``op.anchors`` the current sink: their text joins the conditioning.
        """
        with self._lock:
            self._check_open()
            sess = self._table.target(op)
            if isinstance(sess, MemoryResult):
                return sess
            if op.op == "reset":
                fresh = CausalState(session_id=sess.session_id, seed=sess.seed, prompt=sess.start_prompt,
                                    start_prompt=sess.start_prompt, anchors_global=sess.anchors_global)
                self._opened(fresh, SessionStart(sess.session_id, sess.seed, sess.start_prompt, sess.anchors_global))
                self._table.sessions[sess.session_id] = fresh
                return MemoryResult(ok=True, note="session started over")
            if op.op == "reset_history":
                sess.cache = sess.cache.without("rolling")
                return MemoryResult(ok=True,
                                    note=f"rolling window dropped; {counted(sess.cache.frames, 'sink frame')} kept")
            if op.op == "reanchor":
                return self._reanchor(sess, op.anchors)
            return MemoryResult(ok=False, note=f"unknown memory op {op.op!r}")

    def _reanchor(self, sess: CausalState, anchors: tuple[Anchor, ...]) -> MemoryResult:
        sess.anchors_current = tuple(anchors)
        return MemoryResult(ok=True,
                            note=f"current sink: {counted(len(anchors), 'anchor')}; their text joins the prompt")

    def close(self) -> None:
        """Drop every session and snapshot; later calls raise :class:`BackendError`."""
        with self._lock:
            self._table.clear()
            self._contexts.clear()
            self._closed = True

    # -- conditioning -------------------------------------------------------------------------------------
    def conditioning_text(self, sess: CausalState) -> str:
        """The prompt plus current-sink text not already in it."""
        extra = [a.ref for a in sess.anchors_current if a.kind == "text" and a.ref and a.ref not in sess.prompt]
        return ". ".join([sess.prompt.rstrip(". "), *extra]) if extra else sess.prompt

    def context(self, sess: CausalState) -> CrossContext:
        """Cross-attention keys / values of the session's conditioning, encoded once per text."""
        text = self.conditioning_text(sess)
        with self._lock:
            hit = self._contexts.get(text)
            if hit is not None:
                self._contexts.move_to_end(text)
                return hit
        ctx = self.net.cross_context(self._encoder.encode(text))
        with self._lock:
            self.context_encodes += 1
            self._contexts[text] = ctx
            while len(self._contexts) > CONTEXTS:
                self._contexts.popitem(last=False)
        return ctx

    # -- blocks -------------------------------------------------------------------------------------------
    def _switch(self, sess: CausalState, request: WorldRequest) -> str:
        """Apply the request's prompt switch; returns what has to be recached (``""``: nothing)."""
        mode = request.switch_mode
        if mode is None or not request.prompt:
            return ""
        if request.prompt != sess.prompt:
            sess.switches += 1
        sess.prompt = request.prompt
        if mode == "scene_cut":
            sess.cache = sess.cache.without("rolling", "sink_current")
            sess.shot_latents = 0
            return "scene_cut" if sess.cache.frames else ""
        return "recache" if mode == "recache" and sess.cache.frames else ""

    def _prepare(self, sess: CausalState, request: WorldRequest) -> None:
        """Subclass hook: runs after the prompt switch, before the request's first block."""

    def _addon(self, sess: CausalState, request: WorldRequest, first_frame: int, frames: int,
               ) -> tuple[AddonFactory | None, dict[str, Any]]:
        """Subclass hook: the add-on of a block's passes (the action module), and the
        session ``extra`` entries to set once the block is made."""
        return None, {}

    def _condition(self, sess: CausalState, latent_first: int, n: int) -> torch.Tensor | None:
        """Subclass hook: extra input channels of a block's latent frames."""
        return None

    def _kept(self, sess: CausalState, blk: Block, updates: dict[str, Any]) -> None:
        """Subclass hook: block ``blk`` was made and is kept (an abandoned block never comes here);
        ``updates`` are the ``extra`` entries :meth:`_addon` asked for (a hook may take some out)."""

    def _block_notes(self, sess: CausalState, request: WorldRequest) -> tuple[str, ...]:
        """Subclass hook: notes about inputs not used, per request."""
        return ()

    def _tier(self, sess: CausalState, offset: int) -> FrameTier:
        """The tier of the block's latent frame ``offset``: the session's first frames are the
        global sink, a shot's first frames (after a cut) the current sink, the rest rolling."""
        if sess.latent_frame + offset < self.sink_latents:
            return "sink_global"
        return "sink_current" if sess.shot_latents + offset < self.sink_latents else "rolling"

    def _blocks(self, sess: CausalState, request: WorldRequest) -> Iterator[FrameChunk]:
        caps = self._caps
        plan = caps.block_plan(request.min_frames, request.first_block_frames)
        t_switch = time.perf_counter()
        with self._lock:
            todo = self._switch(sess, request)
        self._prepare(sess, request)
        ctx = self.context(sess)
        encode_ms = (time.perf_counter() - t_switch) * 1000.0
        recache_ms = 0.0
        if todo:
            t0 = time.perf_counter()
            with self._call_lock:
                rebuilt = recache(self.net, sess.cache, ctx, self.latent_frames, self.schedule.context_t)
            with self._lock:
                sess.cache = rebuilt
                sess.recaches += 1
            recache_ms = (time.perf_counter() - t0) * 1000.0
        notes = ignored_inputs(caps, request) + self._notes(request, sess) + self._block_notes(sess, request)
        total = 0
        for b, n_frames in enumerate(plan):
            if self._stop.stopped(sess.session_id):
                return
            t0 = time.perf_counter()
            n_lat = n_frames // 4
            with self._call_lock:
                t1 = time.perf_counter()
                try:
                    made = self._make(sess, request, n_lat, total)
                except Abandoned:
                    return
                except (RuntimeError, ValueError) as exc:
                    raise BackendError(f"{self.name} model failed: {type(exc).__name__}: {exc}",
                                       where=f"session {sess.session_id} seq {request.seq} block {b}") from exc
            x0, cache, frames, decoder, blk, denoise_ms, decode_ms, updates = made
            with self._lock:
                self._kept(sess, blk, updates)
                sess.extra.update(updates)
                first = sess.frame
                sess.cache = cache
                sess.decoder = decoder
                sess.frame += frames.shape[0]
                sess.latent_frame += n_lat
                sess.shot_latents += n_lat
                sess.block += 1
                self.blocks = [*self.blocks[-63:], blk]
                memory = self._stats(sess, blk)
            total += frames.shape[0]
            t2 = time.perf_counter()
            yield FrameChunk(
                seq=request.seq, block=b, last=b == len(plan) - 1, first_frame=first, frames=frames, fps=caps.fps,
                audio=None, audio_rate=caps.audio_rate, ignored=notes, drawn=(), memory=memory,
                probes={"luma": float(frames[:, ::4, ::4].mean() / 255.0)},
                timing=Timing(queue_ms=(t1 - t0) * 1000.0, encode_ms=encode_ms if b == 0 else 0.0,
                              recache_ms=recache_ms if b == 0 else 0.0, denoise_ms=denoise_ms, decode_ms=decode_ms,
                              total_ms=(t2 - t0) * 1000.0 + ((encode_ms + recache_ms) if b == 0 else 0.0)),
            )

    def _make(self, sess: CausalState, request: WorldRequest, n_lat: int, offset: int,
              ) -> tuple[torch.Tensor, KVCache, np.ndarray, DecoderState, Block, float, float, dict[str, Any]]:
        """Denoise, cache and decode one block of ``n_lat`` latent frames (the session is not changed)."""
        t0 = time.perf_counter()
        ctx = self.context(sess)
        cache = sess.cache
        if not self.kv_cache and cache.frames:  # the baseline: the whole history's keys and values, again
            cache = recache(self.net, cache, ctx, self.latent_frames, self.schedule.context_t)
        h, w = self._lat_hw
        shape = (1, self.stream.z_dim, n_lat, h, w)
        seed = block_seed(sess.seed, sess.block)
        gen = torch.Generator(device="cpu").manual_seed(seed)
        cond = self._condition(sess, sess.latent_frame, n_lat)
        addon, updates = self._addon(sess, request, offset, 4 * n_lat)
        x0, k, v, extra = sample_block(self.net, shape, gen, cache, ctx, self.schedule, condition=cond, addon=addon,
                                       should_stop=lambda: self._stop.stopped(sess.session_id))
        tokens = (cache.frames + n_lat) * self.net.tokens_per_frame(h, w)
        tiers = [self._tier(sess, i) for i in range(n_lat)]
        grown = cache.appended(k, v, x0, tiers, extra)
        if self.kv_cache:
            grown = grown.evicted(self.window_latents)
        t1 = time.perf_counter()
        frames, decoder = self.stream.decode(x0, sess.decoder)
        if sess.decoder is None:  # a new stream: its first latent frame is one frame, held for 4
            frames = np.concatenate([np.repeat(frames[:1], 3, axis=0), frames], axis=0)
        t2 = time.perf_counter()
        blk = Block(sess.session_id, request.seq, sess.block, n_lat, cache.frames, tokens,
                    self.conditioning_text(sess), seed)
        return x0, grown, frames, decoder, blk, (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, updates

    def _notes(self, request: WorldRequest, sess: CausalState) -> tuple[str, ...]:
        notes = []
        if request.cue:
            notes.append(f"cue {request.cue}: no reaction control")
        anchors = {a.id: a for a in (*sess.anchors_global, *request.anchors, *sess.anchors_current)}
        for a in anchors.values():
            if a.kind in ("image", "audio"):
                notes.append(f"anchor {a.id}: this model reads text only ({a.kind} anchors unused)")
        if self._encoder.note:
            notes.append(self._encoder.note)
        return tuple(notes)

    def _stats(self, sess: CausalState, blk: Block) -> dict[str, float]:
        c = sess.cache
        return {
            "cache_frames": float(c.frames),
            "cache_tokens": float(c.tokens()),
            "cache_bytes": float(c.nbytes()),
            "tokens_attended": float(blk.tokens_attended),
            "sink_frames": float(4 * sum(t != "rolling" for t in c.tiers)),
            "window_frames": float(4 * self.window_latents),
            "window_used": float(4 * sum(t == "rolling" for t in c.tiers)),
            "frames_total": float(sess.frame),
            "blocks_total": float(sess.block),
            "prompt_switches": float(sess.switches),
            "recaches": float(sess.recaches),
            "context_encodes": float(self.context_encodes),
        }

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError(f"{self.name} backend is closed")
