"""worldloom's own interpreter of compiled Ink JSON (the format inklecate and inkjs write).

The format is inkle's ``Documentation/ink_JSON_runtime_format.md``; the semantics followed
here are those of inkle's C# runtime (``ink-engine-runtime/Story.cs``, ``StoryState.cs``,
``CallStack.cs``, ``VariablesState.cs``, ``NativeFunctionCall.cs``, ink 1.2) and, where the
two differ, of blade-ink-rs (the runtime inside ``bink``): ``RANDOM`` and shuffles draw from
Rust's ``StdRng`` (ChaCha12 seeded with PCG32), floats are 32-bit and print as Rust does.
Nothing is copied from either; the algorithms are written again from their descriptions.

Scope (what the tests' stories, the generated bench story and inkle's *The Intercept* use):
containers with visit and turn counts, diverts (also to a variable's target), choice points
with all their flags (invisible defaults included), read counts, ``TURNS_SINCE``, global and
temporary variables, ``ref`` parameters, the evaluation stack and every native function on
numbers, booleans and strings, glue, tags (both encodings), tunnels, functions, threads,
sequences and shuffles, ``RANDOM``/``SEED_RANDOM``, external functions with Ink fallbacks.
Outside it, :func:`compile_story` raises :class:`InkScopeError` naming the feature and its
path: Ink ``LIST``s (list values, list definitions, list functions) and unknown content.
``InkRuntime`` then plays that story through bink.

Speed: content is decoded once into flat Python objects (text as ``str``, containers as
:class:`Container`, every other instruction as a tuple whose first item is an opcode), each with
its inner-lane handler chosen at load (``Container.lane``: one call an object, no type or opcode
tests), common runs fused into one instruction at load (``ev`` and the pure evaluation after it,
a choice's text and its choice point, a tag of one text) with the objects they cover left in
place, so saved positions index the content as compiled; visit counts are keyed by container
objects; a choice keeps its thread as a frozen record until it is read; and a ``Continue``
runs straight on instead of snapshotting the state at each newline (Ink's lookahead for glue):
a line is cut from the
output stream once content goes on past its newline, exactly where Ink's snapshot would have
been, and an external function that is not lookahead-safe waits until the line before it is
handed out (as Ink's rewind makes it). The public face is the subset of ``bink``'s ``Story``
and of :class:`~game.story.bink_calls.StepCalls` that ``InkRuntime`` calls, and
:meth:`InkVm.save_state` writes Ink's own save format (``inkSaveVersion`` 10), which bink loads.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from game.errors import StoryError


class InkScopeError(StoryError):
    """The compiled Ink uses a feature this interpreter does not play (the message names it and where)."""


class InkVmError(Exception):
    """An Ink runtime error inside a step (reported to the error handler, as Ink's ``AddError``)."""


#: What :meth:`InkVm.save_state` writes with (one encoder, not one a save).
_SAVE_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

# -- opcodes (first item of an instruction tuple) ----------------------------------------
(EV, EV_END, OUT, POP, DUP, RET_FUNC, RET_TUNNEL, STR, STR_END, NOP, CHOICE_CNT, TURN, TURNS_SINCE, READC, RND,
 SRND, VISIT, SEQ, THREAD, DONE, END, TAG_BEGIN, TAG_END, DIVERT, VAR_DIVERT, CALL, TUNNEL, EXTERNAL, CHOICE,
 VAR_GET, CNT_GET, ASSIGN, NATIVE, PUSH, GLUE_OP, TAG_OBJ, FAST_TEXT, FAST_STR, EXPR, TAG_TEXT) = range(40)
# the steps of a fused evaluation (EXPR): push a literal, a divert target, a variable, a read count; a native
(X_LIT, X_TARGET, X_VAR, X_COUNT, X_BINARY, X_UNARY, X_DUP, X_POP) = range(8)

_COMMANDS = {"ev": EV, "/ev": EV_END, "out": OUT, "pop": POP, "du": DUP, "~ret": RET_FUNC, "->->": RET_TUNNEL,
             "str": STR, "/str": STR_END, "nop": NOP, "choiceCnt": CHOICE_CNT, "turn": TURN, "turns": TURNS_SINCE,
             "readc": READC, "rnd": RND, "srnd": SRND, "visit": VISIT, "seq": SEQ, "thread": THREAD, "done": DONE,
             "end": END, "#": TAG_BEGIN, "/#": TAG_END}
_LIST_COMMANDS = frozenset({"listInt", "range", "lrnd"})
#: Native functions: name -> number of parameters.
_NATIVES = {"+": 2, "-": 2, "/": 2, "*": 2, "%": 2, "_": 1, "==": 2, ">": 2, "<": 2, ">=": 2, "<=": 2, "!=": 2,
            "!": 1, "&&": 2, "||": 2, "MIN": 2, "MAX": 2, "POW": 2, "FLOOR": 1, "CEILING": 1, "INT": 1, "FLOAT": 1,
            "?": 2, "!?": 2}
_LIST_NATIVES = frozenset({"L^", "LIST_MIN", "LIST_MAX", "LIST_ALL", "LIST_COUNT", "LIST_VALUE", "LIST_INVERT"})

# call stack element types (Ink's PushPopType)
TUNNEL_T, FUNCTION_T, FROM_GAME_T = 0, 1, 2


class _Marker:
    """An output-stream object that is not text: glue, or the start of a string or a tag."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


GLUE = _Marker("<>")
#: No value in a table (a journalled write that created the key).
_MISSING = _Marker("missing")
BEGIN_STR = _Marker("str")
BEGIN_TAG = _Marker("#")
END_TAG = _Marker("/#")
#: Not yet looked up (a cache miss).
_UNSET = _Marker("unset")
#: A function that returned nothing (Ink's ``Void``).
VOID = _Marker("void")
_COMMAND_MARKERS = (BEGIN_STR, BEGIN_TAG, END_TAG)


class Tag:
    """A tag as one object (the pre-v21 ``{"#": text}`` form, and choice tags on the evaluation stack)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class DivertTarget:
    """A divert target value (``-> knot`` as a value): its path string and where it points."""

    __slots__ = ("path", "container", "index")

    def __init__(self, path: str, container: Container | None, index: int) -> None:
        self.path, self.container, self.index = path, container, index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DivertTarget) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __str__(self) -> str:
        return f"DivertTargetValue({self.path})"


class VarPointer:
    """A reference to a variable (``ref`` parameters): its name and context (0 global, n: call stack element n-1)."""

    __slots__ = ("name", "ci")

    def __init__(self, name: str, ci: int) -> None:
        self.name, self.ci = name, ci

    def __str__(self) -> str:
        return f"VariablePointerValue({self.name})"


class Container:
    """One Ink container: its decoded content, named children, parent, flags and path."""

    __slots__ = ("content", "lane", "named", "parent", "index", "name", "path", "visits", "turns", "start_only",
                 "depth")

    def __init__(self, name: str | None, parent: Container | None, index: int) -> None:
        self.content: list[Any] = []
        #: For each item of ``content``: its inner-lane handler (:data:`_LANE`), or None: the general path.
        self.lane: list[Lane | None] = []
        self.named: dict[str, Container] = {}
        self.parent = parent
        self.index = index  # position in the parent's content; -1 when only named there
        self.name = name
        self.path = ""
        self.visits = self.turns = self.start_only = False
        #: How many containers are above this one (the root: 0).
        self.depth: int = parent.depth + 1 if parent is not None else 0

    def __repr__(self) -> str:
        return f"Container({self.path!r})"


