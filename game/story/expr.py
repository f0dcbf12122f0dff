"""The story expression language: one small, safe syntax for conditions and effects.

Conditions are expressions::

    has('kite') and trust('creature') >= 2
    visited('clearing') and not chosen('offer_leaf')
    weather == 'rain' or courage > 1

Effects are one statement each::

    courage += 1            # variable (declared in ``variables:``) or world key
    weather = 'rain'
    trust('creature') += 1  # relationship axis; also affinity(c), rel(c, axis)
    give('kite', 'creature')
    take('lantern')         # the player obtains an item
    drop('leaf')            # the player loses an item
    react('creature', 'leap')

Game mechanics add (docs/story-format.md, "Game mechanics")::

    role() == 'warden'          # the role the player took ('' before)
    left('tide') <= 3           # turns left on a running timer (-1: not running); running('tide')
    stage('lamp') == 'climb'    # a quest's stage ('' not started, 'done' complete); done('lamp')
    need('mara', 'cold') > 5    # an agent's need; at('mara') == 'quay'; goal('mara', 'boat')
    heard('oren', 'mara') >= 1  # lines a character heard another say
    become('warden')            # take a role (its effects and how characters take to it)
    start('tide'); stop('tide') # start (restart) or stop a timer
    quest('lamp'); advance('lamp')
    combine('oil', 'wick')      # use one held item on another by the story's recipes
    need('mara', 'cold') -= 3   # needs are assignable, like trust('c')

Both are parsed once at load (Python's ``ast`` parser, which only parses) and
evaluated by ``simpleeval`` with a fixed set of names and functions: never
Python ``eval``, no attribute access, no imports.
"""

from __future__ import annotations

import ast
import io
import operator
import threading
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from simpleeval import DEFAULT_OPERATORS, SimpleEval

from game import limits
from game.errors import ExpressionError
from game.words import counted

#: Functions conditions may call, with their arity.
CONDITION_FUNCTIONS: dict[str, int] = {
    "has": 1, "visited": 1, "chosen": 1, "trust": 1, "affinity": 1, "rel": 2,
    "holds": 2, "gave": 2, "world": 1, "random": 0, "turn": 0, "count": 1,
    "role": 0, "left": 1, "running": 1, "stage": 1, "done": 1, "need": 2, "at": 1, "goal": 2, "heard": 2,
}
#: Functions effects may call as statements, with their arity.
EFFECT_FUNCTIONS: dict[str, int] = {"give": 2, "take": 1, "drop": 1, "react": 2,
                                    "become": 1, "start": 1, "stop": 1, "quest": 1, "advance": 1, "combine": 2}
#: Relationship functions an effect may assign to, and the axis each names.
RELATION_TARGETS = {"trust": "trust", "affinity": "affinity", "rel": ""}
#: World keys conditions can read by name and effects can set.
WORLD_KEYS = ("weather", "time_of_day", "light", "season")
#: Longest expression accepted, characters (see :mod:`game.limits`).
MAX_EXPR_CHARS = limits.MAX_EXPR_CHARS


class UnknownFunction(ExpressionError):
    """An expression calls a function the language does not have there (a condition's
    ``hass('kite')``, an effect ``giv('kite', 'creature')``), a :class:`~game.errors.ExpressionError`
    whose name is a field, not only words in its message (lint's "did you mean 'has'?" reads it).

    Args:
        why, where, hint: as :class:`~game.errors.WorldloomError`.
        name: the name called (``"hass"``; ``"?"`` when what is called is not a plain name).
        known: the names that may be called there (:data:`CONDITION_FUNCTIONS` in a condition or
            an effect's arguments, :data:`EFFECT_FUNCTIONS` for an effect statement).
    """

    def __init__(self, why: str, where: str = "", hint: str = "", name: str = "",
                 known: Iterable[str] = ()) -> None:
        super().__init__(why, where, hint)
        self.name = name
        self.known: tuple[str, ...] = tuple(sorted(known))


class ExprEnv(Protocol):
    """What expressions read and change; the story runtime implements it."""

    def name(self, key: str) -> Any: ...
    def call(self, fn: str, args: tuple[Any, ...]) -> Any: ...
    def assign(self, target: Target, op: str, value: Any) -> None: ...
    def effect_call(self, fn: str, args: tuple[Any, ...]) -> None: ...


