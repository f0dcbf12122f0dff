"""The ``action`` backend: a Matrix-Game 2.0 style action-conditioned world model.

The same block-causal loop and KV cache as :mod:`game.world.backends.causal`, with
Matrix-Game 2.0's conditioning (SkyworkAI/Matrix-Game, ``Matrix-Game-2``; MIT):

* **no text**: the prompt is reported as ignored; the cross-attention reads the
  *start image*'s features through Wan's image embedder (Matrix-Game's
  ``visual_context``, CLIP ViT-H features, 257 tokens of 1280). Without a CLIP
  encoder (the tests' tiny models) :func:`pooled_image_features` stands in, and
  every chunk says so in ``ignored``;
* **image-conditioned start**: at the session's start, at a ``scene_cut`` and at a
  ``reanchor`` with an image, the start image is the first frame the procedural
  world draws for the request's scene (:class:`ProceduralBackend`), or the anchor's
  image; it is VAE-encoded and given to every latent frame of the shot as extra
  input channels (Matrix-Game's ``cond_concat``: a 4-channel mask, 1 on the shot's
  first latent frame, then the image latents on that frame and zeros after; 16 + 4 +
  16 = 36 input channels, as Wan's image-to-video models);
* **keyboard and mouse**: each :class:`ActionFrame`'s keys (``w`` forward, ``s`` back,
  ``a`` left, ``d`` right, multi-hot in that order: the universal model's 4 keys) and
  mouse ``(dx, dy)`` (to Matrix-Game's ``(pitch, yaw) = (-dy, dx) * 0.1``, its
  ``CAM_VALUE``) go per frame into the action module
  (:mod:`game.models.action_module`) of the first layers; each latent frame
  sees the last ``windows_size * 4`` frames of actions (the session keeps them, so a
  snapshot has them too). The tensors of the last block made are kept in
  :attr:`ActionBackend.conditioning`, and the keys and mouse of every block made in
  :attr:`ActionBackend.received` (a block abandoned by ``interrupt()`` counts for neither);
* camera poses are not read (the model moves its own camera from the keys and mouse).

Defaults follow Matrix-Game 2.0's base model: 640 x 352, 3 latent frames a block,
a window of 6 latent frames (its ``local_attn_size``), 3 steps.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from game.errors import BackendError, WorldloomError
from game.models.action_module import ActionModules, ActionPass
from game.models.causal_loader import load_causal_model
from game.models.causal_model import CrossContext, KVCache
from game.world.backends.causal import Block, CausalBackend, CausalState
from game.world.backends.causal_sampler import AddonFactory
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import Anchor, Capabilities, MemoryResult, SessionStart, WorldRequest

#: The universal model's keys, in the order of its keyboard vector (forward, back, left, right).
KEYS = ("w", "s", "a", "d")
#: Matrix-Game 2.0's camera step per frame for a full-speed mouse turn (``CAM_VALUE``).
MOUSE_SCALE = 0.1
#: Tokens of the stand-in image features (CLIP ViT-H/14 at 224 px: 16 x 16 patches + 1).
IMAGE_TOKENS = 257


def pooled_image_features(rgb: np.ndarray, dim: int) -> torch.Tensor:
    """Offline stand-in for CLIP image features: ``(1, 257, dim)`` float32.

    The image is average-pooled to 16 x 16 cells; each cell's mean RGB (and, as
    token 0, the whole image's) goes through a fixed random ``3 -> dim`` projection
    (seeded, the same on every machine). Not a vision model: it tells images apart
    so that a start image really changes the conditioning.
    """
    x = torch.from_numpy(np.array(rgb, dtype=np.uint8)).float().div(255.0).permute(2, 0, 1)[None]
    cells = F.adaptive_avg_pool2d(x, 16).flatten(2).transpose(1, 2)  # (1, 256, 3)
    tokens = torch.cat([x.mean(dim=(2, 3))[:, None], cells], dim=1) - 0.5
    gen = torch.Generator(device="cpu").manual_seed(20250813)
    proj = torch.randn(3, dim, generator=gen)
    return tokens @ proj


class ActionBackend(CausalBackend):
    """Matrix-Game 2.0 style keyboard + mouse world model (see the module doc).

    Args:
        model: a folder with ``transformer/``, ``vae/`` and ``action/`` (diffusers format);
            default ``$WORLDLOOM_ACTION_MODEL``.
        checkpoint: the transformer's and action modules' weights (``action.`` names) from a
            ``.safetensors`` file or a shard folder / index (see :mod:`game.models.causal_loader`).
        transformer, vae, action: already built parts (instead of ``model``).
        image_encoder: ``(H, W, 3) uint8 -> (1, L, image_dim)`` image features (CLIP);
            default the offline :func:`pooled_image_features`.
        Others as :class:`CausalBackend` (defaults: 640 x 352, 25 frames/s, 3 steps,
        sink 3 and window 6 latent frames).
    """

    name = "action"

    def __init__(self, model: str | Path | None = None, *, checkpoint: str | Path | None = None,
                 transformer: Any = None, vae: Any = None, action: Any = None, width: int = 640,
                 height: int = 352, fps: float = 25.0, latent_frames: int = 3,
                 timesteps: tuple[float, ...] = (1000.0, 666.0, 333.0), shift: float = 5.0, sink_latents: int = 3,
                 window_latents: int = 6, kv_cache: bool = True, image_encoder: Any = None,
                 device: str = "auto", dtype: str = "auto") -> None:
        if transformer is None or vae is None or action is None:
            model = model or os.environ.get("WORLDLOOM_ACTION_MODEL") or None
            if model is None:
                raise BackendError("the action backend needs a model",
                                   hint="--model PATH (a folder with transformer/, vae/ and action/)")
            try:
                comps = load_causal_model(model, checkpoint=checkpoint, device=device, dtype=dtype)
            except WorldloomError as exc:
                raise BackendError(exc.why, exc.where, exc.hint) from exc
            if comps.action is None:
                raise BackendError("the model folder has no action/ modules (a text model?)", where=str(model),
                                   hint="use --backend causal for a text model")
            transformer, vae, action = comps.transformer, comps.vae, comps.action
        self.actions: ActionModules = action
        self.image_encoder = image_encoder
        self._image_dim = int(transformer.config.image_dim or 0)
        if not self._image_dim or int(transformer.config.in_channels) != 36:
            raise BackendError("the action backend needs an image-conditioned Wan transformer "
                               f"(in_channels 36 and image_dim set; got {transformer.config.in_channels}, "
                               f"{transformer.config.image_dim})")
        super().__init__(transformer=transformer, vae=vae, width=width, height=height, fps=fps,
                         latent_frames=latent_frames, timesteps=timesteps, shift=shift, sink_latents=sink_latents,
                         window_latents=window_latents, kv_cache=kv_cache, device=device, dtype=dtype)
        self._painter = ProceduralBackend(width=width, height=height, fps=fps, frames_per_block=1)
        self._starts = 0
        #: The conditioning tensors of the last block: ``keyboard`` ``(T, 4)``, ``mouse`` ``(T, 2)``
        #: per frame, ``keyboard_window`` / ``mouse_window`` as given to the action layers.
        self.conditioning: dict[str, torch.Tensor] = {}
        #: Frames each key was held in, over every block made.
        self.keys_seen: Counter[str] = Counter()
        #: What the action layers were given, per block made (the last 256): ``(seq, block, keys)``
        #: with ``keys`` the held keys of each frame (``""``: none), in :data:`KEYS` order.
        self.received: list[tuple[int, int, tuple[str, ...]]] = []
        self.info["image"] = "custom" if image_encoder is not None else "pooled"

    def _capabilities(self, width: int, height: int, fps: float) -> Capabilities:
        return Capabilities(backend=self.name, frames_per_block=4 * self.latent_frames, fps=fps, width=width,
                            height=height, text=False, switch_modes=("scene_cut", "plain"), actions=KEYS, mouse=True,
                            camera=(), min_block_frames=4, ref_images="first_frame", structured_scene=False,
                            sink_frames=4 * self.sink_latents, window_frames=4 * self.window_latents, snapshot=True)

    # -- the start image ----------------------------------------------------------------------------------
    def _opened(self, sess: CausalState, start: SessionStart) -> None:
        sess.extra["start.need"] = True
        sess.extra["start.prompt"] = start.prompt

    def _switch(self, sess: CausalState, request: WorldRequest) -> str:
        if request.switch_mode == "scene_cut":
            sess.cache = sess.cache.without("rolling", "sink_current")
            sess.shot_latents = 0
            sess.extra["start.need"] = True
            sess.switches += 1
        return ""

    def _prepare(self, sess: CausalState, request: WorldRequest) -> None:
        if not sess.extra.get("start.need"):
            return
        image = sess.extra.pop("start.image", None)
        source = sess.extra.pop("start.source", "")
        if image is None:
            image, source = self.scene_frame(request), f"procedural:{request.scene.location or 'scene'}"
        self._set_start(sess, image, source)

    def scene_frame(self, request: WorldRequest) -> np.ndarray:
        """The first frame the procedural world draws for ``request``'s scene: ``(H, W, 3)`` uint8."""
        self._starts += 1
        sid = f"start#{self._starts}"
        self._painter.start(SessionStart(sid, 0, request.prompt))
        first = replace(request, session_id=sid, seq=1, min_frames=1, first_block_frames=0)
        chunk = next(iter(self._painter.generate(first)))
        return np.ascontiguousarray(chunk.frames[0])

    def _set_start(self, sess: CausalState, image: np.ndarray, source: str) -> None:
        z = self.stream.encode_image(image).to(self.net.device)
        feats = (self.image_encoder(image) if self.image_encoder is not None
                 else pooled_image_features(image, self._image_dim)).to(self.net.device, self.net.dtype)
        sess.extra.update({"start.latent": z, "start.features": feats, "start.source": source, "start.need": False,
                           "start.shot": sess.latent_frame})
        sess.extra.pop("context", None)

    def _reanchor(self, sess: CausalState, anchors: tuple[Anchor, ...]) -> MemoryResult:
        sess.anchors_current = tuple(anchors)
        images = [a for a in anchors if a.kind == "image"]
        if not images:
            return MemoryResult(ok=True, note="current sink: no image; the start image stays")
        from PIL import Image, ImageOps

        try:
            with Image.open(images[-1].ref) as im:
                fitted = ImageOps.fit(im.convert("RGB"), (self._caps.width, self._caps.height))
        except (OSError, ValueError) as exc:
            return MemoryResult(ok=False, note=f"anchor {images[-1].id}: unreadable image ({type(exc).__name__})")
        sess.cache = sess.cache.without("rolling", "sink_current")
        sess.shot_latents = 0
        sess.extra.update({"start.need": True, "start.image": np.asarray(fitted, dtype=np.uint8),
                           "start.source": images[-1].id})
        return MemoryResult(ok=True, note=f"current sink {images[-1].id}: the next block starts from it")

    # -- conditioning -------------------------------------------------------------------------------------
    def context(self, sess: CausalState) -> CrossContext:
        """Cross-attention keys / values of the start image's features (encoded once per start image)."""
        hit = sess.extra.get("context")
        if isinstance(hit, CrossContext):
            return hit
        feats = sess.extra.get("start.features")
        if feats is None:
            raise BackendError("the action backend has no start image yet", where=f"session {sess.session_id}")
        ctx = self.net.cross_context(feats, image=True)
        self.context_encodes += 1
        sess.extra["context"] = ctx
        return ctx

    def _condition(self, sess: CausalState, latent_first: int, n: int) -> torch.Tensor | None:
        z: torch.Tensor = sess.extra["start.latent"]
        shot0 = int(sess.extra.get("start.shot", 0))
        _, c, _, h, w = z.shape
        mask = torch.zeros(1, 4, n, h, w, device=z.device)
        lat = torch.zeros(1, c, n, h, w, device=z.device)
        if latent_first <= shot0 < latent_first + n:
            mask[:, :, shot0 - latent_first] = 1.0
            lat[:, :, shot0 - latent_first] = z[:, :, 0]
        return torch.cat([mask, lat], dim=1)

    def action_tensors(self, request: WorldRequest, offset: int, frames: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-frame keyboard ``(frames, 4)`` (multi-hot, :data:`KEYS` order) and mouse ``(frames, 2)``
        (``(-dy, dx) * MOUSE_SCALE``) for frames ``offset ..`` of ``request`` (the last frame held)."""
        acts = request.action_frames
        kb = torch.zeros(frames, len(KEYS))
        ms = torch.zeros(frames, 2)
        for i in range(frames):
            if not acts:
                break
            a = acts[min(offset + i, len(acts) - 1)]
            for key in a.keys:
                if key in KEYS:
                    kb[i, KEYS.index(key)] = 1.0
            ms[i, 0], ms[i, 1] = -a.mouse[1] * MOUSE_SCALE, a.mouse[0] * MOUSE_SCALE
        return kb, ms

    def _addon(self, sess: CausalState, request: WorldRequest, first_frame: int, frames: int,
               ) -> tuple[AddonFactory | None, dict[str, Any]]:
        kb, ms = self.action_tensors(request, first_frame, frames)
        w4 = self.actions.window_frames
        hist_kb: torch.Tensor = sess.extra.get("actions.keyboard", kb[:1].expand(w4, -1))
        hist_ms: torch.Tensor = sess.extra.get("actions.mouse", ms[:1].expand(w4, -1))
        all_kb, all_ms = torch.cat([hist_kb, kb]), torch.cat([hist_ms, ms])
        n_lat = frames // 4
        starts = [w4 + 4 * (j + 1) for j in range(n_lat)]
        kbw = torch.stack([all_kb[e - w4:e] for e in starts])[None]  # (1, F, W4, 4)
        msw = torch.stack([all_ms[e - w4:e] for e in starts])[None]
        given = {"keyboard": kb, "mouse": ms, "keyboard_window": kbw, "mouse_window": msw}
        history: dict[str, Any] = {"actions.keyboard": all_kb[-w4:], "actions.mouse": all_ms[-w4:],
                                   "actions.given": (request.seq, given)}
        dev, dt = self.net.device, self.net.dtype

        def make(write: bool, cache: KVCache) -> ActionPass:
            return ActionPass(self.actions, cache, kbw.to(dev, dt), msw.to(dev, dt), write)

        return make, history

    def _kept(self, sess: CausalState, blk: Block, updates: dict[str, Any]) -> None:
        seq, given = updates.pop("actions.given")
        kb = given["keyboard"]
        self.conditioning = given
        self.keys_seen.update({k: int(kb[:, j].sum()) for j, k in enumerate(KEYS) if kb[:, j].any()})
        keys = tuple("".join(k for j, k in enumerate(KEYS) if row[j]) for row in kb.tolist())
        self.received = [*self.received[-255:], (seq, blk.block, keys)]

    def _block_notes(self, sess: CausalState, request: WorldRequest) -> tuple[str, ...]:
        notes = []
        if self.image_encoder is None:
            notes.append("image features: no CLIP image encoder loaded; pooled-pixel features stand in")
        source = str(sess.extra.get("start.source", ""))
        if source and sess.shot_latents == 0:
            notes.append(f"start image: {source}")
        return tuple(notes)

    def _notes(self, request: WorldRequest, sess: CausalState) -> tuple[str, ...]:
        notes = []
        if request.cue:
            notes.append(f"cue {request.cue}: no reaction control")
        if request.references:
            notes.append("references: this model takes an image only as a shot's start (scene cut, re-anchor)")
        return tuple(notes)
