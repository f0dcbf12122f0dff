"""The bink calls an Ink step makes on every line and choice, made straight on bink's C library.

``bink``'s Python wrappers spend 2-5 µs of Python on each call (a ctypes lookup by name,
fresh out-parameters, an error check) and an external function's arguments cost several
calls more; an Ink choice makes about twenty of them. :class:`StepCalls` makes the same
calls on the library bink loaded (``bink._ffi.LIB``) with reused out-parameters, for the
story bink built. Everything else (loading, saving, variables, other external functions)
goes through bink's own API. The C functions and their signatures are bink's
(``bink/_ffi.py``, bink 0.7); :func:`step_calls` returns :class:`WrappedCalls`, the same
calls through bink's wrappers, when the installed bink does not have them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

#: The C functions :class:`StepCalls` needs (bink 0.7's names).
NEEDED = ("bink_story_can_continue", "bink_story_cont", "bink_story_get_current_tags", "bink_tags_get",
          "bink_tags_free", "bink_story_get_current_choices", "bink_choices_get_text", "bink_choices_get_tags",
          "bink_choices_free", "bink_story_choose_choice_index", "bink_cstring_free", "bink_fun_args_count",
          "bink_fun_args_get", "bink_value_get_kind", "bink_value_get_string", "bink_value_free",
          "bink_bind_external_function")
#: bink's value kind of a string (``bink._ffi.BINK_VALUE_STRING``).
_STRING = 3


class StepCalls:
    """bink's per-step calls on one ``bink.story.Story`` (see the module docstring).

    Raises (every method): ``RuntimeError`` with bink's message when a call fails, as bink does.
    """

    def __init__(self, story: Any, lib: Any, external_type: Any) -> None:
        self._story = story  # kept alive: the pointer below is the story's
        self._ptr = story._story
        self._lib = lib
        self._external_type = external_type
        self._callbacks: list[Any] = []
        self._err = ctypes.c_char_p()
        self._err_ref = ctypes.byref(self._err)
        self._bool = ctypes.c_bool(False)
        self._text = ctypes.c_char_p()
        self._handle = ctypes.c_void_p(None)
        self._length = ctypes.c_size_t(0)
        self._tags = ctypes.c_void_p(None)
        self._tag_count = ctypes.c_size_t(0)

    def _fail(self) -> RuntimeError:
        message = self._err.value.decode("utf-8") if self._err.value else "Blade Ink FFI error"
        if self._err.value:
            self._lib.bink_cstring_free(self._err)
        return RuntimeError(message)

    def _take(self, value: ctypes.c_char_p) -> str:
        raw = value.value
        if not raw:
            return ""
        self._lib.bink_cstring_free(value)
        return raw.decode("utf-8")

    def can_continue(self) -> bool:
        """Whether Ink can continue (``Story.can_continue``)."""
        if self._lib.bink_story_can_continue(self._ptr, ctypes.byref(self._bool), self._err_ref):
            raise self._fail()
        return bool(self._bool.value)

    def cont(self) -> tuple[str, list[str]]:
        """Continue one line: ``(text, its tags)`` (``Story.cont`` and ``get_current_tags``)."""
        lib = self._lib
        if lib.bink_story_cont(self._ptr, ctypes.byref(self._text), self._err_ref):
            raise self._fail()
        text = self._take(self._text)
        if lib.bink_story_get_current_tags(self._ptr, ctypes.byref(self._tags), ctypes.byref(self._tag_count),
                                           self._err_ref):
            raise self._fail()
        return text, self._strings(self._tags, self._tag_count.value)

    def _strings(self, tags: ctypes.c_void_p, count: int) -> list[str]:
        """The tags of a tag list bink returned, which is then freed."""
        out: list[str] = []
        lib = self._lib
        try:
            for i in range(count):
                if lib.bink_tags_get(tags, i, ctypes.byref(self._text), self._err_ref):
                    raise self._fail()
                out.append(self._take(self._text))
        finally:
            lib.bink_tags_free(tags)
        return out

    def choices(self, tags: bool) -> list[tuple[str, list[str]]]:
        """The current choices: ``(text, tags)`` each (tags read only when ``tags``)."""
        lib = self._lib
        if lib.bink_story_get_current_choices(self._ptr, ctypes.byref(self._handle), ctypes.byref(self._length),
                                              self._err_ref):
            raise self._fail()
        handle, out = self._handle.value, []
        try:
            for i in range(self._length.value):
                if lib.bink_choices_get_text(handle, i, ctypes.byref(self._text), self._err_ref):
                    raise self._fail()
                text = self._take(self._text)
                found: list[str] = []
                if tags:
                    if lib.bink_choices_get_tags(handle, i, ctypes.byref(self._tags), ctypes.byref(self._tag_count),
                                                 self._err_ref):
                        raise self._fail()
                    found = self._strings(self._tags, self._tag_count.value)
                out.append((text, found))
        finally:
            lib.bink_choices_free(handle)
        return out

    def choose(self, index: int) -> None:
        """Take the current choice ``index`` (``Story.choose_choice_index``)."""
        if self._lib.bink_story_choose_choice_index(self._ptr, index, self._err_ref):
            raise self._fail()

    def bind_text_function(self, name: str, fn: Callable[[str], None]) -> None:
        """Bind Ink's external ``name(text)`` to ``fn(text)``; it returns nothing to Ink.

        Replaces a binding of ``name`` made through bink. ``fn`` must not raise (an
        exception cannot cross the C callback; it is printed and ignored).
        """
        lib, err = self._lib, ctypes.c_char_p()
        count, value, text = ctypes.c_size_t(0), ctypes.c_void_p(None), ctypes.c_char_p()
        kind = ctypes.c_int(0)

        def callback(_name: bytes, args: int, _data: int) -> None:
            arg = ""
            if not lib.bink_fun_args_count(args, ctypes.byref(count), ctypes.byref(err)) and count.value:
                if not lib.bink_fun_args_get(args, 0, ctypes.byref(value), ctypes.byref(err)):
                    if not lib.bink_value_get_kind(value, ctypes.byref(kind), ctypes.byref(err)) \
                            and kind.value == _STRING \
                            and not lib.bink_value_get_string(value, ctypes.byref(text), ctypes.byref(err)):
                        arg = self._take(text)
                    lib.bink_value_free(value)
            fn(arg)

        c_callback = self._external_type(callback)
        self._callbacks.append(c_callback)
        if lib.bink_bind_external_function(self._ptr, name.encode(), c_callback, None, ctypes.byref(err)):
            raise RuntimeError(err.value.decode("utf-8") if err.value else f"cannot bind {name}")


class WrappedCalls:
    """The same calls as :class:`StepCalls` through bink's own Python API (any bink version)."""

    def __init__(self, story: Any) -> None:
        self._story = story

    def can_continue(self) -> bool:
        return bool(self._story.can_continue())

    def cont(self) -> tuple[str, list[str]]:
        text = str(self._story.cont())
        return text, list(self._story.get_current_tags())

    def choices(self, tags: bool) -> list[tuple[str, list[str]]]:
        found = self._story.get_current_choices()
        return [(str(found[i]), list(found.get_tags(i)) if tags else []) for i in range(len(found))]

    def choose(self, index: int) -> None:
        self._story.choose_choice_index(index)

    def bind_text_function(self, name: str, fn: Callable[[str], None]) -> None:
        self._story.bind_external_function(name, lambda _name, *args: fn(str(args[0]) if args else ""))


def step_calls(story: Any) -> StepCalls | WrappedCalls:
    """:class:`StepCalls` for a ``bink.story.Story``, or :class:`WrappedCalls` if this bink lacks what it needs."""
    try:
        from bink import _ffi
        from bink import story as bink_story
    except (ImportError, RuntimeError, OSError):
        return WrappedCalls(story)
    lib = getattr(_ffi, "LIB", None)
    external_type = getattr(bink_story, "_EXTERNAL_FUNCTION", None)
    if lib is None or external_type is None or not isinstance(getattr(story, "_story", None), ctypes.c_void_p):
        return WrappedCalls(story)
    if not all(hasattr(lib, name) for name in NEEDED):
        return WrappedCalls(story)
    return StepCalls(story, lib, external_type)


__all__ = ["NEEDED", "StepCalls", "WrappedCalls", "step_calls"]