@dataclass(frozen=True)
class Target:
    """Where an assignment goes: a variable/world key, a relationship axis, or an agent's need."""

    kind: Literal["name", "relation", "need"]
    name: str  # variable name, or character id
    axis: str = ""


#: The node types an expression may contain (anything else is refused by :func:`_check_ast`).
_ALLOWED = frozenset((
    ast.Expression, ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call,
    ast.Name, ast.Constant, ast.Load, ast.And, ast.Or, ast.Not, ast.Add, ast.Sub, ast.Mult,
    ast.Div, ast.Mod, ast.FloorDiv, ast.USub, ast.UAdd, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.IfExp,
))


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` (``ast.walk``'s order), listed once for the checks below to share."""
    return list(ast.walk(tree))


def _check_ast(tree: ast.AST | list[ast.AST], src: str, where: str, functions: dict[str, int]) -> None:
    """Refuse what the expression language does not have (``tree``: a tree or its :func:`_nodes`)."""
    for node in (tree if isinstance(tree, list) else ast.walk(tree)):
        if type(node) not in _ALLOWED:
            raise ExpressionError(f"{type(node).__name__} is not allowed in {src!r}", where=where)
        if isinstance(node, ast.Constant):
            limits.check_number(node.value, where, ExpressionError, f"the number in {src!r}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in functions:
                name = node.func.id if isinstance(node.func, ast.Name) else "?"
                raise UnknownFunction(f"unknown function {name!r} in {src!r}", where=where,
                                      hint="known: " + ", ".join(sorted(functions)), name=name, known=functions)
            if node.keywords or len(node.args) != functions[node.func.id]:
                raise ExpressionError(
                    f"{node.func.id}() takes {counted(functions[node.func.id], 'argument')} in {src!r}",
                    where=where)


def _parse(src: str, mode: str, where: str) -> ast.AST:
    if len(src) > MAX_EXPR_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPR_CHARS} characters", where=where)
    try:
        return ast.parse(src.strip(), mode=mode)
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in {src!r}: {exc.msg}", where=where) from exc


@dataclass(frozen=True)
class Condition:
    """A compiled condition. ``names`` and ``calls`` list what it reads (for lint)."""

    src: str
    tree: ast.AST
    names: frozenset[str]
    calls: tuple[tuple[str, tuple[Any, ...]], ...]

    def __call__(self, env: ExprEnv) -> bool:
        return bool(_evaluate(self.tree, env))


def _const_calls(tree: ast.AST | list[ast.AST]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    out = []
    for node in (tree if isinstance(tree, list) else ast.walk(tree)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = tuple(a.value if isinstance(a, ast.Constant) else None for a in node.args)
            out.append((node.func.id, args))
    return tuple(out)


def _names(tree: ast.AST | list[ast.AST]) -> frozenset[str]:
    nodes = tree if isinstance(tree, list) else _nodes(tree)
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    return frozenset(n.id for n in nodes if isinstance(n, ast.Name) and id(n) not in called)


#: Values written the way YAML, JSON or Ink write them -> the expression language's spelling.
LITERALS = {"true": "True", "false": "False", "none": "None", "null": "None"}


def capitalised(src: str) -> str:
    """``src`` with each name of :data:`LITERALS` (any case but the right one) spelt as the language
    writes it: ``lit = true`` -> ``lit = True`` (names inside quotes are left as they are)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError):
        return src
    out: list[str] = []
    last = 0
    lines = src.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    for tok in tokens:
        value = LITERALS.get(tok.string.lower()) if tok.type == tokenize.NAME else None
        if value is not None and tok.string != value:
            at = starts[tok.start[0] - 1] + tok.start[1]
            out += [src[last:at], value]
            last = at + len(tok.string)
    return "".join(out) + src[last:]


def compile_condition(src: str, where: str = "") -> Condition:
    """Parse and check a condition once.

    Raises:
        ExpressionError: syntax error (``x = 1``, an assignment, is named as such with the
            ``==`` form to write), a construct outside the language, or an unknown function,
            naming ``where``.
    """
    try:
        tree = _parse(src, "eval", where)
    except ExpressionError:
        try:
            parts = _split_assignment(src, where)
        except ExpressionError:
            parts = None
        if parts is None or parts[1] != "=" or not parts[0] or not parts[2]:
            raise
        fixed = capitalised(f"{parts[0]} == {parts[2]}")
        raise ExpressionError(f"{src!r} assigns (=): a condition compares with ==, as in {fixed!r}; "
                              f"only an effect (do:, on_enter:) assigns", where=where) from None
    nodes = _nodes(tree)
    _check_ast(nodes, src, where, CONDITION_FUNCTIONS)
    return Condition(src, tree, _names(nodes), _const_calls(nodes))


@dataclass(frozen=True)
class Effect:
    """A compiled effect statement."""

    src: str
    kind: Literal["assign", "call"]
    target: Target | None
    op: str  # "=", "+=", "-=", "*=" for assigns; function name for calls
    value: ast.AST | None
    args: tuple[ast.AST, ...] = ()
    names: frozenset[str] = frozenset()
    calls: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def apply(self, env: ExprEnv) -> None:
        """Apply the effect to ``env``.

        Raises:
            ExpressionError: a name or function fails at run time, a relationship
                given something other than a number, or a value past a limit.
        """
        if self.kind == "call":
            env.effect_call(self.op, tuple(_evaluate(a, env) for a in self.args))
            return
        assert self.target is not None and self.value is not None
        value = _evaluate(self.value, env)
        if self.target.kind == "relation" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ExpressionError(f"{self.target.axis or 'rel'}({self.target.name!r}) is a number; "
                                  f"cannot {'set it to' if self.op == '=' else 'apply ' + self.op} {value!r}")
        env.assign(self.target, self.op, value)


def _target(node: ast.AST, src: str, where: str) -> Target:
    if isinstance(node, ast.Name):
        return Target("name", node.id)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in RELATION_TARGETS and not node.keywords
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)):
        args = [a.value for a in node.args if isinstance(a, ast.Constant)]
        fn = node.func.id
        if fn == "rel" and len(args) == 2:
            return Target("relation", str(args[0]), str(args[1]))
        if fn != "rel" and len(args) == 1:
            return Target("relation", str(args[0]), RELATION_TARGETS[fn])
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "need"
            and not node.keywords and len(node.args) == 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)):
        a, b = (x.value for x in node.args if isinstance(x, ast.Constant))
        return Target("need", str(a), str(b))
    raise ExpressionError(f"cannot assign to this target in {src!r}", where=where,
                          hint="assign to a variable, trust('c'), affinity('c'), rel('c', 'axis') or need('c', 'n')")


def _split_assignment(src: str, where: str) -> tuple[str, str, str] | None:
    """Split ``lhs OP rhs`` at the first top-level ``=``, ``+=``, ``-=`` or ``*=`` token."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(src.strip()).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise ExpressionError(f"syntax error in {src!r}: {exc}", where=where) from exc
    depth = 0
    line = src.strip()
    for tok in tokens:
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
            elif depth == 0 and tok.string in ("=", "+=", "-=", "*="):
                col = tok.start[1]
                return line[:col].strip(), tok.string, line[tok.end[1]:].strip()
    return None


def compile_effect(src: str, where: str = "") -> Effect:
    """Parse and check one effect statement once.

    Raises:
        ExpressionError: not a single allowed statement, naming ``where``.
    """
    if "\n" in src.strip() or ";" in src:
        raise ExpressionError(f"an effect is exactly one statement: {src!r}", where=where)
    parts = _split_assignment(src, where)
    if parts is not None:
        lhs, op, rhs = parts
        if not lhs or not rhs:
            raise ExpressionError(f"not an effect: {src!r}", where=where)
        lhs_tree = _parse(lhs, "eval", where)
        assert isinstance(lhs_tree, ast.Expression)
        target = _target(lhs_tree.body, src, where)
        rhs_tree = _parse(rhs, "eval", where)
        assert isinstance(rhs_tree, ast.Expression)
        value: ast.AST = rhs_tree.body
    else:
        tree = _parse(src, "eval", where)
        assert isinstance(tree, ast.Expression)
        call = tree.body
        if not isinstance(call, ast.Call):
            raise ExpressionError(f"not an effect: {src!r}", where=where,
                                  hint="use x = v, x += v, trust('c') += 1 or give('item', 'c')")
        if not isinstance(call.func, ast.Name) or call.func.id not in EFFECT_FUNCTIONS:
            name = call.func.id if isinstance(call.func, ast.Name) else "?"
            raise UnknownFunction(f"unknown effect {name!r} in {src!r}", where=where,
                                  hint="effects: " + ", ".join(sorted(EFFECT_FUNCTIONS)), name=name,
                                  known=EFFECT_FUNCTIONS)
        if call.keywords or len(call.args) != EFFECT_FUNCTIONS[call.func.id]:
            raise ExpressionError(
                f"{call.func.id}() takes {counted(EFFECT_FUNCTIONS[call.func.id], 'argument')} in {src!r}",
                where=where)
        for arg in call.args:
            _check_ast(ast.Expression(arg), src, where, CONDITION_FUNCTIONS)
        return Effect(src, "call", None, call.func.id, None, tuple(call.args),
                      frozenset().union(*(_names(a) for a in call.args)), _const_calls(call))
    nodes = _nodes(ast.Expression(value))  # type: ignore[arg-type]
    _check_ast(nodes, src, where, CONDITION_FUNCTIONS)
    calls = _const_calls(nodes)
    if target.kind == "relation":
        calls = ((("rel", (target.name, target.axis)),) + calls)
    elif target.kind == "need":
        calls = ((("need", (target.name, target.axis)),) + calls)
    return Effect(src, "assign", target, op, value, (), _names(nodes), calls)


def _whole(x: Any) -> bool:
    return isinstance(x, int)


def _bounded(value: Any) -> Any:
    """``value`` if it is one a save can hold (see :func:`game.limits.check_number`, ``check_text``)."""
    if isinstance(value, str):
        return limits.check_text(value, "", ExpressionError)
    return limits.check_number(value, "", ExpressionError, "the result")


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        limits.check_repeat(len(a) + len(b), 1, "", ExpressionError)
    return _bounded(a + b)


def _sub(a: Any, b: Any) -> Any:
    return _bounded(a - b)


def _mul(a: Any, b: Any) -> Any:
    """``a * b``, its size checked before it is made (text repeated, or two whole numbers)."""
    if isinstance(a, str) and _whole(b):
        limits.check_repeat(len(a), b, "", ExpressionError)
    elif isinstance(b, str) and _whole(a):
        limits.check_repeat(len(b), a, "", ExpressionError)
    elif _whole(a) and _whole(b) and a.bit_length() + b.bit_length() > limits.MAX_INT.bit_length() + 1:
        raise ExpressionError(f"{a} * {b} is past {limits.MAX_INT:,} (the largest whole number a save holds)")
    return _bounded(a * b)


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, str):  # printf-style formatting: '%0999999999d' % 1 would build a gigabyte
        raise ExpressionError("'%' on text (string formatting) is not part of the story language",
                              hint="write {variable} in a line's text instead")
    return _bounded(a % b)


def _div(a: Any, b: Any) -> Any:
    return _bounded(operator.truediv(a, b))


def _floordiv(a: Any, b: Any) -> Any:
    return _bounded(operator.floordiv(a, b))


#: simpleeval's operators with every arithmetic one bounded: no result past
#: ``game.limits.MAX_TEXT_CHARS`` or ``MAX_INT`` is ever built, and no float overflows.
_OPERATORS = {**DEFAULT_OPERATORS, ast.Add: _add, ast.Sub: _sub, ast.Mult: _mul, ast.Mod: _mod, ast.Div: _div,
              ast.FloorDiv: _floordiv}
_ASSIGN_OPS = {"+=": _add, "-=": _sub, "*=": _mul}


def combine(old: Any, op: str, value: Any) -> Any:
    """The new value of an assignment ``target OP value`` (``=``, ``+=``, ``-=``, ``*=``), bounded as
    conditions are (text at most ``game.limits.MAX_TEXT_CHARS``, whole numbers within ``MAX_INT``,
    floats finite), checked before the result is made.

    Raises:
        ExpressionError: an unknown operator, values it does not apply to, or a result past a limit.
    """
    if op == "=":
        return _bounded(value)
    fn = _ASSIGN_OPS.get(op)
    if fn is None:
        raise ExpressionError(f"unknown operator {op}")
    try:
        return fn(old, value)
    except TypeError as exc:
        raise ExpressionError(f"cannot apply {op} to {old!r} and {value!r}") from exc
    except (ArithmeticError, ValueError) as exc:
        raise ExpressionError(f"cannot apply {op} to {old!r} and {value!r}: {exc}") from exc


class _Evaluator(SimpleEval):  # type: ignore[misc]
    """simpleeval with our names and functions looked up through an ``ExprEnv``, arithmetic bounded."""

    def __init__(self) -> None:
        super().__init__(operators=_OPERATORS)


_LOCAL = threading.local()


def _evaluate(tree: ast.AST, env: ExprEnv) -> Any:
    evaluator = getattr(_LOCAL, "evaluator", None)
    if evaluator is None:
        evaluator = _LOCAL.evaluator = _Evaluator()
        # One table of functions per thread, calling whichever env is being evaluated now
        # (building a closure per function per evaluation cost more than the evaluation).
        evaluator.functions = {fn: _bound(fn) for fn in CONDITION_FUNCTIONS}

    def lookup(node: ast.Name) -> Any:
        return env.name(node.id)

    evaluator.names = lookup
    previous = getattr(_LOCAL, "env", None)
    _LOCAL.env = env
    try:
        return _run(evaluator, tree)
    finally:
        _LOCAL.env = previous


class _Constant:
    """The environment of a part of an expression that reads nothing (see :func:`constant_failure`)."""

    def name(self, key: str) -> Any:
        raise AssertionError("a constant part reads no name")  # pragma: no cover - only constant parts run

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        raise AssertionError("a constant part calls nothing")  # pragma: no cover

    def assign(self, target: Target, op: str, value: Any) -> None:
        raise AssertionError("a constant part assigns nothing")  # pragma: no cover

    def effect_call(self, fn: str, args: tuple[Any, ...]) -> None:
        raise AssertionError("a constant part has no effect")  # pragma: no cover


def _mark_pure(node: ast.AST, pure: dict[int, bool], nodes: list[ast.AST]) -> bool:
    """Whether ``node`` reads nothing (no name, no call anywhere in it), recorded for it and every
    node under it in ``pure`` (by ``id``), each node listed in ``nodes``: one pass, bottom-up."""
    reads = isinstance(node, ast.Name | ast.Call)
    for child in ast.iter_child_nodes(node):
        if not _mark_pure(child, pure, nodes):
            reads = True
    pure[id(node)] = not reads
    nodes.append(node)
    return not reads


def constant_failure(tree: ast.AST) -> ExpressionError | None:
    """The error a part of an expression raises *every* time it runs, or ``None``.

    Each largest part that reads no variable and calls no function is evaluated once,
    with the same bounded operators as play (so nothing big is ever built): a part past
    a limit of :mod:`game.limits` (``'x' * 10**9``), a division by zero, or text on the
    left of ``%`` (``'%0999999999d' % n``: string formatting, refused whatever ``n``
    holds) fails on every run, which lint reports (``WL024``) instead of the player
    meeting it.
    """
    node = tree.body if isinstance(tree, ast.Expression) else tree
    pure: dict[int, bool] = {}
    nodes: list[ast.AST] = []
    _mark_pure(node, pure, nodes)
    if not any((pure[id(n)] and isinstance(n, ast.expr) and not isinstance(n, ast.Constant))
               or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)) for n in nodes):
        return None  # nothing to run: no part but literals reads nothing, and no ``%``
    return _failure(node, pure)


def _failure(node: ast.AST, pure: dict[int, bool]) -> ExpressionError | None:
    """:func:`constant_failure` of ``node``, with ``pure`` from :func:`_mark_pure`."""
    if not isinstance(node, ast.expr) or isinstance(node, ast.Constant | ast.Name):
        return None  # an operator, a context, a literal or a name: nothing to run
    if pure[id(node)]:
        try:
            _evaluate(node, _Constant())
        except ExpressionError as exc:
            return exc
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and pure[id(node.left)]:
        try:
            left = _evaluate(node.left, _Constant())
            if isinstance(left, str):
                _mod(left, 0)
        except ExpressionError as exc:
            return exc
    for child in ast.iter_child_nodes(node):
        found = _failure(child, pure)
        if found is not None:
            return found
    return None


def _bound(fn: str) -> Callable[..., Any]:
    return lambda *args: _LOCAL.env.call(fn, args)


def _run(evaluator: _Evaluator, tree: ast.AST) -> Any:
    node = tree.body if isinstance(tree, ast.Expression) else tree
    try:
        return evaluator._eval(node)
    except ExpressionError:
        raise
    except Exception as exc:  # simpleeval raises its own errors for bad names/ops
        raise ExpressionError(f"cannot evaluate {ast.unparse(node)!r}: {exc}") from exc