# -- 32-bit floats, printed as Rust prints them -------------------------------------------
_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float (Ink's floats are 32-bit); infinities stay."""
    try:
        return float(_F32.unpack(_F32.pack(x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def float_text(x: float) -> str:
    """A 32-bit float as Rust's ``{}`` prints it: the shortest digits that read back, never an exponent."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e16:
        return str(int(x)) if x != 0 or math.copysign(1.0, x) > 0 else "-0"
    for digits in range(1, 10):
        s = f"{x:.{digits}g}"
        if f32(float(s)) == x:
            break
    text = format(Decimal(s), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def value_text(v: Any) -> str:
    """An evaluation-stack value as Ink outputs it."""
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return float_text(v)
    return str(v)


# -- Rust's StdRng (ChaCha12) seeded with seed_from_u64 (PCG32), as blade-ink draws --------
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def _pcg32_seed(state: int) -> list[int]:
    """The 8 key words ``SeedableRng::seed_from_u64`` makes with PCG32 (rand_core)."""
    words = []
    for _ in range(8):
        state = (state * 6364136223846793005 + 11634580027462260723) & _M64
        xorshifted = (((state >> 18) ^ state) >> 27) & _M32
        rot = state >> 59
        words.append(((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & _M32)
    return words


#: A ChaCha double round: four column quarter-rounds, then four diagonal ones.
_ROUNDS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _chacha12_block(key: list[int], counter: int) -> list[int]:
    """One ChaCha block with 12 rounds (RFC 7539 layout, 64-bit counter, zero stream id)."""
    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key, counter & _M32, (counter >> 32) & _M32, 0, 0]
    x = list(init)

    def qr(a: int, b: int, c: int, d: int) -> None:
        x[a] = (x[a] + x[b]) & _M32
        v = x[d] ^ x[a]
        x[d] = ((v << 16) | (v >> 16)) & _M32
        x[c] = (x[c] + x[d]) & _M32
        v = x[b] ^ x[c]
        x[b] = ((v << 12) | (v >> 20)) & _M32
        x[a] = (x[a] + x[b]) & _M32
        v = x[d] ^ x[a]
        x[d] = ((v << 8) | (v >> 24)) & _M32
        x[c] = (x[c] + x[d]) & _M32
        v = x[b] ^ x[c]
        x[b] = ((v << 7) | (v >> 25)) & _M32

    for _ in range(6):
        for a, b, c, d in _ROUNDS:
            qr(a, b, c, d)
    return [(a + b) & _M32 for a, b in zip(x, init, strict=True)]


class StdRng:
    """The u32 stream of ``StdRng::seed_from_u64(seed)`` (rand 0.8-0.10: ChaCha12)."""

    def __init__(self, seed: int) -> None:
        self._key = _pcg32_seed(seed & _M64)
        self._buf: list[int] = []
        self._counter = 0

    def next_u32(self) -> int:
        if not self._buf:
            self._buf = _chacha12_block(self._key, self._counter)
            self._counter += 1
        return self._buf.pop(0)

    def next_i32(self) -> int:
        v = self.next_u32()
        return v - (1 << 32) if v & 0x80000000 else v


# -- loading ------------------------------------------------------------------------------
class _Loader:
    """Decodes the JSON containers (refusing what is out of scope) and resolves divert paths."""

    def __init__(self, doc: dict[str, Any], where: str) -> None:
        self.where = where
        self.doc = doc
        self._pending: list[tuple[Container, int, str, Any]] = []
        self._strings: dict[str, Any] = {}
        #: Inner-lane handlers of the shared decoded objects (those in ``_strings``), by object id.
        self._lanes: dict[int, Lane | None] = {}

    def refuse(self, what: str, path: Any) -> InkScopeError:
        return InkScopeError(f"this Ink story uses {what}, which worldloom's Ink interpreter does not play "
                             f"(at {path or 'the root'})", where=self.where, hint="it plays through bink instead")

    def container(self, raw: list[Any], name: str | None, parent: Container | None, index: int) -> Container:
        c = Container(name, parent, index)
        if parent is not None:
            comp = name if name is not None else str(index)
            c.path = f"{parent.path}.{comp}" if parent.path else comp
        last = raw[-1] if raw else None
        body = raw[:-1] if raw else []
        if isinstance(last, dict):
            flags = last.get("#f", 0)
            if isinstance(flags, int):
                c.visits, c.turns, c.start_only = bool(flags & 1), bool(flags & 2), bool(flags & 4)
            if isinstance(last.get("#n"), str) and name is None:
                c.name = last["#n"]
                if parent is not None:
                    c.path = f"{parent.path}.{c.name}" if parent.path else c.name
        strings = self._strings
        append = c.content.append
        for i, item in enumerate(body):
            t = type(item)
            if t is str:  # text and commands decode the same everywhere: once
                found = strings.get(item)
                if found is None:
                    found = strings[item] = self.item(item, c, i)
                append(found)
            elif t is list:
                child = self.container(item, None, c, i)
                if child.name is not None:
                    c.named[child.name] = child
                append(child)
            else:
                append(self.item(item, c, i))
        _fuse(c.content)
        lanes = self._lanes  # text and commands are shared objects (decoded once): their handler too
        lane = c.lane
        for x in c.content:
            h = lanes.get(id(x), _UNSET)
            if h is _UNSET:
                h = _lane_of(x)
                if type(x) is str or (type(x) is tuple and len(x) == 1):
                    lanes[id(x)] = h
            lane.append(h)  # type: ignore[arg-type]
        if isinstance(last, dict):
            for key, value in last.items():
                if key in ("#f", "#n"):
                    continue
                if not isinstance(value, list):
                    raise self.refuse(f"named content {key!r} that is not a container", c.path)
                c.named[key] = self.container(value, key, c, -1)
        return c

    def item(self, x: Any, c: Container, i: int) -> Any:
        where = _Where(c, i)
        if isinstance(x, bool | int):
            return (PUSH, x)
        if isinstance(x, float):
            return (PUSH, f32(x))
        if isinstance(x, str):
            if x.startswith("^"):
                return x[1:]
            if x == "\n":
                return "\n"
            if x == "<>":
                return (GLUE_OP,)
            op = _COMMANDS.get(x)
            if op is not None:
                return (op,)
            if x in _LIST_COMMANDS or x in _LIST_NATIVES:
                raise self.refuse(f"Ink lists ({x!r})", where)
            if x in _NATIVES:
                return (NATIVE, x, _NATIVES[x])
            if x == "void":
                return (PUSH, VOID)
            raise self.refuse(f"an unknown instruction {x!r}", where)
        if isinstance(x, dict):
            if "^->" in x:
                slot: list[Any] = [None]
                self._pending.append((c, i, str(x["^->"]), slot))
                return (PUSH, slot)  # a DivertTarget once paths resolve
            if "^var" in x:
                return (PUSH, VarPointer(str(x["^var"]), int(x.get("ci", -1))))
            cond = bool(x.get("c", False))
            for key, op in (("->", DIVERT), ("f()", CALL), ("->t->", TUNNEL)):
                if key in x:
                    target = str(x[key])
                    if x.get("var"):
                        return (VAR_DIVERT, target, cond, op)
                    slot = [None]
                    self._pending.append((c, i, target, slot))
                    return (op, slot, cond)
            if "x()" in x:
                return (EXTERNAL, str(x["x()"]), int(x.get("exArgs", 0) or 0), cond)
            if "*" in x:
                slot = [None]
                self._pending.append((c, i, str(x["*"]), slot))
                return (CHOICE, slot, int(x.get("flg", 0) or 0), str(where))
            if "VAR?" in x:
                return (VAR_GET, str(x["VAR?"]))
            if "CNT?" in x:
                slot = [None]
                self._pending.append((c, i, str(x["CNT?"]), slot))
                return (CNT_GET, slot)
            if "VAR=" in x or "temp=" in x:
                is_global = "VAR=" in x
                return (ASSIGN, str(x["VAR=" if is_global else "temp="]), is_global, "re" not in x)
            if "#" in x:
                return (TAG_OBJ, str(x["#"]))
            if "list" in x:
                raise self.refuse("Ink lists (a list value)", where)
            raise self.refuse(f"an unknown object {json.dumps(x)[:60]}", where)
        if x is None:
            return (NOP,)
        raise self.refuse(f"an unknown item {x!r}", where)

    def resolve_all(self, root: Container) -> None:
        for c, _i, target, slot in self._pending:
            slot[0] = resolve_target(root, c, target, self.where)
        self._pending = []


class _Where:
    """An item's path (``container.index``), made into text only when asked."""

    __slots__ = ("c", "i")

    def __init__(self, c: Container, i: int) -> None:
        self.c, self.i = c, i

    def __str__(self) -> str:
        return f"{self.c.path}.{self.i}" if self.c.path else str(self.i)

    def __bool__(self) -> bool:
        return True


def _fuse(content: list[Any]) -> None:
    """Peephole: ``ev str ^text /str /ev`` (a choice's fixed text, no newline in it) becomes one
    instruction at the first index that pushes the text and skips the four after it, which stay
    in place (saved positions index the content as compiled); ``str ^text /str`` inside an
    evaluation likewise (a string literal: a hook's argument, a comparison's operand); then an
    ``ev`` and the pure evaluation after it (:func:`_fuse_expr`) likewise."""
    n = len(content)
    evs = []
    for k in range(n - 2):
        a = content[k]
        if type(a) is not tuple or len(a) != 1:
            continue
        op = a[0]
        if op == EV:
            if k + 4 < n:
                b, text, d, e = content[k + 1:k + 5]
                if b == (STR,) and type(text) is str and "\n" not in text and d == (STR_END,) and e == (EV_END,):
                    content[k] = (FAST_TEXT, text, _choice_at(content, k + 5))
                    continue
            evs.append(k)
        elif op == STR or op == TAG_BEGIN:
            text, d = content[k + 1], content[k + 2]
            if type(text) is str and "\n" not in text:
                if op == STR and d == (STR_END,):
                    content[k] = (FAST_STR, text)
                elif op == TAG_BEGIN and d == (TAG_END,):
                    content[k] = (TAG_TEXT, text)
    for k in evs:
        fused = _fuse_expr(content, k)
        if fused is not None:
            content[k] = fused


def _choice_at(content: list[Any], k: int) -> tuple[Any, ...] | None:
    """The choice point at ``content[k]``, if there is one (a fused instruction before it runs it too)."""
    x = content[k] if k < len(content) else None
    return x if type(x) is tuple and x[0] == CHOICE else None


def _fuse_expr(content: list[Any], k: int) -> tuple[Any, ...] | None:
    """``ev`` at ``k`` and the objects after it that only work the evaluation stack (literals, divert
    targets, variables, read counts, native functions, string literals, ``du``, ``pop``), up to and
    with ``/ev``, as one instruction ``(EXPR, steps, span, ends)``: its steps run in order on the
    stack, as the objects would (an error in one stops there, as it would); ``span`` objects after
    ``k`` are covered; ``ends``: the run closes the evaluation. None when fewer than two objects fuse.
    No step reaches below the stack it starts on (so the run needs nothing pushed before it).

    Why this is exact: in evaluation mode these objects only push onto and pop from the evaluation
    stack (inkle's ``Documentation/ink_JSON_runtime_format.md``, "Control commands": ``ev``,
    ``/ev``, ``pop``, ``du``, ``str``/``/str``; values, variable and read-count references and
    native functions likewise), so running them in one call changes nothing else Ink's step reads;
    the content pointer after the run is where it would be after its last object."""
    steps: list[tuple[int, Any]] = []
    depth = 0
    j = k + 1
    ends = False
    n = len(content)
    while j < n:
        x = content[j]
        if type(x) is not tuple:
            break
        op = x[0]
        if op == EV_END:
            ends = True
            break
        if op == PUSH:
            v = x[1]
            if type(v) is VarPointer:
                break
            steps.append((X_TARGET, v) if type(v) is list else (X_LIT, v))
            depth += 1
        elif op == FAST_STR:
            steps.append((X_LIT, x[1]))
            depth += 1
            j += 2
        elif op == VAR_GET:
            steps.append((X_VAR, x[1]))
            depth += 1
        elif op == CNT_GET:
            steps.append((X_COUNT, x[1]))
            depth += 1
        elif op == NATIVE:
            if depth < x[2]:
                break
            steps.append((X_BINARY if x[2] == 2 else X_UNARY, x[1]))
            depth -= x[2] - 1
        elif op == DUP and depth >= 1:
            steps.append((X_DUP, None))
            depth += 1
        elif op == POP and depth >= 1:
            steps.append((X_POP, None))
            depth -= 1
        else:
            break
        j += 1
    if len(steps) + ends < 2:
        return None
    tail: Any = None  # what the lane also runs after the run when it can: a choice point, or ``out /ev``
    if ends:
        tail = _choice_at(content, j + 1)
    elif j + 1 < n and content[j] == (OUT,) and content[j + 1] == (EV_END,):
        tail = OUT
    return (EXPR, tuple(steps), j - k if ends else j - 1 - k, ends, tail)


# -- the inner lane: the objects that only move the pointer on in their container ----------------
# Each handler performs one object as Ink's Step would, given the interpreter, the object, the call
# stack element, the evaluation stack, the output stream and the object's index, and returns how
# many objects after it it also covered (0 normally; a fused instruction covers more), or -1 when
# it cannot run here (the general path then performs it). A handler touches nothing the newline
# bookkeeping reads: the text it writes leaves the stream not ending in a newline (and it only
# writes while no newline snapshot is held), so the bookkeeping has nothing to do after it.
Lane = Callable[["InkVm", Any, "Element", list[Any], list[Any], int], int]


def _l_text(vm: InkVm, obj: str, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    """Text with no newline and more than whitespace: the stream then does not end in a newline."""
    if el.in_expr:
        ev.append(obj)
        return 0
    if vm._snap is None and el.type != FUNCTION_T and GLUE not in out:
        out.append(obj)
        return 0
    return -1


def _l_space(vm: InkVm, obj: str, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    """Only spaces and tabs (or nothing): as text, if the stream did not end in a newline before it."""
    if not el.in_expr and out and vm._ends_in_newline(out):
        return -1
    return _l_text(vm, obj, el, ev, out, i)


def _l_newline(vm: InkVm, obj: str, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if el.in_expr:
        ev.append(obj)
        return 0
    return -1


def _l_ev(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    el.in_expr = True
    return 0


def _l_ev_end(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    el.in_expr = False
    return 0


def _l_push(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if el.in_expr:
        ev.append(obj[1])
        return 0
    return -1


def _l_var(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev.append(vm._get_var(obj[1]))
    return 0


def _l_binary(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    b = ev.pop()
    ev[-1] = _binary(obj[1], ev[-1], b)
    return 0


def _l_unary(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev[-1] = _unary(obj[1], ev[-1])
    return 0


def _l_fast_text(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev.append(obj[1])  # ev str ^text /str /ev: a choice's fixed text onto the stack
    el.in_expr = False
    choice = obj[2]
    if choice is not None and not vm._str_open:  # and the choice point right after it
        return 5 + _l_choice(vm, choice, el, ev, out, i + 5)
    return 4


def _l_tag_text(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if vm._snap is None and not vm._str_open:  # ``# ^text /#``: a tag of one text, as its three objects run
        if not el.in_expr and el.type != FUNCTION_T and GLUE not in out:
            out.append(BEGIN_TAG)
            out.append(obj[1])
            out.append(END_TAG)
            return 2
        out.append(BEGIN_TAG)
        return 0
    return -1


def _l_fast_str(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if el.in_expr:  # str ^text /str: a string literal onto the stack
        ev.append(obj[1])
        return 2
    return -1


def _l_expr(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    for kind, arg in obj[1]:  # a fused evaluation (_fuse_expr)
        if kind == X_LIT:
            ev.append(arg)
        elif kind == X_VAR:
            ev.append(vm._get_var(arg))
        elif kind == X_BINARY:
            b = ev.pop()
            ev[-1] = _binary(arg, ev[-1], b)
        elif kind == X_COUNT:
            ev.append(vm._visit_count(arg[0].container))
        elif kind == X_TARGET:
            ev.append(arg[0])
        elif kind == X_UNARY:
            ev[-1] = _unary(arg, ev[-1])
        elif kind == X_DUP:
            ev.append(ev[-1])
        else:
            ev.pop()
    span: int = obj[2]
    tail = obj[4]
    if obj[3]:
        el.in_expr = False
        if tail is not None and not vm._str_open:  # the choice point right after: as _l_choice runs it
            return span + 1 + _l_choice(vm, tail, el, ev, out, i + span + 1)
        return span
    el.in_expr = True
    if tail == OUT and _l_out(vm, None, el, ev, out, i) == 0:  # ``out /ev`` right after
        el.in_expr = False
        return span + 2
    return span


def _l_count(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev.append(vm._visit_count(obj[1][0].container))
    return 0


def _l_out(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if ev and vm._snap is None and el.type != FUNCTION_T and GLUE not in out:
        v = ev[-1]  # a number or a plain word out: as plain text
        tv = type(v)
        if tv is int:
            v = str(v)
        elif tv is not str or "\n" in v or not v.strip(" \t"):
            return -1
        ev.pop()
        out.append(v)
        return 0
    return -1


def _l_tag_begin(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if vm._snap is None and not vm._str_open:
        out.append(BEGIN_TAG)  # the stream then ends in a tag
        return 0
    return -1


def _l_tag_end(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if vm._snap is None and not vm._str_open:
        out.append(END_TAG)
        return 0
    return -1


def _l_nop(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    return 0


def _l_pop(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev.pop()
    return 0


def _l_dup(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    ev.append(ev[-1])
    return 0


def _l_choice(vm: InkVm, obj: Any, el: Element, ev: list[Any], out: list[Any], i: int) -> int:
    if vm._str_open:
        return -1
    el.index = i
    thread = vm.threads[-1]
    thread.prev_container, thread.prev_index = el.container, i - 1
    vm._choice_point(obj)
    return 0


_LANE: dict[int, Lane] = {EV: _l_ev, EV_END: _l_ev_end, VAR_GET: _l_var, FAST_TEXT: _l_fast_text,
                          FAST_STR: _l_fast_str, CNT_GET: _l_count, OUT: _l_out, TAG_BEGIN: _l_tag_begin,
                          TAG_END: _l_tag_end, NOP: _l_nop, POP: _l_pop, DUP: _l_dup, CHOICE: _l_choice,
                          EXPR: _l_expr, TAG_TEXT: _l_tag_text}


def _lane_of(x: Any) -> Lane | None:
    """The inner-lane handler of a decoded object (None: it always takes the general path)."""
    t = type(x)
    if t is str:
        return _l_newline if "\n" in x else _l_text if x.strip(" \t") else _l_space
    if t is not tuple:
        return None
    op = x[0]
    if op == PUSH:
        return None if type(x[1]) is list or type(x[1]) is VarPointer else _l_push
    if op == NATIVE:
        return _l_binary if x[2] == 2 else _l_unary
    return _LANE.get(op)


def _content_at(root: Container, start: Container, comps: list[str]) -> tuple[Any, Container | None]:
    """Follow path components from ``start``: ``(object, its container)``; object None when not found."""
    cur: Any = start
    parent: Container | None = start
    for comp in comps:
        if not isinstance(cur, Container):
            return None, None
        if comp == "^":
            parent = cur.parent
            cur = parent
            continue
        if comp.lstrip("-").isdigit():
            k = int(comp)
            if 0 <= k < len(cur.content):
                parent, cur = cur, cur.content[k]
            elif k == len(cur.content):
                return None, cur  # the end of a container (a divert past its last item)
            else:
                return None, None
        else:
            found = cur.named.get(comp)
            if found is None:
                return None, None
            parent, cur = cur, found
    return cur, parent


def resolve_target(root: Container, at: Container, target: str, where: str = "") -> DivertTarget:
    """A divert's target as a pointer (Ink's ``Divert.targetPointer``): a named container -> its start;
    ``...n`` -> index n of the container it is in. Relative paths start from the container ``at``."""
    if target.startswith("."):
        comps = target[1:].split(".")
        if comps and comps[0] == "^":  # the first '^' leaves the (non-container) object for its container
            comps = comps[1:]
        start = at
    else:
        comps = target.split(".")
        start = root
    last = comps[-1] if comps else ""
    if last.lstrip("-").isdigit():
        obj, parent = _content_at(root, start, comps[:-1])
        if not isinstance(obj, Container):
            raise InkScopeError(f"divert target {target!r} not found", where=where)
        path = f"{obj.path}.{last}" if obj.path else last
        return DivertTarget(path, obj, int(last))
    obj, _ = _content_at(root, start, comps)
    if not isinstance(obj, Container):
        raise InkScopeError(f"divert target {target!r} not found", where=where)
    return DivertTarget(obj.path, obj, 0)


def compile_story(doc: dict[str, Any], where: str = "") -> Container:
    """The root container of a compiled Ink document, decoded and resolved.

    Raises:
        InkScopeError: the story uses a feature outside this interpreter's scope (named, with where).
    """
    loader = _Loader(doc, where)
    version = doc.get("inkVersion")
    if not isinstance(version, int) or not 19 <= version <= 21:
        raise loader.refuse(f"compiled Ink format version {version!r} (plays 19-21)", "")
    defs = doc.get("listDefs")
    if isinstance(defs, dict) and defs:
        raise loader.refuse(f"Ink lists (LIST {', '.join(sorted(defs))})", "listDefs")
    root_raw = doc.get("root")
    if not isinstance(root_raw, list):
        raise loader.refuse("no root container", "")
    root = loader.container(root_raw, None, None, -1)
    loader.resolve_all(root)
    return root


# -- run-time state -------------------------------------------------------------------------
_new = object.__new__


class Element:
    """A call stack element: where it is, its temporaries and what it was pushed as."""

    __slots__ = ("type", "container", "index", "in_expr", "temps", "eval_height", "fstart")

    def __init__(self, kind: int, container: Container | None, index: int, in_expr: bool = False) -> None:
        self.type = kind
        self.container = container
        self.index = index
        self.in_expr = in_expr
        self.temps: dict[str, Any] = {}
        self.eval_height = 0
        self.fstart = 0

    def copy(self) -> Element:
        e = Element(self.type, self.container, self.index, self.in_expr)
        e.temps = dict(self.temps) if self.temps else {}
        e.eval_height, e.fstart = self.eval_height, self.fstart
        return e


class Thread:
    """One thread of the call stack: its elements, index and previous pointer."""

    __slots__ = ("stack", "index", "prev_container", "prev_index")

    def __init__(self, index: int = 0) -> None:
        self.stack: list[Element] = []
        self.index = index
        self.prev_container: Container | None = None
        self.prev_index = -1

    def copy(self) -> Thread:
        t = _new(Thread)
        t.index, t.prev_container, t.prev_index = self.index, self.prev_container, self.prev_index
        stack = t.stack = []
        for e in self.stack:  # Element.copy, inlined (a snapshot and every choice copy a thread)
            f = _new(Element)
            f.type, f.container, f.index, f.in_expr = e.type, e.container, e.index, e.in_expr
            f.temps = dict(e.temps) if e.temps else {}
            f.eval_height, f.fstart = e.eval_height, e.fstart
            stack.append(f)
        return t


class Choice:
    """A generated choice: its text, tags, target, the thread it was made on.

    The thread is forked when the choice is made (Ink's ``threadAtGeneration``), but kept as a
    frozen record (:func:`_freeze`) until something reads it (taking the choice, a save): most
    choices offered are never taken, and a record costs a fraction of a thread."""

    __slots__ = ("text", "tags", "target", "source", "invisible", "_thread", "_frozen")

    def __init__(self, text: str, tags: list[str], target: DivertTarget, source: str, invisible: bool,
                 thread: Thread | None, frozen: tuple[Any, ...] | None = None) -> None:
        self.text, self.tags, self.target, self.source = text, tags, target, source
        self.invisible, self._thread, self._frozen = invisible, thread, frozen

    @property
    def thread(self) -> Thread:
        t = self._thread
        if t is None:
            t = self._thread = _thaw(self._frozen)  # type: ignore[arg-type]
        return t

    @property
    def thread_index(self) -> int:
        t = self._thread
        return t.index if t is not None else self._frozen[0]  # type: ignore[index]


def _freeze(t: Thread, index: int) -> tuple[Any, ...]:
    """A copy of thread ``t`` as a record (numbered ``index``): what :func:`_thaw` makes a thread of."""
    elements = []
    for e in t.stack:
        elements.append((e.type, e.container, e.index, e.in_expr, dict(e.temps) if e.temps else None, e.eval_height,
                         e.fstart))
    return (index, t.prev_container, t.prev_index, elements)


def _thaw(frozen: tuple[Any, ...]) -> Thread:
    t = _new(Thread)
    t.index, t.prev_container, t.prev_index, elements = frozen
    stack = t.stack = []
    for kind, container, index, in_expr, temps, eval_height, fstart in elements:
        e = _new(Element)
        e.type, e.container, e.index, e.in_expr = kind, container, index, in_expr
        e.temps = dict(temps) if temps else {}
        e.eval_height, e.fstart = eval_height, fstart
        stack.append(e)
    return t


#: A run of spaces and tabs (Ink's inline whitespace).
_INLINE_WS = re.compile("[ \t]+")


def _is_ws(s: str) -> bool:
    """Ink's ``isInlineWhitespace``: only spaces and tabs (the empty string too)."""
    return not s.strip(" \t")


def clean_whitespace(s: str) -> str:
    """Ink's ``CleanOutputWhitespace``: no spaces or tabs at line starts and ends, inner runs as one space."""
    if "  " not in s and "\t" not in s and " \n" not in s and "\n " not in s and s[:1] != " " and s[-1:] != " ":
        return s
    if "  " not in s and "\t" not in s:  # no inner runs: only the ends of lines
        if "\n" not in s:
            return s.strip(" ")
        if s[-1] == "\n" and s.count("\n") == 1:  # one line and its newline
            return s[:-1].strip(" ") + "\n"
        return "\n".join(line.strip(" ") for line in s.split("\n"))
    if "\n" not in s:
        return _INLINE_WS.sub(" ", s).strip(" ")
    return "\n".join(_INLINE_WS.sub(" ", line).strip(" ") for line in s.split("\n"))


def split_line(objs: list[Any]) -> tuple[str, tuple[str, ...]]:
    """Ink's ``currentText`` and ``currentTags`` of an output stream."""
    for o in objs:
        if type(o) is not str:
            break
    else:  # text only (most lines): no tags
        return clean_whitespace("".join(objs)), ()
    a = objs.index(o)
    if o is BEGIN_TAG and len(objs) > a + 2 and type(objs[a + 1]) is str and objs[a + 2] is END_TAG:
        rest = objs[a + 3:]
        for o in rest:
            if type(o) is not str:
                break
        else:  # one tag of one piece of text (a line's scene tag): as the loop below makes it
            return clean_whitespace("".join(objs[:a] + rest)), (clean_whitespace(objs[a + 1]),)
    parts: list[str] = []
    tags: list[str] = []
    in_tag = False
    buf: list[str] = []
    for o in objs:
        if type(o) is str:
            if in_tag:
                buf.append(o)
            else:
                parts.append(o)
        elif o is BEGIN_TAG:
            if in_tag and buf:
                tags.append(clean_whitespace("".join(buf)))
                buf = []
            in_tag = True
        elif o is END_TAG:
            if buf:
                tags.append(clean_whitespace("".join(buf)))
                buf = []
            in_tag = False
        elif type(o) is Tag and o.text:
            tags.append(o.text)
    if buf:
        tags.append(clean_whitespace("".join(buf)))
    return clean_whitespace("".join(parts)), tuple(tags)


External = Callable[..., Any]


class InkVm:
    """Plays one compiled Ink story (see the module docstring); one story state at a time.

    The methods are those of ``bink``'s ``Story`` and of
    :class:`~game.story.bink_calls.StepCalls` that ``InkRuntime`` uses, with the same
    meaning. Errors inside a step go to the error handler (``fn(message, is_error)``) and
    end the flow, as in Ink; misuse from outside raises ``RuntimeError``.

    ``doc`` is the compiled JSON document, or the root :func:`compile_story` made of it.

    Raises:
        InkScopeError: (constructor) the story uses something outside the scope.
    """

    def __init__(self, doc: dict[str, Any] | Container, where: str = "") -> None:
        self.where = where
        #: The decoded story (shared, never changed: runtimes of one story can share it).
        self.root = doc if isinstance(doc, Container) else compile_story(doc, where)
        self._externals: dict[str, tuple[External, bool]] = {}
        self._observers: dict[str, list[Callable[[str, Any], None]]] = {}
        self._on_error: Callable[[str, bool], None] | None = None
        self.allow_fallbacks = False
        self.globals: dict[str, Any] = {}
        self.defaults: dict[str, Any] = {}
        self.reset_state()

    # -- state -------------------------------------------------------------------------------
    def reset_state(self) -> None:
        """A fresh state at the top of the story, globals at their declared values (seed 0)."""
        self.counts: dict[Container, int] = {}
        self.turns_at: dict[Container, int] = {}
        self.turn = -1
        self.seed = 0
        self.prev_random = 0
        self.eval: list[Any] = []
        self.out: list[Any] = []
        self._choices: list[Choice] = []
        self.diverted: tuple[Container, int] | None = None
        self.did_safe_exit = False
        self.thread_counter = 0
        t = Thread(0)
        t.stack.append(Element(TUNNEL_T, self.root, 0))
        self.threads = [t]
        self._snap: tuple[Any, ...] | None = None
        self._journal: list[tuple[dict[Any, Any], Any, Any]] | None = None
        self._nl = -1
        self._saw_unsafe = False
        self._str_open = 0
        #: Changes to the output stream so far (the newline bookkeeping runs when it moved).
        self._outv = 0
        self._errors: list[str] = []
        self._changed: dict[str, Any] = {}
        self.globals = {}
        decl = self.root.named.get("global decl")
        if decl is not None:
            saved = (self.el.container, self.el.index)
            self._choose(decl, 0, False)
            while self._can_continue():
                self.cont()
            self.el.container, self.el.index = saved
            self.threads[-1].prev_container, self.threads[-1].prev_index = None, -1
        self.defaults = dict(self.globals)
        self._changed = {}
        self.out = []

    @property
    def el(self) -> Element:
        return self.threads[-1].stack[-1]

    # -- bink's Story API --------------------------------------------------------------------------
    def set_error_handler(self, fn: Callable[[str, bool], None]) -> None:
        self._on_error = fn

    def set_allow_external_function_fallbacks(self, allow: bool) -> None:
        self.allow_fallbacks = allow

    def bind_external_function(self, name: str, fn: External, lookahead_safe: bool = False) -> None:
        """Bind ``EXTERNAL name``: ``fn(name, *args) -> value`` (bool, int, float, str or None)."""
        if name in self._externals:
            raise RuntimeError(f"external function {name!r} is already bound")
        self._externals[name] = (fn, lookahead_safe)

    def unbind_external_function(self, name: str) -> None:
        self._externals.pop(name, None)

    def bind_text_function(self, name: str, fn: Callable[[str], None]) -> None:
        """Bind ``EXTERNAL name(text)`` to ``fn(text)`` returning nothing (StepCalls' hook binding)."""
        self._externals.pop(name, None)

        def call(_name: str, *args: Any) -> None:
            fn(args[0] if args and isinstance(args[0], str) else "")

        self._externals[name] = (call, False)

    def observe_variable(self, name: str, fn: Callable[[str, Any], None]) -> None:
        self._observers.setdefault(name, []).append(fn)

    def get_variable(self, name: str) -> Any:
        """A global's value (bool, int, float or str).

        Raises:
            RuntimeError: no such global. TypeError: a divert target (no Python value, as in bink).
        """
        v = self.globals.get(name, self.defaults.get(name))
        if v is None:
            raise RuntimeError(f"no global variable {name!r}")
        if not isinstance(v, bool | int | float | str):
            raise TypeError("this Ink value has no Python representation")
        return v

    def set_variable(self, name: str, value: Any) -> None:
        if name not in self.defaults:
            raise RuntimeError(f"cannot assign to a variable ({name}) that hasn't been declared in the story")
        if not isinstance(value, bool | int | float | str):
            raise TypeError(f"cannot set an Ink variable to {type(value).__name__}")
        self._set_global(name, f32(value) if type(value) is float else value)

    def _export(self, v: Any) -> Any:
        if isinstance(v, DivertTarget):
            return v.path
        if isinstance(v, VarPointer) or v is VOID:
            return None
        return v

    def choose_path_string(self, path: str) -> None:
        """Go to ``path`` (``knot`` or ``knot.stitch``), the call stack reset (Ink's ``ChoosePathString``)."""
        try:
            target = resolve_target(self.root, self.root, path, self.where)
        except InkScopeError as exc:
            raise RuntimeError(str(exc)) from exc
        self._force_end()
        self._choose(target.container, target.index, True)

    def can_continue(self) -> bool:
        return self._can_continue()

    def _can_continue(self) -> bool:
        return self.threads[-1].stack[-1].container is not None and not self._errors

    def continue_maximally(self) -> str:
        out = []
        while self._can_continue():
            out.append(self.cont()[0])
        return "".join(out)

    def choices(self, tags: bool = True) -> list[tuple[str, tuple[str, ...]]]:
        """The current choices: ``(text, tags)`` each (none while Ink can continue)."""
        if self._can_continue():
            return []
        if tags:
            return [(c.text, tuple(c.tags) if c.tags else ()) for c in self._choices if not c.invisible]
        return [(c.text, ()) for c in self._choices if not c.invisible]

    def choose(self, index: int) -> None:
        """Take current choice ``index`` (Ink's ``ChooseChoiceIndex``).

        The choice's thread (forked for it when it was made) becomes the flow itself, as in Ink
        (``callStack.currentThread = choice.threadAtGeneration``): the choices are cleared at
        once, so nothing else holds it and it is not copied again.
        """
        shown = self._choices
        for c in shown:
            if c.invisible:
                shown = [c for c in shown if not c.invisible]
                break
        if self._can_continue() or not 0 <= index < len(shown):
            raise RuntimeError("choice out of range")
        c = shown[index]
        self.threads = [c.thread]
        self._choose(c.target.container, c.target.index, True)

    def evaluate_function(self, name: str, args: list[Any]) -> tuple[Any, str]:
        """Run the Ink function ``name(*args)``: ``(its return value or None, the text it output)``."""
        fn = self.root.named.get(name)
        if fn is None:
            raise RuntimeError(f"Function doesn't exist: '{name}'")
        before = self.out
        self.out = []
        self._discard()
        e = Element(FROM_GAME_T, fn, 0)
        e.eval_height = len(self.eval)
        self.threads[-1].stack.append(e)
        for a in args:
            if not isinstance(a, bool | int | float | str):
                raise RuntimeError("ink arguments must be int, float, string or bool")
            self.eval.append(f32(a) if type(a) is float else a)
        text = []
        while self._can_continue():
            text.append(self.cont()[0])
        self.out = before
        if self.el.type != FROM_GAME_T:
            raise RuntimeError("expected the function evaluation to be complete")
        returned: Any = None
        while len(self.eval) > self.el.eval_height:
            v = self.eval.pop()
            if returned is None:
                returned = v
        self._pop_callstack()
        self._notify()
        return (None if returned is None or returned is VOID else self._export(returned)), "".join(text)

    # -- the step loop -------------------------------------------------------------------------
    def cont(self) -> tuple[str, tuple[str, ...]]:
        """Run one line (Ink's ``Continue``): ``(text, tags)``.

        Raises:
            RuntimeError: Ink cannot continue.
        """
        if not self._can_continue():
            raise RuntimeError("Can't continue - should check canContinue before calling Continue")
        self.did_safe_exit = False
        self.out = []
        self._str_open = 0
        self._saw_unsafe = False
        try:
            self._run()
        except InkVmError as exc:
            self._discard()
            self._add_error(str(exc))
        if self._snap is not None:
            self._restore()
        line = split_line(self.out)
        if not self._can_continue() and not self._errors:
            self._check_end()
        self._notify()
        if self._errors:
            errors, self._errors = self._errors, []
            self._errors = errors
            if self._on_error is not None:
                for e in errors:
                    self._on_error(e, True)
                self._errors = []
                self._force_end()
            else:
                raise RuntimeError(errors[0])
        return line

    def _check_end(self) -> None:
        if self._choices or self.did_safe_exit or self.el.type == FROM_GAME_T:
            return
        stack = self.threads[-1].stack
        if len(stack) > 1 and stack[-1].type == TUNNEL_T:
            self._add_error("unexpectedly reached end of content. Do you need a '->->' to return from a tunnel?")
        elif len(stack) > 1 and stack[-1].type == FUNCTION_T:
            self._add_error("unexpectedly reached end of content. Do you need a '~ return'?")
        elif len(stack) <= 1:
            self._add_error("ran out of content. Do you need a '-> DONE' or '-> END'?")

    def _add_error(self, message: str) -> None:
        el = self.el
        where = f"{el.container.path}.{el.index}" if el.container is not None else ""
        self._errors.append(f"RUNTIME ERROR: ({where}): {message}" if where else f"RUNTIME ERROR: {message}")

    def _notify(self) -> None:
        changed, self._changed = self._changed, {}
        for name, value in changed.items():
            if isinstance(value, bool | int | float | str):  # a divert target has no Python value (as in bink)
                for fn in self._observers.get(name, ()):
                    fn(name, value)

    def _run(self) -> None:
        """Step until a line is done (Ink's ContinueInternal loop, its newline snapshot included).

        Each of Ink's steps (Story.Step, then NextContent) is one pass. The objects that only
        move the pointer on inside their container and touch nothing the newline bookkeeping
        reads (evaluation, variables, counts, plain text with no newline) run in an inner lane
        with the position in locals; everything else takes the general path, after which the
        bookkeeping runs if the output stream changed.
        """
        seen = -1
        while True:
            thread = self.threads[-1]
            el = thread.stack[-1]
            c = el.container
            if c is None:
                return
            i = el.index
            content = c.content
            obj: Any = content[i] if 0 <= i < len(content) else (c if i < 0 or not content else None)
            while type(obj) is Container:  # step into containers, counting the visits
                if obj.visits or obj.turns:
                    self._visit(obj, True)
                if not obj.content:
                    break
                c, i = obj, 0
                content = obj.content
                obj = content[0]
            el.container = c
            n = len(content)
            ev, out = self.eval, self.out
            start = i
            ran = False
            lane = c.lane
            while 0 <= i < n:  # the inner lane: a handler call an object (None: the general path)
                h = lane[i]
                if h is None:
                    break
                skip = h(self, obj, el, ev, out, i)
                if skip < 0:
                    break
                i += skip
                if i + 1 >= n:
                    ran = True  # the last object of the container ran: NextContent leaves it
                    break
                i += 1
                obj = content[i]
            el.index = i
            if ran:
                self._next_content()
            else:
                if i > start:
                    thread.prev_container, thread.prev_index = c, i - 1
                t = type(obj)
                if t is Container and obj.content:
                    continue  # the next pass steps into it (an empty one is stepped past)
                if t is tuple and obj[0] == DIVERT:  # _step_object and _next_content for a divert, at once
                    if not obj[2] or self._truthy(ev.pop()):
                        d = obj[1][0]
                        thread.prev_container, thread.prev_index = c, i
                        el.container, el.index = d.container, d.index
                        self._visit_changed()
                    else:
                        self._next_content()
                else:
                    if t is str:
                        self._push_out(obj)
                        if i + 1 < n and self.diverted is None:  # _next_content inside the container
                            thread.prev_container, thread.prev_index = c, i
                            el.index = i + 1
                        else:
                            self._next_content()
                    else:
                        if t is tuple:
                            self._step_object(obj, obj[0], el)
                        if self.threads[-1].stack[-1].container is not None:  # else the flow ended (done, end...)
                            self._next_content()
                            if t is tuple and obj[0] == THREAD:
                                self._push_thread()
            el = self.threads[-1].stack[-1]
            if el.container is None and el.type != FROM_GAME_T and self._choices:
                self._follow_invisible_default()
                el = self.threads[-1].stack[-1]
            if self._outv == seen and not self._saw_unsafe and el.container is not None:
                continue  # nothing the newline bookkeeping reads has changed
            seen = self._outv
            if not self._str_open:
                out = self.out
                snap = self._snap
                if snap is not None:
                    nl = self._nl
                    if len(out) <= nl or out[nl] != "\n":
                        self._discard()  # glue took the newline back: the line goes on
                        snap = None
                    elif self._saw_unsafe or (len(out) > snap[0] and self._extended(out, snap[0])):
                        self._restore()  # the line ended at the newline: back to just after it
                        return
                if self._ends_in_newline(out):
                    if el.container is not None:
                        if snap is None:
                            self._snapshot()
                    elif snap is not None:
                        self._discard()
            if el.container is None or self._errors:
                return

    def _snapshot(self) -> None:
        """Remember the state just after a newline (what Ink's StateSnapshot keeps), writes to the
        big tables journalled from here on, so a rewind costs what changed since."""
        out = self.out
        self._nl = self._last_newline(out)
        self._snap = (len(out), [t.copy() for t in self.threads], self.thread_counter, list(self.eval), list(out),
                      list(self._choices), self.turn, self.seed, self.prev_random, self.diverted,
                      self.did_safe_exit, self._str_open)
        self._journal = []

    def _restore(self) -> None:
        snap, journal = self._snap, self._journal
        assert snap is not None and journal is not None
        for table, key, old in reversed(journal):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        (_, self.threads, self.thread_counter, self.eval, self.out, self._choices, self.turn, self.seed,
         self.prev_random, self.diverted, self.did_safe_exit, self._str_open) = snap
        self._snap = self._journal = None
        self._saw_unsafe = False

    def _discard(self) -> None:
        self._snap = self._journal = None

    @staticmethod
    def _extended(out: list[Any], start: int) -> bool:
        in_tag = False
        for k in range(start, len(out)):
            o = out[k]
            t = type(o)
            if t is str:
                if in_tag:
                    if o:
                        return True
                elif o.strip(" \t"):
                    return True
            elif o is BEGIN_TAG:
                in_tag = True
            elif o is END_TAG:
                in_tag = False
            elif t is Tag and o.text:
                return True
        return False

    @staticmethod
    def _ends_in_newline(out: list[Any]) -> bool:
        for k in range(len(out) - 1, -1, -1):
            o = out[k]
            if type(o) is str:
                if o == "\n":
                    return True
                if o.strip(" \t"):
                    return False
            elif o is BEGIN_STR or o is BEGIN_TAG or o is END_TAG:
                return False
        return False

    @staticmethod
    def _last_newline(out: list[Any]) -> int:
        for k in range(len(out) - 1, -1, -1):
            if out[k] == "\n" and type(out[k]) is str:
                return k
        return -1

    # -- one step's object, the general path (Ink's PerformLogicAndFlowControl) -------------------------
    def _step_object(self, obj: tuple[Any, ...], op: int, el: Element) -> None:
        """Perform the instruction ``obj`` (opcode ``op``) at ``el``'s position (not moving on)."""
        if op == DIVERT:
            if not obj[2] or self._truthy(self.eval.pop()):
                d = obj[1][0]
                self.diverted = (d.container, d.index)
        elif op == OUT:
            if self.eval:
                v = self.eval.pop()
                if v is not VOID:
                    self._push_out(value_text(v))
        elif op == PUSH:
            v = obj[1]
            if type(v) is list:  # a divert target value (resolved once)
                v = v[0]
            elif type(v) is VarPointer and v.ci == -1:  # its context: this element's temporary, or global
                v = VarPointer(v.name, len(self.threads[-1].stack) if v.name in el.temps else 0)
            if el.in_expr:
                self.eval.append(v)
            else:
                self._push_out(value_text(v) if type(v) is not str else v)
        elif op == CHOICE:
            self._choice_point(obj)
        elif op == STR or op == FAST_STR:  # a fused literal outside evaluation runs as compiled
            self._push_out_obj(BEGIN_STR)
            self._str_open += 1
            el.in_expr = False
        elif op == STR_END:
            self._end_string()
        elif op == ASSIGN:
            self._assign(obj[1], obj[2], obj[3], self.eval.pop())
        elif op == EXTERNAL:
            if not obj[3] or self._truthy(self.eval.pop()):
                self._call_external(obj[1], obj[2])
        elif op in (CALL, TUNNEL):
            if not obj[2] or self._truthy(self.eval.pop()):
                d = obj[1][0]
                self.diverted = (d.container, d.index)
                self._push_frame(FUNCTION_T if op == CALL else TUNNEL_T)
        elif op == VAR_DIVERT:
            if not obj[2] or self._truthy(self.eval.pop()):
                self._var_divert(obj[1], obj[3])
        else:
            self._command(op, el)

    def _command(self, op: int, el: Element) -> None:
        """The control commands other than the most frequent ones."""
        ev = self.eval
        if op == NOP:
            return
        if op == EXPR:  # a fused evaluation runs in the inner lane; here, as the ``ev`` it starts with
            el.in_expr = True
        elif op == POP:
            ev.pop()
        elif op == DUP:
            ev.append(ev[-1])
        elif op == GLUE_OP:
            self._push_out_obj(GLUE)
        elif op == TAG_BEGIN or op == TAG_TEXT:  # a fused tag that could not run in the lane: its ``#``
            self._push_out_obj(BEGIN_TAG)
        elif op == TAG_END:
            if self._str_open:
                self._end_tag_in_string()
            else:
                self._push_out_obj(END_TAG)
        elif op == RET_FUNC or op == RET_TUNNEL:
            override = None
            if op == RET_TUNNEL:
                popped = ev.pop()
                if isinstance(popped, DivertTarget):
                    override = popped
            if el.type == FROM_GAME_T:
                self._exit_from_game()
                return
            want = FUNCTION_T if op == RET_FUNC else TUNNEL_T
            stack = self.threads[-1].stack
            if el.type != want or len(stack) <= 1:
                names = {FUNCTION_T: "function return statement (~ return)",
                         TUNNEL_T: "tunnel onwards statement (->->)"}
                expected = names.get(el.type, "?") if len(stack) > 1 else "end of flow (-> END or choice)"
                raise InkVmError(f"Found {names[want]}, when expected {expected}")
            self._pop_callstack()
            if override is not None:
                self.diverted = (override.container, override.index)  # type: ignore[assignment]
        elif op == CHOICE_CNT:
            ev.append(len(self._choices))
        elif op == TURN:
            ev.append(self.turn + 1)
        elif op == TURNS_SINCE or op == READC:
            target = ev.pop()
            if not isinstance(target, DivertTarget):
                raise InkVmError(f"TURNS_SINCE expected a divert target (knot, stitch, label name), but saw {target}")
            cont = target.container if target.index == 0 else None
            if cont is None and target.container is not None:
                obj = target.container.content[target.index] if target.index < len(target.container.content) else None
                cont = obj if isinstance(obj, Container) else None
            if cont is None:
                ev.append(-1 if op == TURNS_SINCE else 0)
            elif op == TURNS_SINCE:
                ev.append(self._turns_since(cont))
            else:
                ev.append(self._visit_count(cont))
        elif op == RND:
            hi, lo = ev.pop(), ev.pop()
            if type(lo) is not int or type(hi) is not int:
                raise InkVmError("Invalid value for the parameters of RANDOM(min, max)")
            span = hi - lo + 1
            if span <= 0:
                raise InkVmError(f"RANDOM was called with minimum as {lo} and maximum as {hi}. "
                                 "The maximum must be larger")
            rng = StdRng((self.seed + self.prev_random) & _M64)
            ev.append(rng.next_u32() % span + lo)
            self.prev_random += 1
        elif op == SRND:
            seed = ev.pop()
            if type(seed) is not int:
                raise InkVmError("Invalid value passed to SEED_RANDOM")
            self.seed, self.prev_random = seed, 0
            ev.append(VOID)
        elif op == VISIT:
            ev.append(self._visit_count(el.container) - 1)
        elif op == SEQ:
            ev.append(self._shuffle_index(el.container))  # type: ignore[arg-type]
        elif op == THREAD:
            return  # after the pointer moves on (_step)
        elif op == DONE:
            if len(self.threads) > 1 and el.type != FROM_GAME_T:
                self.threads.pop()
            else:
                self.did_safe_exit = True
                el.container, el.index = None, -1
        elif op == END:
            self._force_end()
        elif op == TAG_OBJ:
            raise InkVmError("unexpected tag object")
        else:
            raise InkVmError(f"unhandled instruction {op}")

    def _shuffle_index(self, seq: Container) -> int:
        ev = self.eval
        n = ev.pop()
        count = ev.pop()
        if type(n) is not int or type(count) is not int or n <= 0:
            raise InkVmError("expected number of elements in sequence for shuffle index")
        loop, iteration = divmod(count, n)
        seed = sum(ord(ch) for ch in seq.path) + loop + self.seed
        rng = StdRng(seed & _M64)
        unpicked = list(range(n))
        for k in range(iteration + 1):
            chosen = rng.next_i32() % len(unpicked)  # rem_euclid: Python's % on a positive modulus
            index = unpicked.pop(chosen)
            if k == iteration:
                return index
        raise InkVmError("Should never reach here")

    # -- moving on (NextContent, IncrementContentPointer, visits) -------------------------------------
    def _next_content(self) -> None:
        thread = self.threads[-1]
        el = thread.stack[-1]
        thread.prev_container, thread.prev_index = el.container, el.index
        d = self.diverted
        if d is not None:
            el.container, el.index = d
            self.diverted = None
            self._visit_changed()
            if el.container is not None:
                return
        # increment
        c, i = el.container, el.index + 1
        ok = True
        if c is not None:
            while i >= len(c.content):
                ok = False
                parent = c.parent
                if parent is None or c.index < 0:
                    break
                c, i = parent, c.index + 1
                ok = True
        if ok and c is not None:
            el.container, el.index = c, i
            return
        el.container, el.index = None, -1
        stack = thread.stack
        popped = False
        if len(stack) > 1 and el.type == FUNCTION_T:
            self._pop_callstack()
            if self.el.in_expr:
                self.eval.append(VOID)
            popped = True
        elif len(self.threads) > 1 and el.type != FROM_GAME_T:
            self.threads.pop()
            popped = True
        elif el.type == FROM_GAME_T:
            self._exit_from_game()
        if popped and self.el.container is not None:
            self._next_content()

    def _exit_from_game(self) -> None:
        el = self.el
        el.container, el.index = None, -1
        self.did_safe_exit = True

    def _visit(self, c: Container, at_start: bool) -> None:
        if not c.start_only or at_start:
            journal = self._journal
            if c.visits:
                counts = self.counts
                old = counts.get(c, 0)
                if journal is not None:
                    journal.append((counts, c, old if c in counts else _MISSING))
                counts[c] = old + 1
            if c.turns:
                if journal is not None:
                    journal.append((self.turns_at, c, self.turns_at.get(c, _MISSING)))
                self.turns_at[c] = self.turn

    def _visit_changed(self) -> None:
        """Count the containers a divert entered (Ink's VisitChangedContainersDueToDivert)."""
        thread = self.threads[-1]
        el = thread.stack[-1]
        c, i = el.container, el.index
        if c is None or i < 0:
            return
        pc = thread.prev_container
        p: Container | None = None  # the previous content's container: the walk stops at one above it
        if pc is not None:
            pi = thread.prev_index
            pobj = pc.content[pi] if 0 <= pi < len(pc.content) else (pc if pi < 0 or not pc.content else None)
            p = pobj if type(pobj) is Container else pc
        if not c.content:
            child: Any = c
            anc = c.parent
            at_start = anc is not None and bool(anc.content) and anc.content[0] is c
        elif i < len(c.content):
            child, anc = c.content[i], c
            at_start = i == 0
        else:
            return
        all_start = True
        first = True
        while anc is not None:
            if p is not None:  # is anc p or above p? (p climbs to anc's depth; containers form a tree)
                depth = anc.depth
                while p is not None and p.depth > depth:
                    p = p.parent
                if p is anc and not anc.start_only:
                    break
            entering = (at_start if first else bool(anc.content) and anc.content[0] is child) and all_start
            first = False
            if not entering:
                all_start = False
            if anc.visits or anc.turns:
                self._visit(anc, entering)
            child, anc = anc, anc.parent

    def _visit_count(self, c: Container | None) -> int:
        if c is None:
            return 0
        if not c.visits:
            raise InkVmError(f"Read count for target ({c.name or c.path}) unknown.")
        return self.counts.get(c, 0)

    def _turns_since(self, c: Container) -> int:
        if not c.turns:
            raise InkVmError(f"TURNS_SINCE() for target ({c.name or c.path}) unknown.")
        at = self.turns_at.get(c)
        return -1 if at is None else self.turn - at

    def _choose(self, c: Container | None, index: int, turn: bool) -> None:
        """Ink's ChoosePath: choices cleared, the pointer set, the turn counted, entered containers visited."""
        self._choices = []
        el = self.el
        el.container, el.index = c, max(index, 0)
        if turn:
            self.turn += 1
        self._visit_changed()

    def _force_end(self) -> None:
        t = Thread(0)
        t.stack.append(Element(TUNNEL_T, self.root, 0))
        self.threads = [t]
        self._choices = []
        el = self.el
        el.container, el.index = None, -1
        self.did_safe_exit = True

    # -- call stack --------------------------------------------------------------------------------
    def _push_frame(self, kind: int) -> None:
        stack = self.threads[-1].stack
        top = stack[-1]
        e = Element(kind, top.container, top.index)
        e.fstart = len(self.out)
        stack.append(e)

    def _pop_callstack(self) -> None:
        stack = self.threads[-1].stack
        if stack[-1].type == FUNCTION_T:
            self._trim_function_end()
        if len(stack) <= 1:
            raise InkVmError("Mismatched push/pop in Callstack")
        stack.pop()

    def _push_thread(self) -> None:
        t = self.threads[-1].copy()
        self.thread_counter += 1
        t.index = self.thread_counter
        self.threads.append(t)

    def _fork_thread(self) -> Thread:
        t = self.threads[-1].copy()
        self.thread_counter += 1
        t.index = self.thread_counter
        return t

    def _follow_invisible_default(self) -> None:
        choices = self._choices
        if not choices:
            return
        for c in choices:
            if not c.invisible:
                return
        c = choices[0]
        self.threads = [c.thread.copy()]
        if self._snap is not None:
            self.threads = [self._fork_thread()]
        self._choose(c.target.container, c.target.index, False)

    # -- the output stream (StoryState.PushToOutputStream and its trimming) ----------------------------
    def _push_out(self, text: str) -> None:
        """Push text, its leading and trailing newlines split out (Ink's TrySplittingHeadTailWhitespace)."""
        if "\n" not in text or text == "\n":
            self._push_text(text)
            return
        n = len(text)
        head_first = head_last = -1
        for k in range(n):
            ch = text[k]
            if ch == "\n":
                if head_first == -1:
                    head_first = k
                head_last = k
            elif ch != " " and ch != "\t":
                break
        tail_last = tail_first = -1
        for k in range(n - 1, -1, -1):
            ch = text[k]
            if ch == "\n":
                if tail_last == -1:
                    tail_last = k
                tail_first = k
            elif ch != " " and ch != "\t":
                break
        if head_first == -1 and tail_last == -1:
            self._push_text(text)
            return
        inner_start, inner_end = 0, n
        if head_first != -1:
            if head_first > 0:
                self._push_text(text[:head_first])
            self._push_text("\n")
            inner_start = head_last + 1
        if tail_last != -1:
            inner_end = tail_first
        if inner_end > inner_start:
            self._push_text(text[inner_start:inner_end])
        if tail_last != -1 and tail_first > head_last:
            self._push_text("\n")
            if tail_last < n - 1:
                self._push_text(text[tail_last + 1:])

    def _push_text(self, text: str) -> None:
        self._outv += 1
        out = self.out
        el = self.threads[-1].stack[-1]
        fn_trim = el.fstart if el.type == FUNCTION_T else -1
        glue_trim = -1
        if GLUE in out or fn_trim >= 0:
            for k in range(len(out) - 1, -1, -1):
                o = out[k]
                if o is GLUE:
                    glue_trim = k
                    break
                if o is BEGIN_STR:
                    if k >= fn_trim:
                        fn_trim = -1
                    break
        if glue_trim != -1 and fn_trim != -1:
            trim = min(fn_trim, glue_trim)
        else:
            trim = glue_trim if glue_trim != -1 else fn_trim
        if trim != -1:
            if text == "\n":
                return
            if text.strip(" \t"):  # non-whitespace: trimming is over
                if glue_trim > -1:
                    self._remove_glue()
                if fn_trim > -1:
                    for e in reversed(self.threads[-1].stack):
                        if e.type == FUNCTION_T:
                            e.fstart = -1
                        else:
                            break
        elif text == "\n":
            if self._ends_in_newline(out):
                return
            for o in out:
                if type(o) is str:
                    break
            else:  # no text yet: a newline would start the stream
                return
        out.append(text)

    def _push_out_obj(self, obj: Any) -> None:
        """Push a marker (glue, the start of a string or a tag) or a tag object."""
        self._outv += 1
        if obj is GLUE:
            self._trim_newlines()
        self.out.append(obj)

    def _trim_newlines(self) -> None:
        self._outv += 1
        out = self.out
        start = -1
        k = len(out) - 1
        while k >= 0:
            o = out[k]
            if o is BEGIN_STR or o is BEGIN_TAG or o is END_TAG:
                break
            if type(o) is str:
                if o == "\n":
                    start = k
                elif o.strip(" \t"):
                    break
            k -= 1
        if start >= 0:
            self.out = out[:start] + [o for o in out[start:] if type(o) is not str]

    def _remove_glue(self) -> None:
        self._outv += 1
        out = self.out
        for k in range(len(out) - 1, -1, -1):
            o = out[k]
            if o is GLUE:
                del out[k]
            elif o is BEGIN_STR or o is BEGIN_TAG or o is END_TAG:
                break

    def _trim_function_end(self) -> None:
        self._outv += 1
        el = self.el
        start = el.fstart if el.fstart != -1 else 0
        out = self.out
        k = len(out) - 1
        while k >= start:
            o = out[k]
            if type(o) is str:
                if o == "\n" or not o.strip(" \t"):
                    del out[k]
                else:
                    break
            k -= 1

    def _end_string(self) -> None:
        self._outv += 1
        out = self.out
        k = len(out) - 1
        while k >= 0 and out[k] is not BEGIN_STR:
            k -= 1
        parts = out[k + 1:]
        del out[max(k, 0):]
        self._str_open -= 1
        for o in parts:
            if type(o) is Tag:
                self._push_out_obj(o)
        self.el.in_expr = True
        self.eval.append("".join(o for o in parts if type(o) is str))

    def _end_tag_in_string(self) -> None:
        """``/#`` while a choice's text is evaluated: the tag goes onto the evaluation stack."""
        self._outv += 1
        out = self.out
        k = len(out) - 1
        parts: list[str] = []
        while k >= 0:
            o = out[k]
            if o is BEGIN_TAG:
                break
            if o is BEGIN_STR or o is END_TAG:
                raise InkVmError("Unexpected ControlCommand while extracting tag from choice")
            if type(o) is str:
                parts.append(o)
            k -= 1
        del out[max(k, 0):]
        self.eval.append(Tag(clean_whitespace("".join(reversed(parts)))))

    # -- variables ------------------------------------------------------------------------------------
    def _get_var(self, name: str) -> Any:
        v = self.globals.get(name)
        if v is None:
            v = self.defaults.get(name)
            if v is None:
                v = self.el.temps.get(name)
                if v is None:
                    raise InkVmError(f"Variable not found: '{name}'")
        if type(v) is VarPointer:
            v = self._deref(v)
        return v

    def _raw(self, name: str, ci: int) -> Any:
        if ci in (0, -1):
            v = self.globals.get(name, self.defaults.get(name))
            if v is not None:
                return v
        stack = self.threads[-1].stack
        e = stack[-1] if ci == -1 else stack[ci - 1] if 0 < ci <= len(stack) else None
        return e.temps.get(name) if e is not None else None

    def _deref(self, p: VarPointer) -> Any:
        v = self._raw(p.name, p.ci)
        if type(v) is VarPointer:
            return self._deref(v)
        if v is None:
            raise InkVmError(f"Variable not found: '{p.name}'")
        return v

    def _assign(self, name: str, is_global: bool, new: bool, value: Any) -> None:
        ci = -1
        if new:
            set_global = is_global
            if type(value) is VarPointer:
                value = self._resolve_pointer(value)
        else:
            set_global = name in self.globals or name in self.defaults
            while True:
                existing = self._raw(name, ci)
                if type(existing) is not VarPointer:
                    break
                name, ci = existing.name, existing.ci
                set_global = ci == 0
        if set_global:
            self._set_global(name, value)
            return
        stack = self.threads[-1].stack
        e = stack[-1] if ci == -1 else stack[ci - 1]
        if not new and name not in e.temps:
            raise InkVmError(f"Could not find temporary variable to set: {name}")
        e.temps[name] = value

    def _resolve_pointer(self, p: VarPointer) -> VarPointer:
        ci = p.ci
        if ci == -1:
            ci = 0 if (p.name in self.globals or p.name in self.defaults) else len(self.threads[-1].stack) - 1
        v = self._raw(p.name, ci)
        if type(v) is VarPointer:
            return v
        return VarPointer(p.name, ci)

    def _set_global(self, name: str, value: Any) -> None:
        if self._journal is not None:
            self._journal.append((self.globals, name, self.globals.get(name, _MISSING)))
        self.globals[name] = value
        if name in self._observers:
            self._changed[name] = value

    @staticmethod
    def _truthy(v: Any) -> bool:
        t = type(v)
        if t is bool or t is int or t is float:
            return bool(v != 0)
        if t is str:
            return len(v) > 0
        if t is DivertTarget:
            raise InkVmError(f"Shouldn't use a divert target (to {v.path}) as a conditional value.")
        return False

    def _var_divert(self, name: str, op: int) -> None:
        v = self._get_var(name)
        if not isinstance(v, DivertTarget):
            raise InkVmError(f"Tried to divert to a target from a variable, but the variable ({name}) didn't "
                             f"contain a divert target, it contained '{value_text(v)}'.")
        self.diverted = (v.container, v.index)  # type: ignore[assignment]
        if op != DIVERT:
            self._push_frame(FUNCTION_T if op == CALL else TUNNEL_T)

    # -- native functions (NativeFunctionCall) ------------------------------------------------------------
    def _native(self, name: str, n: int) -> None:
        ev = self.eval
        if n == 2:
            b = ev.pop()
            a = ev.pop()
            ev.append(_binary(name, a, b))
        else:
            ev.append(_unary(name, ev.pop()))

    # -- choices -------------------------------------------------------------------------------------------
    def _choice_point(self, obj: tuple[Any, ...]) -> None:
        _, slot, flags, source = obj
        ev = self.eval
        show = True
        if flags & 1:
            v = ev.pop()
            if not (v != 0 if type(v) is bool or type(v) is int else self._truthy(v)):
                show = False
        if flags & 6:
            start = only = ""
            tags: list[str] | None = None
            if flags & 4:
                only = ev.pop()
                if ev and type(ev[-1]) is Tag or type(only) is not str:
                    ev.append(only)
                    only, tags = self._pop_choice_string(tags)
            if flags & 2:
                start, tags = self._pop_choice_string(tags)
            text = start + only if flags & 6 == 6 else start or only
        else:
            text, tags = "", None
        target: DivertTarget = slot[0]
        if flags & 16 and target.index == 0 and self._visit_count(target.container) > 0:
            show = False
        if not show:
            return
        self.thread_counter += 1
        self._choices.append(Choice(text.strip(" \t"), tags or [], target, source, bool(flags & 8), None,
                                    _freeze(self.threads[-1], self.thread_counter)))

    def _pop_choice_string(self, tags: list[str] | None) -> tuple[str, list[str] | None]:
        ev = self.eval
        text = ev.pop()
        while ev and type(ev[-1]) is Tag:
            if tags is None:
                tags = []
            tags.insert(0, ev.pop().text)
        return (text if type(text) is str else value_text(text)), tags

    # -- external functions ---------------------------------------------------------------------------------
    def _call_external(self, name: str, nargs: int) -> None:
        """Call ``EXTERNAL name`` (one not lookahead-safe waits while Ink looks past a newline)."""
        found = self._externals.get(name)
        if found is not None and not found[1]:
            if self._str_open:
                raise InkVmError(f"External function {name} could not be called because 1) it wasn't marked as "
                                 "lookaheadSafe when BindExternalFunction was called and 2) the story is in the "
                                 "middle of string generation")
            if self._snap is not None:
                self._saw_unsafe = True
                return
        if found is None:
            fallback = self.root.named.get(name)
            if not self.allow_fallbacks or fallback is None:
                raise InkVmError(f"Trying to call EXTERNAL function '{name}' which has not been bound")
            self._push_frame(FUNCTION_T)
            self.diverted = (fallback, 0)
            return
        ev = self.eval
        if nargs == 1:  # the scene hook and most calls
            result = found[0](name, self._export(ev.pop()))
        else:
            args = [self._export(ev.pop()) for _ in range(nargs)]
            args.reverse()
            result = found[0](name, *args)
        if result is None:
            ev.append(VOID)
        elif isinstance(result, bool | int | str):
            ev.append(result)
        elif isinstance(result, float):
            ev.append(f32(result))
        else:
            ev.append(str(result))

    # -- saving (Ink's save format, inkSaveVersion 10) ----------------------------------------------------
    def save_state(self) -> str:
        """The state as Ink's save JSON (what bink's ``save_state`` writes; bink loads it)."""
        choice_threads: dict[str, Any] = {}
        choices = []
        for c in self._choices:
            choice_threads[str(c.thread_index)] = self._thread_json(c.thread)
            choices.append({"text": c.text, "index": 0, "originalChoicePath": c.source,
                            "originalThreadIndex": c.thread_index, "targetPath": c.target.path,
                            "tags": list(c.tags)})
        flow: dict[str, Any] = {"callstack": {"threads": [self._thread_json(t) for t in self.threads],
                                              "threadCounter": self.thread_counter},
                                "outputStream": [self._object_json(o) for o in self.out],
                                "currentChoices": choices}
        if choice_threads:
            flow["choiceThreads"] = choice_threads
        doc = {"flows": {"DEFAULT_FLOW": flow}, "currentFlowName": "DEFAULT_FLOW",
               "variablesState": {k: self._value_json(v) for k, v in self.globals.items()
                                  if not _same(v, self.defaults.get(k))},
               "evalStack": [self._value_json(v) for v in self.eval],
               "visitCounts": {c.path: n for c, n in self.counts.items()},
               "turnIndices": {c.path: n for c, n in self.turns_at.items()},
               "turnIdx": self.turn, "storySeed": self.seed, "previousRandom": self.prev_random,
               "inkSaveVersion": 10, "inkFormatVersion": 21}
        return _SAVE_ENCODER.encode(doc)

    def _thread_json(self, t: Thread) -> dict[str, Any]:
        stack = []
        for e in t.stack:
            item: dict[str, Any] = {"exp": e.in_expr, "type": e.type}
            if e.container is not None:
                item["cPath"], item["idx"] = e.container.path, e.index
            if e.temps:
                item["temp"] = {k: self._value_json(v) for k, v in e.temps.items()}
            stack.append(item)
        out: dict[str, Any] = {"callstack": stack, "threadIndex": t.index}
        if t.prev_container is not None:
            pc, pi = t.prev_container, t.prev_index
            obj = pc.content[pi] if 0 <= pi < len(pc.content) else None
            if pi < 0 or type(obj) is Container:
                out["previousContentObject"] = (obj if type(obj) is Container else pc).path
            else:
                out["previousContentObject"] = f"{pc.path}.{pi}" if pc.path else str(pi)
        return out

    def _value_json(self, v: Any) -> Any:
        t = type(v)
        if t is str:
            return "^" + v
        if t is bool or t is int or t is float:
            return v
        if t is DivertTarget:
            return {"^->": v.path}
        if t is VarPointer:
            return {"^var": v.name, "ci": v.ci}
        if v is VOID:
            return "void"
        if t is Tag:
            return {"#": v.text}
        raise RuntimeError(f"cannot save the value {v!r}")

    def _object_json(self, o: Any) -> Any:
        if type(o) is str:
            return "\n" if o == "\n" else "^" + o
        if o is GLUE:
            return "<>"
        if o is BEGIN_STR:
            return "str"
        if o is BEGIN_TAG:
            return "#"
        if o is END_TAG:
            return "/#"
        return self._value_json(o)

    def load_state(self, text: str) -> None:
        """Load Ink's save JSON (this interpreter's or bink's).

        Raises:
            RuntimeError: not a save of this story (a path it names is not in the story).
        """
        try:
            doc = json.loads(text)
            flows = doc["flows"]
            flow = flows[doc.get("currentFlowName", "DEFAULT_FLOW")]
            counts = {self._container_at(p): int(n) for p, n in doc.get("visitCounts", {}).items()}
            turns = {self._container_at(p): int(n) for p, n in doc.get("turnIndices", {}).items()}
            defaults = self.defaults
            globals_ = dict(defaults)
            for k, v in doc.get("variablesState", {}).items():
                if k in defaults:
                    globals_[k] = self._value_from(v)
            cs = flow["callstack"]
            threads = [self._thread_from(t) for t in cs["threads"]]
            by_index = {t.index: t for t in threads}
            saved_threads = flow.get("choiceThreads", {})
            choices = []
            for c in flow.get("currentChoices", []):
                index = int(c["originalThreadIndex"])
                raw = saved_threads.get(str(index))
                thread = self._thread_from(raw) if raw is not None else by_index.get(index)
                if thread is None:
                    raise RuntimeError(f"no thread {index} for a saved choice")
                target = resolve_target(self.root, self.root, str(c["targetPath"]), self.where)
                choices.append(Choice(str(c["text"]), [str(t) for t in c.get("tags") or []], target,
                                      str(c.get("originalChoicePath", "")), False, thread))
            out = [self._stream_from(o) for o in flow.get("outputStream", [])]
            ev = [self._value_from(v) for v in doc.get("evalStack", [])]
        except RuntimeError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, InkScopeError) as exc:
            raise RuntimeError(f"not a save state of this story ({exc})") from exc
        self.counts, self.turns_at = counts, turns
        self.globals = globals_
        self.threads, self.thread_counter = threads, int(cs.get("threadCounter", 0))
        self._choices, self.out, self.eval = choices, out, ev
        self.turn = int(doc.get("turnIdx", -1))
        self.seed = int(doc.get("storySeed", 0))
        self.prev_random = int(doc.get("previousRandom", 0))
        self.diverted = None
        self.did_safe_exit = False
        self._snap = self._journal = None
        self._errors, self._changed = [], {}
        self._str_open = sum(1 for o in out if o is BEGIN_STR)

    def _container_at(self, path: str) -> Container:
        if not path:
            return self.root
        obj, _ = _content_at(self.root, self.root, path.split("."))
        if not isinstance(obj, Container):
            raise RuntimeError(f"When loading state, internal story location couldn't be found: {path}")
        return obj

    def _thread_from(self, raw: dict[str, Any]) -> Thread:
        t = Thread(int(raw.get("threadIndex", 0)))
        for item in raw["callstack"]:
            cpath = item.get("cPath")
            c = self._container_at(str(cpath)) if cpath is not None else None
            e = Element(int(item["type"]), c, int(item.get("idx", 0)) if c is not None else -1, bool(item["exp"]))
            e.temps = {k: self._value_from(v) for k, v in (item.get("temp") or {}).items()}
            t.stack.append(e)
        prev = raw.get("previousContentObject")
        if isinstance(prev, str):
            comps = prev.split(".")
            if comps[-1].lstrip("-").isdigit():
                t.prev_container, t.prev_index = self._container_at(".".join(comps[:-1])), int(comps[-1])
            else:
                t.prev_container, t.prev_index = self._container_at(prev), -1
        return t

    def _value_from(self, v: Any) -> Any:
        if isinstance(v, bool | int):
            return v
        if isinstance(v, float):
            return f32(v)
        if isinstance(v, str):
            if v.startswith("^"):
                return v[1:]
            if v == "\n":
                return "\n"
            if v == "void":
                return VOID
        if isinstance(v, dict):
            if "^->" in v:
                return resolve_target(self.root, self.root, str(v["^->"]), self.where)
            if "^var" in v:
                return VarPointer(str(v["^var"]), int(v.get("ci", -1)))
            if "#" in v:
                return Tag(str(v["#"]))
        raise RuntimeError(f"cannot load the saved value {v!r}")

    def _stream_from(self, o: Any) -> Any:
        markers = {"<>": GLUE, "str": BEGIN_STR, "#": BEGIN_TAG, "/#": END_TAG}
        if isinstance(o, str) and o in markers:
            return markers[o]
        return self._value_from(o)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (a == b if not isinstance(a, VarPointer) else False)


# -- native functions ----------------------------------------------------------------------------------
def _rank(v: Any) -> int:
    t = type(v)
    if t is bool:
        return -1
    if t is int:
        return 0
    if t is float:
        return 1
    if t is str:
        return 3
    if t is DivertTarget:
        return 4
    if v is VOID:
        raise InkVmError("Attempting to perform an operation on a void value. Did you forget to 'return' a value "
                         "from a function you called here?")
    return 5


def _cast(v: Any, rank: int) -> Any:
    t = type(v)
    if rank == 0:
        return int(v) if t is bool else v
    if rank == 1:
        return float(v) if t is not float else v
    if rank == 3:
        return value_text(v)
    return v


def _idiv(a: int, b: int) -> int:
    if b == 0:
        raise InkVmError("Divide by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _imod(a: int, b: int) -> int:
    if b == 0:
        raise InkVmError("Divide by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _binary(name: str, a: Any, b: Any) -> Any:  # noqa: C901 (one table per type, as Ink's)
    ta, tb = type(a), type(b)
    if ta is int and tb is int:  # the common case
        if name == "+":
            return a + b
        if name == "-":
            return a - b
        if name == "==":
            return a == b
        if name == ">=":
            return a >= b
        if name == ">":
            return a > b
        if name == "<":
            return a < b
        if name == "<=":
            return a <= b
        if name == "!=":
            return a != b
    rank = max(0, _rank(a), _rank(b))
    a, b = _cast(a, rank), _cast(b, rank)
    op: Callable[[Any, Any], Any] | None
    if rank == 0:
        ops_int: dict[str, Callable[[int, int], Any]] = {
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": _idiv, "%": _imod,
            "==": lambda x, y: x == y, ">": lambda x, y: x > y, "<": lambda x, y: x < y,
            ">=": lambda x, y: x >= y, "<=": lambda x, y: x <= y, "!=": lambda x, y: x != y,
            "&&": lambda x, y: x != 0 and y != 0, "||": lambda x, y: x != 0 or y != 0,
            "MIN": min, "MAX": max, "POW": lambda x, y: f32(math.pow(x, y))}
        op = ops_int.get(name)
    elif rank == 1:
        ops_float: dict[str, Callable[[float, float], Any]] = {
            "+": lambda x, y: f32(x + y), "-": lambda x, y: f32(x - y), "*": lambda x, y: f32(x * y),
            "/": lambda x, y: f32(x / y) if y else (math.copysign(math.inf, x) if x else math.nan),
            "%": lambda x, y: f32(math.fmod(x, y)) if y else math.nan,
            "==": lambda x, y: x == y, ">": lambda x, y: x > y, "<": lambda x, y: x < y,
            ">=": lambda x, y: x >= y, "<=": lambda x, y: x <= y, "!=": lambda x, y: x != y,
            "&&": lambda x, y: x != 0 and y != 0, "||": lambda x, y: x != 0 or y != 0,
            "MIN": min, "MAX": max, "POW": lambda x, y: f32(math.pow(x, y))}
        op = ops_float.get(name)
    elif rank == 3:
        ops_str: dict[str, Callable[[str, str], Any]] = {
            "+": lambda x, y: x + y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
            "?": lambda x, y: y in x, "!?": lambda x, y: y not in x}
        op = ops_str.get(name)
    elif rank == 4:
        op = {"==": lambda x, y: x == y, "!=": lambda x, y: x != y}.get(name)
    else:
        op = None
    if op is None:
        raise InkVmError(f"Cannot perform operation '{name}' on these values")
    return op(a, b)


def _unary(name: str, a: Any) -> Any:
    rank = max(0, _rank(a))
    a = _cast(a, rank)
    if rank == 0:
        ops: dict[str, Callable[[Any], Any]] = {"_": lambda x: -x, "!": lambda x: x == 0, "FLOOR": lambda x: x,
                                                "CEILING": lambda x: x, "INT": lambda x: x, "FLOAT": float}
    elif rank == 1:
        ops = {"_": lambda x: -x, "!": lambda x: x == 0.0, "FLOOR": lambda x: float(math.floor(x)),
               "CEILING": lambda x: float(math.ceil(x)), "INT": lambda x: int(x), "FLOAT": lambda x: x}
    else:
        ops = {}
    op = ops.get(name)
    if op is None:
        raise InkVmError(f"Cannot perform operation '{name}' on this value")
    return op(a)


__all__ = ["BEGIN_TAG", "END_TAG", "Container", "InkScopeError", "InkVm", "InkVmError", "StdRng", "clean_whitespace",
           "compile_story", "float_text", "resolve_target", "split_line"]
