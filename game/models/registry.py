"""Load every dialogue model once, with progress shown.

A :class:`ModelSpec` names a model as plain JSON-able data, so it can be written in
a settings file, given on the command line (``--model transformers``,
``--model openai:gpt-4o-mini``, ``--model transformers:/models/my-llm``) and sent to
the worker process (:mod:`game.models.worker`) without pickling anything of ours.
A :class:`ModelRegistry` builds each model once and hands out the same object
afterwards; :meth:`ModelRegistry.load_all` shows a ``rich`` progress bar.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from game.models.embedded import PACKAGED, packaged
from game.models.llm import DialogueModel, ModelError

Kind = Literal["transformers", "openai", "scripted"]
KINDS: tuple[Kind, ...] = ("transformers", "openai", "scripted")

#: ``progress(model name, stage, fraction in [0, 1])``.
Progress = Callable[[str, str, float], None]


@dataclass(frozen=True)
class ModelSpec:
    """Which dialogue model to load, as JSON-able data.

    Attributes:
        kind: ``transformers`` (embedded), ``openai`` (an OpenAI-compatible endpoint)
            or ``scripted`` (authored answers).
        source: transformers: a model folder or hub id (``""``: the embedded
            SmolLM2); openai: the base URL (``""``: ``$WORLDLOOM_OPENAI_BASE_URL``).
        gguf_file: transformers: a GGUF file name inside ``source``.
        model: openai: the model name (``""``: ``$WORLDLOOM_OPENAI_MODEL``).
        options: more settings, JSON-able: transformers ``reuse_prefix``,
            ``repetition_penalty``, ``top_p``, ``quantize`` (the linear layers' weights:
            ``"fp16"`` by default, ``"float32"``, ``"int8"``, ``"int8-head"``;
            :data:`game.models.llm_transformers.QUANTIZE`); openai ``context_size``, ``timeout_s``;
            scripted ``answers`` (``[[pattern, answer], ...]``) and ``default``.
    """

    kind: Kind = "transformers"
    source: str = ""
    gguf_file: str = ""
    model: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The spec as a JSON-able dict."""
        return {"kind": self.kind, "source": self.source, "gguf_file": self.gguf_file, "model": self.model,
                "options": dict(self.options)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelSpec:
        """Read a spec written by :meth:`to_json`.

        Raises:
            ModelError: unknown kind or fields of the wrong type.
        """
        kind = data.get("kind", "transformers")
        if kind not in KINDS:
            raise ModelError(f"unknown dialogue model kind {kind!r}", hint="one of " + ", ".join(KINDS))
        options = data.get("options", {})
        if not isinstance(options, Mapping):
            raise ModelError("model options must be a mapping")
        texts = {k: data.get(k, "") for k in ("source", "gguf_file", "model")}
        for k, v in texts.items():
            if not isinstance(v, str):
                raise ModelError(f"model {k} must be text")
        json.dumps(dict(options))  # raises TypeError early for non-JSON values
        return cls(kind, texts["source"], texts["gguf_file"], texts["model"], dict(options))


#: Options a ``transformers`` spec string may set after ``?`` (``name=value``, joined by ``&``) -> their type.
TRANSFORMERS_OPTIONS: dict[str, type] = {"quantize": str, "top_p": float, "repetition_penalty": float,
                                         "reuse_prefix": bool}


def _spec_options(text: str, where: str) -> dict[str, Any]:
    """``quantize=int8&top_p=0.8`` -> ``{"quantize": "int8", "top_p": 0.8}`` (:data:`TRANSFORMERS_OPTIONS`).

    Raises:
        ModelError: an unknown option, no ``=``, or a value of the wrong type.
    """
    options: dict[str, Any] = {}
    for part in filter(None, text.split("&")):
        key, eq, value = part.partition("=")
        kind = TRANSFORMERS_OPTIONS.get(key.strip())
        if kind is None or not eq:
            raise ModelError(f"unknown model option {part!r}", where=where,
                             hint="name=value, one of: " + ", ".join(TRANSFORMERS_OPTIONS))
        value = value.strip()
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ModelError(f"model option {key} must be true or false, not {value!r}", where=where)
            options[key.strip()] = value.lower() in ("true", "1")
            continue
        try:
            options[key.strip()] = kind(value)
        except ValueError as exc:
            raise ModelError(f"model option {key} must be a {kind.__name__}, not {value!r}", where=where) from exc
    return options


def parse_model_spec(text: str) -> ModelSpec:
    """A spec from a short string: ``transformers``, ``transformers:<folder or hub id>``,
    ``transformers:<folder>#<file.gguf>``, ``transformers:gemma3-270m`` (a packaged model,
    :data:`game.models.embedded.PACKAGED`), ``openai``, ``openai:<model>``, ``scripted``.
    A ``transformers`` spec may end with options after ``?``: ``transformers:?quantize=int8``
    (the embedded model, int8), ``transformers:/m/x#f.gguf?quantize=int8-head&top_p=0.8``
    (:data:`TRANSFORMERS_OPTIONS`).

    Raises:
        ModelError: an unknown kind, or an unknown or malformed option.
    """
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower() or "transformers"
    if kind not in KINDS:
        raise ModelError(f"unknown dialogue model {text!r}", hint="transformers[:path], openai[:model] or scripted")
    if kind == "transformers":
        rest, _, query = rest.partition("?")
        source, _, gguf = rest.partition("#")
        return ModelSpec("transformers", source=source, gguf_file=gguf, options=_spec_options(query, text))
    if kind == "openai":
        return ModelSpec("openai", model=rest)
    return ModelSpec("scripted")


def build_model(spec: ModelSpec, progress: Callable[[str, float], None] | None = None) -> DialogueModel:
    """Build the model a spec names (in this process).

    Args:
        spec: what to build.
        progress: ``progress(stage, fraction)`` while loading.

    Raises:
        ModelError: it cannot be built (the message names the source).
    """
    opts = dict(spec.options)
    if spec.kind == "scripted":
        from game.models.llm_scripted import ScriptedDialogueModel

        return ScriptedDialogueModel.from_options(opts)
    if spec.kind == "openai":
        from game.models.llm_openai import OpenAIDialogueModel

        return OpenAIDialogueModel(model=spec.model or None, base_url=spec.source or None,
                                   context_size=int(opts.get("context_size", 8192)),
                                   timeout_s=float(opts.get("timeout_s", 60.0)))
    from game.models.llm_transformers import DEFAULT_QUANTIZE, TransformersDialogueModel

    source, gguf = spec.source or None, spec.gguf_file or None
    if source in PACKAGED and not gguf:
        folder, gguf = packaged(source)
        opts.setdefault("name", spec.source)
        source = str(folder)
    return TransformersDialogueModel(source, gguf,
                                     reuse_prefix=bool(opts.get("reuse_prefix", True)),
                                     repetition_penalty=float(opts.get("repetition_penalty", 1.15)),
                                     top_p=float(opts.get("top_p", 0.9)), name=str(opts.get("name", "")),
                                     progress=progress, quantize=str(opts.get("quantize", DEFAULT_QUANTIZE)))


class ModelRegistry:
    """Builds each named model once and hands out the same object afterwards.

    Args:
        progress: ``progress(name, stage, fraction)`` for every loading step.
    """

    def __init__(self, progress: Progress | None = None) -> None:
        self._models: dict[str, DialogueModel] = {}
        self._specs: dict[str, ModelSpec] = {}
        self._lock = threading.Lock()
        self._progress = progress
        #: name -> seconds its load took.
        self.load_seconds: dict[str, float] = {}

    def load(self, name: str, spec: ModelSpec) -> DialogueModel:
        """The model ``name``, built from ``spec`` on first use.

        Raises:
            ModelError: it cannot be built, or ``name`` was loaded before with another spec.
        """
        with self._lock:
            if name in self._models:
                if self._specs[name] != spec:
                    raise ModelError(f"model {name!r} is already loaded with another spec")
                return self._models[name]
            report = self._progress
            t0 = time.perf_counter()
            if report is not None:
                report(name, "starting", 0.0)
            model = build_model(spec, (lambda stage, f: report(name, stage, f)) if report else None)
            if report is not None:
                report(name, "ready", 1.0)
            self.load_seconds[name] = time.perf_counter() - t0
            self._models[name] = model
            self._specs[name] = spec
            return model

    def get(self, name: str) -> DialogueModel:
        """A model loaded before.

        Raises:
            ModelError: no model of that name is loaded.
        """
        with self._lock:
            model = self._models.get(name)
        if model is None:
            raise ModelError(f"no dialogue model named {name!r} is loaded", hint="loaded: " + ", ".join(self.names))
        return model

    @property
    def names(self) -> list[str]:
        """Names of the loaded models."""
        return list(self._models)

    def load_all(self, specs: Mapping[str, ModelSpec], show_progress: bool = True) -> dict[str, DialogueModel]:
        """Load every spec, with a ``rich`` progress bar (one line per model) when ``show_progress``.

        Raises:
            ModelError: the first model that cannot be built.
        """
        if not show_progress:
            return {name: self.load(name, spec) for name, spec in specs.items()}
        with ProgressDisplay(list(specs)) as display:
            outer = self._progress

            def both(name: str, stage: str, fraction: float) -> None:
                display(name, stage, fraction)
                if outer is not None:
                    outer(name, stage, fraction)

            self._progress = both
            try:
                return {name: self.load(name, spec) for name, spec in specs.items()}
            finally:
                self._progress = outer


class ProgressDisplay:
    """A ``rich`` progress bar with one task per model, fed by ``display(name, stage, fraction)``.

    Use as a context manager; writes to stderr, and does nothing on a non-terminal
    besides one line per stage.
    """

    def __init__(self, names: list[str]) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._console = Console(stderr=True)
        self._bar = Progress(TextColumn("[bold]{task.fields[model]}"), BarColumn(), TextColumn("{task.description}"),
                             TimeElapsedColumn(), console=self._console, transient=False)
        self._tasks = {n: self._bar.add_task("waiting", total=1.0, model=n) for n in names}
        self._last: dict[str, str] = {}

    def __call__(self, name: str, stage: str, fraction: float) -> None:
        task = self._tasks.get(name)
        if task is None:
            task = self._tasks[name] = self._bar.add_task(stage, total=1.0, model=name)
        self._bar.update(task, description=stage, completed=max(0.0, min(1.0, fraction)))
        if not self._console.is_terminal and self._last.get(name) != stage:
            self._console.print(f"{name}: {stage}")
        self._last[name] = stage

    def __enter__(self) -> ProgressDisplay:
        if self._console.is_terminal:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._console.is_terminal:
            self._bar.stop()
