"""The bink calls an Ink step makes on every line and choice, made straight on bink's C library.

``bink``'s Python wrappers spend 2-5 µs of Python on each call (a ctypes lookup by name,
fresh out-parameters, an error check) and an external function's arguments cost several
calls more; an Ink choice makes about twenty of them. :class:`StepCalls` makes the same
calls on the library bink loaded (``bink._ffi.LIB``) with the C functions looked up once and
the out-parameters made once, for the story bink built. Everything else (loading, saving,
variables, other external functions) goes through bink's own API.

The C functions and their signatures are bink 0.7's (``bink/_ffi.py``, ``bink/story.py``),
the version the ``ink`` extra pins (``bink>=0.7.1,<0.8``); there is no second path through
bink's wrappers. :func:`step_calls` raises :class:`~game.errors.StoryError` naming what is
missing when the installed bink does not have them, and ``tests/story/test_bink_calls.py``
holds every call to what bink's own API answers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from game.errors import StoryError

#: The C functions :class:`StepCalls` needs (bink 0.7's names).
NEEDED = ("bink_story_can_continue", "bink_story_cont", "bink_story_get_current_tags", "bink_tags_get",
          "bink_tags_free", "bink_story_get_current_choices", "bink_choices_get_text", "bink_choices_get_tags",
          "bink_choices_free", "bink_story_choose_choice_index", "bink_cstring_free", "bink_fun_args_count",
          "bink_fun_args_get", "bink_value_get_kind", "bink_value_get_string", "bink_value_free",
          "bink_bind_external_function")
#: bink's value kind of a string (``bink._ffi.BINK_VALUE_STRING``).
_STRING = 3

#: A line of Ink output or a choice: its text and its tags.
Tagged = tuple[str, tuple[str, ...]]


class StepCalls:
    """bink's per-step calls on one ``bink.story.Story`` (see the module docstring).

    Raises (every method): ``RuntimeError`` with bink's message when a call fails, as bink does.
    """

    def __init__(self, story: Any, lib: Any, external_type: Any) -> None:
        byref = ctypes.byref
        self._story = story  # kept alive: the pointer below is the story's
        self._ptr = story._story
        self._lib = lib
        self._external_type = external_type
        self._callbacks: list[Any] = []
        self._err = ctypes.c_char_p()
        self._err_ref = byref(self._err)
        self._bool = ctypes.c_bool(False)
        self._bool_ref = byref(self._bool)
        self._text = ctypes.c_char_p()
        self._text_ref = byref(self._text)
        self._handle = ctypes.c_void_p(None)
        self._handle_ref = byref(self._handle)
        self._length = ctypes.c_size_t(0)
        self._length_ref = byref(self._length)
        self._tags = ctypes.c_void_p(None)
        self._tags_ref = byref(self._tags)
        self._tag_count = ctypes.c_size_t(0)
        self._tag_count_ref = byref(self._tag_count)
        self._can_continue = lib.bink_story_can_continue
        self._cont = lib.bink_story_cont
        self._current_tags = lib.bink_story_get_current_tags
        self._tags_get = lib.bink_tags_get
        self._tags_free = lib.bink_tags_free
        self._current_choices = lib.bink_story_get_current_choices
        self._choice_text = lib.bink_choices_get_text
        self._choice_tags = lib.bink_choices_get_tags
        self._choices_free = lib.bink_choices_free
        self._choose = lib.bink_story_choose_choice_index
        self._free = lib.bink_cstring_free

    def _fail(self) -> RuntimeError:
        message = self._err.value.decode("utf-8") if self._err.value else "Blade Ink FFI error"
        if self._err.value:
            self._free(self._err)
        return RuntimeError(message)

    def _take(self) -> str:
        """The C string bink wrote into the text out-parameter, which is then freed."""
        raw = self._text.value
        if raw is None:
            return ""
        self._free(self._text)
        return raw.decode("utf-8")

    def can_continue(self) -> bool:
        """Whether Ink can continue (``Story.can_continue``)."""
        if self._can_continue(self._ptr, self._bool_ref, self._err_ref):
            raise self._fail()
        return self._bool.value

    def cont(self) -> Tagged:
        """Continue one line: ``(text, its tags)`` (``Story.cont`` and ``get_current_tags``)."""
        if self._cont(self._ptr, self._text_ref, self._err_ref):
            raise self._fail()
        text = self._take()
        if self._current_tags(self._ptr, self._tags_ref, self._tag_count_ref, self._err_ref):
            raise self._fail()
        return text, self._strings()

    def _strings(self) -> tuple[str, ...]:
        """The tags of the tag list bink wrote into the tags out-parameter, which is then freed."""
        tags, count = self._tags.value, self._tag_count.value
        try:
            if not count:
                return ()
            out = []
            for i in range(count):
                if self._tags_get(tags, i, self._text_ref, self._err_ref):
                    raise self._fail()
                out.append(self._take())
            return tuple(out)
        finally:
            self._tags_free(tags)

    def choices(self, tags: bool) -> list[Tagged]:
        """The current choices: ``(text, tags)`` each (tags read only when ``tags``)."""
        if self._current_choices(self._ptr, self._handle_ref, self._length_ref, self._err_ref):
            raise self._fail()
        handle, out = self._handle.value, []
        try:
            for i in range(self._length.value):
                if self._choice_text(handle, i, self._text_ref, self._err_ref):
                    raise self._fail()
                text = self._take()
                if tags:
                    if self._choice_tags(handle, i, self._tags_ref, self._tag_count_ref, self._err_ref):
                        raise self._fail()
                    out.append((text, self._strings()))
                else:
                    out.append((text, ()))
        finally:
            self._choices_free(handle)
        return out

    def choose(self, index: int) -> None:
        """Take the current choice ``index`` (``Story.choose_choice_index``)."""
        if self._choose(self._ptr, index, self._err_ref):
            raise self._fail()

    def bind_text_function(self, name: str, fn: Callable[[str], None]) -> None:
        """Bind Ink's external ``name(text)`` to ``fn(text)``; it returns nothing to Ink.

        ``fn`` gets ``""`` when the first argument is missing or not a string. Replaces a
        binding of ``name`` made through bink. ``fn`` must not raise (an exception cannot
        cross the C callback; it is printed and ignored).
        """
        lib, err = self._lib, ctypes.c_char_p()
        count, value, text = ctypes.c_size_t(0), ctypes.c_void_p(None), ctypes.c_char_p()
        kind = ctypes.c_int(0)
        err_ref, count_ref, value_ref, kind_ref, text_ref = (ctypes.byref(x) for x in (err, count, value, kind, text))
        args_count, args_get, get_kind = lib.bink_fun_args_count, lib.bink_fun_args_get, lib.bink_value_get_kind
        get_string, value_free, free = lib.bink_value_get_string, lib.bink_value_free, self._free

        def callback(_name: bytes, args: int, _data: int) -> None:
            arg = ""
            if not args_count(args, count_ref, err_ref) and count.value and not args_get(args, 0, value_ref, err_ref):
                if not get_kind(value, kind_ref, err_ref) and kind.value == _STRING \
                        and not get_string(value, text_ref, err_ref):
                    raw = text.value
                    if raw is not None:
                        free(text)
                        arg = raw.decode("utf-8")
                value_free(value)
            fn(arg)

        c_callback = self._external_type(callback)
        self._callbacks.append(c_callback)
        if lib.bink_bind_external_function(self._ptr, name.encode(), c_callback, None, err_ref):
            raise RuntimeError(err.value.decode("utf-8") if err.value else f"cannot bind {name}")


def step_calls(story: Any) -> StepCalls:
    """:class:`StepCalls` for a ``bink.story.Story``.

    Raises:
        StoryError: the installed bink is not the one the ``ink`` extra pins (its C library or
            its story lacks what :class:`StepCalls` calls; the message names what is missing).
    """
    from bink import _ffi
    from bink import story as bink_story

    lib = getattr(_ffi, "LIB", None)
    external_type = getattr(bink_story, "_EXTERNAL_FUNCTION", None)
    missing = [name for name in NEEDED if lib is None or not hasattr(lib, name)]
    if external_type is None:
        missing.append("bink.story._EXTERNAL_FUNCTION")
    if not isinstance(getattr(story, "_story", None), ctypes.c_void_p):
        missing.append("bink.story.Story._story (the C story pointer)")
    if missing:
        raise StoryError(f"this bink lacks what the Ink runtime calls: {', '.join(missing)}",
                         hint="install the pinned version: pip install 'bink>=0.7.1,<0.8'")
    return StepCalls(story, lib, external_type)


__all__ = ["NEEDED", "StepCalls", "Tagged", "step_calls"]
