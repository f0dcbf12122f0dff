"""`worldloom map`: draw a story's scene graph as ``.dot``, ``.svg`` or ``.png``.

Nodes are scenes (title and id); edges are choices (the choice text, and its
condition when it has one), exits (``[d] exit``), actions (``say: keyword``) and
gift reactions that ``goto`` somewhere. Choices and actions that stay in their
scene are drawn as loops on it. Endings have a double border and a gold fill,
the start scene a thick border; scenes the start cannot reach (through any goto,
conditions ignored, as lint's WL005) are red and dashed, and targets that are
not declared scenes appear as pink "missing" notes with a solid red border (the
legend says so, and ``worldloom map`` names each such goto and exits 1, as lint's
WL001 error does). With coverage (``--coverage``
runs :mod:`game.story.explorer`), what was reached is green and what was not is
grey and dashed.

Rendering uses graphviz's ``dot`` binary (run with an argument list, never a
shell) when it is installed; without it (or when it fails) a pure-Python
layered layout is drawn with Pillow (``.png``) or written as SVG text. ``.dot``
output needs neither.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import textwrap
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from PIL import Image, ImageDraw, ImageFont

from game.errors import WorldloomError
from game.story.lint import reachable
from game.story.loader import load_story
from game.story.story import Story
from game.story.yamlio import Path_
from game.words import agree, counted

EdgeKind = Literal["choice", "exit", "action", "gift"]
Engine = Literal["auto", "dot", "builtin"]
FORMATS = ("dot", "svg", "png")
#: Widest a label line may be before it wraps, characters.
LABEL_WRAP = 28
#: Longest label kept, characters (longer ones end in an ellipsis).
LABEL_MAX = 90
#: Seconds ``dot`` may take before the built-in layout is used instead.
DOT_TIMEOUT_S = 120

COLOURS = {
    "ink": "#263238", "node": "#ffffff", "ending": "#fff3c4", "ending_border": "#b8860b",
    "unreachable": "#d32f2f", "missing": "#ffebee", "reached": "#c8e6c9", "reached_edge": "#2e7d32",
    "unreached": "#eeeeee", "unreached_edge": "#b0b0b0", "unreached_text": "#757575",
    "choice": "#37474f", "exit": "#1565c0", "action": "#6a1b9a", "gift": "#ef6c00",
}


class MapError(WorldloomError):
    """The map cannot be written (unknown format, unwritable file)."""


@dataclass(frozen=True)
class MapNode:
    """A scene on the map.

    Attributes:
        id: scene id (or the missing target's id).
        title: scene title (may be empty).
        ending: ending name, or ``""``.
        start: the story's start scene.
        unreachable: no chain of gotos/exits leads here from the start.
        missing: a goto target that is not a declared scene.
        reached: with coverage: whether the explorer entered it; else ``None``.
    """

    id: str
    title: str = ""
    ending: str = ""
    start: bool = False
    unreachable: bool = False
    missing: bool = False
    reached: bool | None = None

    @property
    def label(self) -> str:
        head = f"missing: {self.id}" if self.missing else (f"{self.title}\n({self.id})" if self.title else self.id)
        return head + (f"\nending: {self.ending}" if self.ending else "")


@dataclass(frozen=True)
class MapEdge:
    """A way from one scene to another (or back to itself).

    Attributes:
        src, dst: scene ids (``src == dst`` for a choice or action that stays).
        kind: ``choice``, ``exit``, ``action`` or ``gift``.
        text: what the player does (choice text, ``[d] exit``...).
        condition: the ``if:`` source, or ``""``.
        path: the reaction's source path (for coverage and file:line).
        reached: with coverage: whether it ran; else ``None``.
    """

    src: str
    dst: str
    kind: EdgeKind
    text: str
    condition: str = ""
    path: Path_ = ()
    reached: bool | None = None

    @property
    def label(self) -> str:
        text = _shorten(self.text)
        return text + (f"\n[if {_shorten(self.condition)}]" if self.condition else "")


@dataclass
class StoryMap:
    """The graph to draw: nodes in declaration order, then edges; ``caption`` goes under it."""

    title: str
    nodes: list[MapNode] = field(default_factory=list)
    edges: list[MapEdge] = field(default_factory=list)
    caption: str = ""
    #: Each missing target (a goto naming no declared scene) -> ``file:line:col`` of every goto naming it.
    missing_at: dict[str, list[str]] = field(default_factory=dict)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…"


def _wrap(text: str) -> str:
    return "\n".join("\n".join(textwrap.wrap(part, LABEL_WRAP) or [""]) for part in text.split("\n"))


def build_map(story: Story, coverage: Any | None = None) -> StoryMap:
    """The scene graph of ``story``.

    Args:
        story: a loaded story.
        coverage: a :class:`game.story.explorer.Coverage` to colour by, or ``None``.

    Returns:
        A :class:`StoryMap`; its nodes are the declared scenes, then any missing targets.
    """
    m = story.model
    edges: list[MapEdge] = []
    for sid, sc in m.scenes.items():
        for i, c in enumerate(sc.choices):
            edges.append(MapEdge(sid, c.goto or sid, "choice", c.text, c.if_, ("scenes", sid, "choices", i)))
        for d, x in sc.exits.items():
            text = f"[{d}] exit" + (f": {x.label}" if x.label else "")
            edges.append(MapEdge(sid, x.goto or sid, "exit", text, x.if_, ("scenes", sid, "exits", d)))
        for i, a in enumerate(sc.actions):
            said = a.keywords[0] if a.keywords else (a.examples[0] if a.examples else a.id)
            edges.append(MapEdge(sid, a.goto or sid, "action", f"say: {said}", a.if_, ("scenes", sid, "actions", i)))
        for who, table in sc.on_give.items():
            for key, r in table.items():
                if r.goto:
                    edges.append(MapEdge(sid, r.goto, "gift", f"give {key} to {who}", r.if_,
                                         ("scenes", sid, "on_give", who, key)))
    for who, table in m.on_give.items():
        for key, r in table.items():
            if not r.goto:
                continue
            for sid, sc in m.scenes.items():
                if (who == "any" and sc.present) or who in sc.present:
                    edges.append(MapEdge(sid, r.goto, "gift", f"give {key} to {who}", r.if_, ("on_give", who, key)))
    # Reachability from the start through any goto (conditions ignored), as lint does.
    graph: dict[str, set[str]] = {sid: set() for sid in m.scenes}
    for e in edges:
        graph[e.src].add(e.dst)
    seen = reachable(graph, m.start)
    reached_scenes: set[str] = set(coverage.scenes) if coverage is not None else set()
    nodes = [MapNode(sid, sc.title, sc.ending, sid == m.start, sid not in seen, False,
                     (sid in reached_scenes) if coverage is not None else None)
             for sid, sc in m.scenes.items()]
    missing = sorted({e.dst for e in edges if e.dst not in m.scenes})
    nodes += [MapNode(t, missing=True) for t in missing]
    if coverage is not None:
        edges = [MapEdge(e.src, e.dst, e.kind, e.text, e.condition, e.path, _edge_reached(e, coverage))
                 for e in edges]
    smap = StoryMap(m.title or m.id, nodes, edges)
    for e in edges:
        if e.dst not in m.scenes:
            smap.missing_at.setdefault(e.dst, []).append(story.where((*e.path, "goto")))
    n_end = sum(1 for n in nodes if n.ending)
    smap.caption = (f"{m.title} ({m.id}): {counted(len(m.scenes), 'scene')}, {counted(len(edges), 'edge')}, "
                    f"{counted(n_end, 'ending')}. "
                    "Double border: ending. Red dashed: unreachable.")
    if missing:
        smap.caption += (f" Pink note \"missing: …\": {counted(len(missing), 'goto target')} that "
                         f"{agree(len(missing), 'is')} not a scene (lint's WL001).")
    if coverage is not None:
        n_reached = sum(1 for n in nodes if n.reached)
        e_reached = sum(1 for e in edges if e.reached)
        smap.caption += (f" Explorer: {n_reached}/{len(m.scenes)} scenes and {e_reached}/{len(edges)} edges "
                         "reached (green); grey dashed: never reached.")
    return smap


def _edge_reached(e: MapEdge, coverage: Any) -> bool:
    if e.path and e.path[0] == "on_give":
        return (e.src, str(e.path[1]), str(e.path[2])) in coverage.story_gifts
    return e.path in coverage.reactions


# -- DOT -------------------------------------------------------------------------------------------

def dot_quote(text: str) -> str:
    """``text`` as a double-quoted DOT string: backslashes and quotes escaped, newlines as ``\\n``.

    Control characters other than newlines become spaces, so no input can end the
    string, inject attributes or use graphviz's ``\\N``-style escapes.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(ch if ch == "\n" or ch >= " " else " " for ch in text)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _attrs(**kw: str | int | float) -> str:
    return "[" + ", ".join(f"{k}={dot_quote(str(v))}" for k, v in kw.items()) + "]"


def _node_style(n: MapNode) -> dict[str, str]:
    """Colours and styles of a node (shared by DOT and the built-in renderer)."""
    st = {"fill": COLOURS["node"], "border": COLOURS["ink"], "text": COLOURS["ink"], "dashed": "",
          "double": "1" if n.ending else "", "bold": "1" if n.start else ""}
    if n.ending:
        st["fill"], st["border"] = COLOURS["ending"], COLOURS["ending_border"]
    if n.reached is True:
        st["fill"] = COLOURS["reached"]
    elif n.reached is False:
        st["fill"], st["text"], st["dashed"] = COLOURS["unreached"], COLOURS["unreached_text"], "1"
    if n.unreachable:
        st["border"], st["dashed"] = COLOURS["unreachable"], "1"
    if n.missing:  # a solid red note, so the legend's "red dashed: unreachable" is never it
        st["border"], st["dashed"], st["fill"] = COLOURS["unreachable"], "", COLOURS["missing"]
    return st


def _edge_style(e: MapEdge) -> dict[str, str]:
    st = {"colour": COLOURS[e.kind], "dashed": "", "width": "1"}
    if e.reached is True:
        st["colour"], st["width"] = COLOURS["reached_edge"], "2"
    elif e.reached is False:
        st["colour"], st["dashed"] = COLOURS["unreached_edge"], "1"
    return st


def to_dot(smap: StoryMap) -> str:
    """The map as graphviz DOT source (UTF-8 text).

    Node ids are ``s_<scene id>``; every label and id is quoted with :func:`dot_quote`.
    """
    out = [f"digraph {dot_quote(smap.title)} {{",
           "  graph " + _attrs(rankdir="TB", fontname="DejaVu Sans", fontsize=11, label=_wrap_caption(smap.caption),
                               labelloc="b", nodesep=0.4, ranksep=0.6, charset="UTF-8") + ";",
           "  node " + _attrs(shape="box", style="rounded,filled", fontname="DejaVu Sans", fontsize=11) + ";",
           "  edge " + _attrs(fontname="DejaVu Sans", fontsize=9, arrowsize=0.7) + ";",
           "  __start " + _attrs(shape="plaintext", label="start", style="", fontcolor=COLOURS["ink"]) + ";"]
    for n in smap.nodes:
        st = _node_style(n)
        styles = ["rounded", "filled"] + (["dashed"] if st["dashed"] else []) + (["bold"] if st["bold"] else [])
        kw: dict[str, str | int | float] = {"label": _wrap(n.label), "fillcolor": st["fill"], "color": st["border"],
                                            "fontcolor": st["text"], "style": ",".join(styles)}
        if st["double"]:
            kw["peripheries"] = 2
        if n.missing:
            kw["shape"] = "note"
        if n.start:
            kw["penwidth"] = 2.5
        out.append(f"  {dot_quote('s_' + n.id)} {_attrs(**kw)};")
    start = next((n.id for n in smap.nodes if n.start), "")
    if start:
        out.append(f"  __start -> {dot_quote('s_' + start)};")
    loops: dict[str, list[MapEdge]] = {}
    for e in smap.edges:
        if e.src == e.dst:  # drawn below, one loop per scene
            loops.setdefault(e.src, []).append(e)
            continue
        st = _edge_style(e)
        kw = {"label": _wrap(e.label), "color": st["colour"], "fontcolor": st["colour"], "penwidth": st["width"],
              "tooltip": e.kind}
        if st["dashed"]:
            kw["style"] = "dashed"
        out.append(f"  {dot_quote('s_' + e.src)} -> {dot_quote('s_' + e.dst)} {_attrs(**kw)};")
    out += [_loop_dot(node, edges) for node, edges in loops.items()]
    out.append("}")
    return "\n".join(out) + "\n"


def _loop_dot(node: str, edges: list[MapEdge]) -> str:
    """One DOT loop for every edge from ``node`` back to itself: graphviz lays several loops of
    one node on top of each other, labels overlapping, so they are drawn as one loop whose label
    lists each (its own colour, one per line block, left-aligned; HTML-escaped)."""
    styles = [_edge_style(e) for e in edges]
    colours = {st["colour"] for st in styles}
    colour = colours.pop() if len(colours) == 1 else COLOURS["ink"]
    rows = "".join(f'<font color={quoteattr(st["colour"])}>'
                   + '<br align="left"/>'.join(xml_escape(line, {'"': "&quot;"}) for line in _wrap(e.label).split("\n"))
                   + '</font><br align="left"/>' for e, st in zip(edges, styles, strict=True))
    width = max(st["width"] for st in styles)
    dashed = ', style="dashed"' if all(st["dashed"] for st in styles) else ""
    tip = dot_quote(", ".join(sorted({e.kind for e in edges})))
    return (f"  {dot_quote('s_' + node)} -> {dot_quote('s_' + node)} [label=<{rows}>, color={dot_quote(colour)}, "
            f"penwidth={dot_quote(width)}, tooltip={tip}{dashed}];")


def _wrap_caption(text: str) -> str:
    return "\n".join(textwrap.wrap(text, 110))


# -- built-in layout (no graphviz) -----------------------------------------------------------------

@dataclass
class Layout:
    """Positions in pixels: node centre and box size, edge polylines and label anchors.

    Attributes:
        width, height: canvas size, px.
        boxes: node id -> ``(cx, cy, w, h)``.
        lines: node id -> label lines.
        edges: ``(edge, points, label anchor)``; points are ``(x, y)`` px.
        font_size: label font size, px.
    """

    width: int
    height: int
    boxes: dict[str, tuple[float, float, float, float]]
    lines: dict[str, list[str]]
    edges: list[tuple[MapEdge, list[tuple[float, float]], tuple[float, float]]]
    font_size: int
    caption: list[str]


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size)
    except TypeError:  # pragma: no cover - Pillow < 10.1
        return ImageFont.load_default()


def _text_w(text: str, size: int) -> float:
    return float(_font(size).getlength(text))


def layered_layout(smap: StoryMap, font_size: int = 13) -> Layout:
    """A top-down layered layout (Sugiyama-style, simplified), pure Python.

    Back edges (found by a depth-first search from the start) are reversed for
    layering; layers are longest paths; nodes in a layer are ordered by a few
    barycentre sweeps. Deterministic for a given map.
    """
    ids = [n.id for n in smap.nodes]
    succ: dict[str, list[str]] = {i: [] for i in ids}
    for e in smap.edges:
        if e.src != e.dst and e.dst in succ and e.dst not in succ[e.src]:
            succ[e.src].append(e.dst)
    # Depth-first order from the start, then from every other node: forward edges make a DAG.
    order: list[str] = []
    state: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    roots = [n.id for n in smap.nodes if n.start] + ids
    for root in roots:
        if root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        order.append(root)
        while stack:
            v, k = stack[-1]
            if k < len(succ[v]):
                stack[-1] = (v, k + 1)
                w = succ[v][k]
                if state.get(w) == 1:
                    back.add((v, w))
                elif w not in state:
                    state[w] = 1
                    order.append(w)
                    stack.append((w, 0))
            else:
                state[v] = 2
                stack.pop()
    layer: dict[str, int] = {}
    rank = {v: i for i, v in enumerate(order)}
    preds: dict[str, list[str]] = {i: [] for i in ids}
    for v in ids:
        for w in succ[v]:
            if (v, w) not in back:
                preds[w].append(v)
    # Longest-path layering over the DAG (Kahn's order).
    indeg = {v: len(preds[v]) for v in ids}
    ready = deque(sorted((v for v in ids if indeg[v] == 0), key=lambda x: rank[x]))
    while ready:
        v = ready.popleft()
        layer[v] = max((layer[p] + 1 for p in preds[v]), default=0)
        for w in succ[v]:
            if (v, w) in back:
                continue
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    for v in ids:  # pragma: no cover - every node is in the DAG order
        layer.setdefault(v, 0)
    n_layers = max(layer.values(), default=0) + 1
    rows: list[list[str]] = [[] for _ in range(n_layers)]
    for v in sorted(ids, key=lambda x: rank[x]):
        rows[layer[v]].append(v)
    # Barycentre sweeps.
    und: dict[str, list[str]] = {i: [] for i in ids}
    for v in ids:
        for w in succ[v]:
            und[v].append(w)
            und[w].append(v)
    for sweep in range(6):
        rng = range(1, n_layers) if sweep % 2 == 0 else range(n_layers - 2, -1, -1)
        for li in rng:
            ref = li - 1 if sweep % 2 == 0 else li + 1
            pos = {v: i for i, v in enumerate(rows[ref])}
            cur = {v: i for i, v in enumerate(rows[li])}

            def bary(v: str, pos: dict[str, int] = pos, cur: dict[str, int] = cur) -> float:
                ns = [pos[w] for w in und[v] if w in pos]
                return sum(ns) / len(ns) if ns else float(cur[v])

            rows[li].sort(key=bary)
    # Sizes and coordinates.
    fs = font_size
    line_h = fs * 1.3
    lines = {n.id: _wrap(n.label).split("\n") for n in smap.nodes}
    size = {v: (max(_text_w(t, fs) for t in lines[v]) + 2 * fs, len(lines[v]) * line_h + fs) for v in ids}
    gap_x, gap_y, margin = fs * 3.0, fs * 9.0, fs * 3.0
    row_w = [sum(size[v][0] for v in r) + gap_x * max(0, len(r) - 1) for r in rows]
    width = max(row_w, default=0.0) + 2 * margin + fs * 16
    boxes: dict[str, tuple[float, float, float, float]] = {}
    y = margin + fs * 2
    for r, rw in zip(rows, row_w, strict=True):
        h = max((size[v][1] for v in r), default=0.0)
        x = (width - rw) / 2
        for v in r:
            bw, bh = size[v]
            boxes[v] = (x + bw / 2, y + h / 2, bw, bh)
            x += bw + gap_x
        y += h + gap_y
    caption = textwrap.wrap(smap.caption, max(40, int(width / (fs * 0.6))))
    height = y - gap_y + margin + len(caption) * line_h + fs * 2
    edges = []
    pair_count: dict[tuple[str, str], int] = {}
    taken = [(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2) for cx, cy, w, h in boxes.values()]
    for e in smap.edges:
        k = pair_count.get((e.src, e.dst), 0)
        pair_count[(e.src, e.dst)] = k + 1
        pts, anchor = _route(boxes[e.src], boxes[e.dst], k, fs)
        lw, lh = label_size(e, fs)
        if e.src == e.dst:  # beside its loop, then stacked below and above it, a whole label apart
            base = [(anchor[0] + lw / 2, anchor[1])]
        else:
            base = [pts[i] for i in (8, 6, 10, 5, 11, 4, 12, 3, 13)]
        step = lh + 2  # then nearby places, nearest first, a whole label apart
        near = [(x + i * lw * 0.5, y + j * step) for x, y in base[:3] for i in range(-2, 3) for j in range(-6, 7)]
        candidates = base + sorted(near, key=lambda c: (c[0] - base[0][0]) ** 2 + (c[1] - base[0][1]) ** 2)
        best = next((c for c in candidates if c[0] - lw / 2 >= 0 and c[1] - lh / 2 >= 0
                     and not any(_overlap(_rect(c, lw, lh), t) for t in taken)), candidates[0])
        taken.append(_rect(best, lw, lh))
        edges.append((e, pts, best))
    # the canvas grows to hold every label (loop labels sit right of the widest row)
    width = max(width, max((t[2] for t in taken), default=0.0) + margin)
    height = max(height, max((t[3] for t in taken), default=0.0) + margin + len(caption) * line_h + fs * 2)
    return Layout(int(width), int(height), boxes, lines, edges, fs, caption)


def label_size(e: MapEdge, fs: int) -> tuple[float, float]:
    """``(width, height)`` px of edge ``e``'s label box at font size ``fs`` (lines of ``fs - 3`` px)."""
    small = max(6, fs - 3)
    label = _wrap(e.label).split("\n")
    return max(_text_w(t, small) for t in label) + 4, len(label) * small * 1.25 + 2


def label_rects(lay: Layout) -> list[tuple[float, float, float, float]]:
    """The label box ``(x0, y0, x1, y1)`` of every edge of a layout, in its order."""
    return [_rect(anchor, *label_size(e, lay.font_size)) for e, _, anchor in lay.edges]


def _rect(centre: tuple[float, float], w: float, h: float) -> tuple[float, float, float, float]:
    return centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _route(a: tuple[float, float, float, float], b: tuple[float, float, float, float], k: int,
           fs: int) -> tuple[list[tuple[float, float]], tuple[float, float]]:
    """Points of an edge from box ``a`` to box ``b`` (``k``-th between the pair) and its label anchor."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    if a == b:  # a loop on the right side
        x0, r = ax + aw / 2, fs * (1.2 + 0.9 * k)
        pts = [(x0, ay - ah / 4), (x0 + r, ay - ah / 4 - r / 2), (x0 + 2 * r, ay), (x0 + r, ay + ah / 4 + r / 2),
               (x0, ay + ah / 4)]
        return pts, (x0 + 2 * r + fs * 0.3, ay)
    spread = k * fs * 2.5
    if by > ay:  # downwards: bottom centre to top centre, parallel edges bow apart
        p0, p2 = (ax, ay + ah / 2), (bx, by - bh / 2)
        dx, dy = p2[0] - p0[0], p2[1] - p0[1]
        norm = max(1.0, (dx * dx + dy * dy) ** 0.5)
        c = ((p0[0] + p2[0]) / 2 - dy / norm * spread, (p0[1] + p2[1]) / 2 + dx / norm * spread)
    elif by < ay:  # upwards (a back edge): right side to right side, bowing out to the right
        p0, p2 = (ax + aw / 2, ay), (bx + bw / 2, by)
        c = (max(p0[0], p2[0]) + fs * 6 + spread, (p0[1] + p2[1]) / 2)
    else:  # same layer: side to side, bowing upwards
        p0, p2 = ((ax + aw / 2, ay), (bx - bw / 2, by)) if bx > ax else ((ax - aw / 2, ay), (bx + bw / 2, by))
        c = ((p0[0] + p2[0]) / 2, ay - ah / 2 - fs * 2 - spread)
    pts = [((1 - t) ** 2 * p0[0] + 2 * (1 - t) * t * c[0] + t * t * p2[0],
            (1 - t) ** 2 * p0[1] + 2 * (1 - t) * t * c[1] + t * t * p2[1]) for t in (i / 16 for i in range(17))]
    return pts, pts[8]


def _arrow(pts: list[tuple[float, float]], size: float) -> list[tuple[float, float]]:
    (x1, y1), (x2, y2) = pts[-2], pts[-1]
    dx, dy = x2 - x1, y2 - y1
    n = max(1e-6, (dx * dx + dy * dy) ** 0.5)
    ux, uy = dx / n, dy / n
    return [(x2, y2), (x2 - size * ux + size * 0.5 * uy, y2 - size * uy - size * 0.5 * ux),
            (x2 - size * ux - size * 0.5 * uy, y2 - size * uy + size * 0.5 * ux)]


def draw_png(smap: StoryMap, path: str | Path, max_pixels: int = 40_000_000) -> tuple[int, int]:
    """Draw the built-in layout to a PNG (RGB, white background).

    Args:
        smap: the map.
        path: output file.
        max_pixels: the canvas is laid out smaller (font down to 6 px) to stay under this area.

    Returns:
        ``(width, height)`` in px.

    Raises:
        OSError: the file cannot be written.
    """
    fs = 13
    lay = layered_layout(smap, fs)
    while lay.width * lay.height > max_pixels and fs > 6:
        fs -= 2
        lay = layered_layout(smap, fs)
    img = Image.new("RGB", (max(1, lay.width), max(1, lay.height)), "white")
    d = ImageDraw.Draw(img)
    font, small = _font(fs), _font(max(6, fs - 3))
    for e, pts, anchor in lay.edges:
        st = _edge_style(e)
        lw = int(st["width"])
        if st["dashed"]:
            for i in range(0, len(pts) - 1, 2):
                d.line([pts[i], pts[i + 1]], fill=st["colour"], width=lw)
        else:
            d.line(pts, fill=st["colour"], width=lw)
        d.polygon(_arrow(pts, fs * 0.7), fill=st["colour"])
        label_lines = _wrap(e.label).split("\n")
        lh = (fs - 3) * 1.25
        tw = max(_text_w(t, max(6, fs - 3)) for t in label_lines)
        x0, y0 = anchor[0] - tw / 2, anchor[1] - lh * len(label_lines) / 2
        d.rectangle([x0 - 2, y0 - 1, x0 + tw + 2, y0 + lh * len(label_lines) + 1], fill="white")
        for i, t in enumerate(label_lines):
            d.text((x0, y0 + i * lh), t, fill=st["colour"], font=small)
    for n in smap.nodes:
        cx, cy, w, h = lay.boxes[n.id]
        st = _node_style(n)
        box = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
        width = 3 if st["bold"] else 1
        d.rounded_rectangle(box, radius=fs * 0.6, fill=st["fill"], outline=st["border"], width=width)
        if st["dashed"]:
            _dash_box(d, box, st["border"])
        if st["double"]:
            g = 4
            d.rounded_rectangle([box[0] - g, box[1] - g, box[2] + g, box[3] + g], radius=fs * 0.8,
                                outline=st["border"], width=1)
        lh = fs * 1.3
        for i, t in enumerate(lay.lines[n.id]):
            tw = _text_w(t, fs)
            d.text((cx - tw / 2, cy - h / 2 + fs / 2 + i * lh), t, fill=st["text"], font=font)
        if n.start:
            d.text((cx - w / 2, cy - h / 2 - fs * 1.6), "start", fill=COLOURS["ink"], font=small)
    y = lay.height - len(lay.caption) * fs * 1.3 - fs
    for i, t in enumerate(lay.caption):
        d.text((fs * 2, y + i * fs * 1.3), t, fill=COLOURS["ink"], font=small)
    img.save(path, format="PNG")
    return img.size


def _dash_box(d: ImageDraw.ImageDraw, box: list[float], colour: str) -> None:
    """Punch gaps into a box outline so it reads as dashed."""
    x0, y0, x1, y1 = box
    step = 8.0
    x = x0 + 6
    while x < x1 - 6:
        d.line([(x + step / 2, y0), (x + step, y0)], fill="white", width=2)
        d.line([(x + step / 2, y1), (x + step, y1)], fill="white", width=2)
        x += step
    y = y0 + 6
    while y < y1 - 6:
        d.line([(x0, y + step / 2), (x0, y + step)], fill="white", width=2)
        d.line([(x1, y + step / 2), (x1, y + step)], fill="white", width=2)
        y += step


def to_svg(smap: StoryMap) -> str:
    """The built-in layout as SVG text (every text and attribute XML-escaped)."""
    lay = layered_layout(smap)
    fs = lay.font_size
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
           f'viewBox="0 0 {lay.width} {lay.height}" font-family="DejaVu Sans, sans-serif">',
           f"<title>{xml_escape(smap.title)}</title>",
           '<rect width="100%" height="100%" fill="white"/>']
    for e, pts, anchor in lay.edges:
        st = _edge_style(e)
        d = "M " + " L ".join(f"{x:.1f} {y:.1f}" for x, y in pts)
        dash = ' stroke-dasharray="6 4"' if st["dashed"] else ""
        out.append(f'<g class="edge" data-src={quoteattr(e.src)} data-dst={quoteattr(e.dst)}>'
                   f'<path d="{d}" fill="none" stroke="{st["colour"]}" stroke-width="{st["width"]}"{dash}/>')
        arrow = " ".join(f"{x:.1f},{y:.1f}" for x, y in _arrow(pts, fs * 0.7))
        out.append(f'<polygon points="{arrow}" fill="{st["colour"]}"/>')
        label_lines = _wrap(e.label).split("\n")
        for i, t in enumerate(label_lines):
            y = anchor[1] + (i - (len(label_lines) - 1) / 2) * (fs - 2) * 1.25
            out.append(f'<text x="{anchor[0]:.1f}" y="{y:.1f}" font-size="{fs - 3}" text-anchor="middle" '
                       f'fill="{st["colour"]}" stroke="white" stroke-width="3" paint-order="stroke">'
                       f"{xml_escape(t)}</text>")
        out.append("</g>")
    for n in smap.nodes:
        cx, cy, w, h = lay.boxes[n.id]
        st = _node_style(n)
        dash = ' stroke-dasharray="6 4"' if st["dashed"] else ""
        sw = 3 if st["bold"] else 1
        out.append(f'<g class="node" id={quoteattr("s_" + n.id)}>')
        if st["double"]:
            out.append(f'<rect x="{cx - w / 2 - 4:.1f}" y="{cy - h / 2 - 4:.1f}" width="{w + 8:.1f}" '
                       f'height="{h + 8:.1f}" rx="{fs * 0.8:.1f}" fill="none" stroke="{st["border"]}"/>')
        out.append(f'<rect x="{cx - w / 2:.1f}" y="{cy - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" '
                   f'rx="{fs * 0.6:.1f}" fill="{st["fill"]}" stroke="{st["border"]}" stroke-width="{sw}"{dash}/>')
        for i, t in enumerate(lay.lines[n.id]):
            y = cy - h / 2 + fs * 1.4 + i * fs * 1.3
            out.append(f'<text x="{cx:.1f}" y="{y:.1f}" font-size="{fs}" text-anchor="middle" '
                       f'fill="{st["text"]}">{xml_escape(t)}</text>')
        out.append("</g>")
    y0 = lay.height - len(lay.caption) * fs * 1.3
    for i, t in enumerate(lay.caption):
        out.append(f'<text x="{fs * 2}" y="{y0 + i * fs * 1.3:.1f}" font-size="{fs - 3}" '
                   f'fill="{COLOURS["ink"]}">{xml_escape(t)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# -- writing -----------------------------------------------------------------------------------------

def dot_binary() -> str | None:
    """Path of graphviz's ``dot``, or ``None`` when it is not installed."""
    return shutil.which("dot")


def write_map(smap: StoryMap, out: str | Path, engine: Engine = "auto") -> str:
    """Write ``smap`` to ``out``; the format comes from the suffix (``.dot``, ``.svg``, ``.png``).

    Args:
        smap: the map.
        out: output path.
        engine: ``dot`` (graphviz; fails if missing), ``builtin`` (pure Python), or
            ``auto`` (graphviz when installed and it succeeds, else built-in).

    Returns:
        What drew it: ``"dot source"``, ``"graphviz dot"`` or ``"built-in layout"``.

    Raises:
        MapError: an unknown suffix, ``engine="dot"`` without graphviz or with
            graphviz failing, or the file cannot be written.
    """
    p = Path(out)
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise MapError(f"cannot write a map as {p.suffix or 'a file with no suffix'!r}", where=str(p),
                       hint="use .png, .svg or .dot")
    try:
        if fmt == "dot":
            p.write_text(to_dot(smap), encoding="utf-8")
            return "dot source"
        dot = dot_binary() if engine != "builtin" else None
        if engine == "dot" and dot is None:
            raise MapError("graphviz 'dot' is not installed", hint="apt-get install graphviz, or --engine builtin")
        if dot is not None:
            why = _run_dot(dot, to_dot(smap), fmt, p)
            if not why:
                return "graphviz dot"
            if engine == "dot":
                raise MapError(f"graphviz dot failed: {why}", where=str(p))
        if fmt == "svg":
            p.write_text(to_svg(smap), encoding="utf-8")
        else:
            draw_png(smap, p)
        return "built-in layout"
    except OSError as exc:
        raise MapError(f"cannot write the map: {exc}", where=str(p)) from exc


def _run_dot(dot: str, source: str, fmt: str, out: Path) -> str:
    """Run ``dot -T<fmt> -o <out>`` on ``source``; ``""`` on success, else why it failed."""
    try:
        res = subprocess.run([dot, f"-T{fmt}", "-o", str(out)], input=source.encode("utf-8"),
                             capture_output=True, timeout=DOT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if res.returncode != 0 or not out.is_file():
        return res.stderr.decode("utf-8", "replace").strip()[:300] or f"exit status {res.returncode}"
    return ""


def map_story(story_path: str | Path, out: str | Path, *, coverage: bool = False, engine: Engine = "auto",
              max_states: int | None = None, n_random: int | None = None, seed: int = 0,
              show_progress: bool = False) -> tuple[StoryMap, str]:
    """Load a story, optionally explore it, and write its map.

    With ``coverage``, the coverage of a ``worldloom explore`` (or an earlier map) of the same
    story sources with the same bounds is reused (:func:`game.story.explorer.recalled_coverage`);
    else the explorer runs, with a progress bar when ``show_progress``.

    Returns:
        ``(map, what drew it)``.

    Raises:
        game.errors.StoryError: the story does not load.
        MapError: the map cannot be written.
    """
    story = load_story(story_path, use_cache=False)
    cov = None
    if coverage:
        from game.story.explorer import (
            DEFAULT_MAX_STATES,
            DEFAULT_MAX_STEPS,
            DEFAULT_RANDOM,
            explore,
            recalled_coverage,
            remember_coverage,
        )

        params = {"max_states": max_states or DEFAULT_MAX_STATES,
                  "n_random": DEFAULT_RANDOM if n_random is None else n_random, "seed": seed,
                  "max_steps": DEFAULT_MAX_STEPS}
        cov = recalled_coverage(story, **params)  # `worldloom explore` with these bounds ran already
        if cov is None:
            report = explore(story, story_path=str(story_path), show_progress=show_progress, **params)
            remember_coverage(report, story, **params)
            cov = report.reached
    smap = build_map(story, cov)
    return smap, write_map(smap, out, engine)


# -- command line ------------------------------------------------------------------------------------

def add_parser(subparsers: Any) -> None:
    """Register ``map`` on an argparse ``subparsers`` object (sets ``func=run``)."""
    p = subparsers.add_parser("map", help="draw the scene graph (.png, .svg or .dot)",
                              description="Draw a story's scene graph: choices, exits, actions and gifts on the "
                              "edges, conditions as labels, endings and unreachable scenes marked.")
    p.add_argument("story", help="story folder or story.yaml")
    p.add_argument("-o", "--output", required=True, help="output file: .png, .svg or .dot")
    p.add_argument("--coverage", action="store_true", help="run the explorer and colour what it reached")
    p.add_argument("--engine", choices=("auto", "dot", "builtin"), default="auto",
                   help="graphviz dot, the built-in layout, or dot when installed (default)")
    p.add_argument("--max-states", type=int, default=None, help="explorer bound with --coverage")
    p.add_argument("--random", type=int, default=None, metavar="N", help="random playthroughs with --coverage")
    p.add_argument("--seed", type=int, default=0, help="seed of the random playthroughs with --coverage")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``worldloom map``: writes the file, prints one line; 0 on success, 1 when a goto
    names no scene (the map is still written; each such goto is named, ``file:line``, on stderr, as
    lint's WL001 error is).

    Raises:
        game.errors.StoryError, MapError: the CLI prints them and exits 2.
    """
    smap, how = map_story(args.story, args.output, coverage=args.coverage, engine=args.engine,
                          max_states=args.max_states, n_random=args.random, seed=args.seed, show_progress=True)
    extra = ""
    if args.coverage:
        extra = (f"; reached {sum(1 for n in smap.nodes if n.reached)}/{sum(1 for n in smap.nodes if not n.missing)}"
                 f" scenes, {sum(1 for e in smap.edges if e.reached)}/{len(smap.edges)} edges")
    print(f"wrote {args.output} ({how}): {counted(sum(1 for n in smap.nodes if not n.missing), 'scene')}, "
          f"{counted(len(smap.edges), 'edge')}{extra}")
    for target, places in smap.missing_at.items():
        for where in places:
            print(f"error: {where}: goto {target!r} names no scene (drawn as a missing note; "
                  "worldloom lint reports it as WL001)", file=sys.stderr)
    if smap.missing_at:
        print(f"{counted(len(smap.missing_at), 'missing scene')}: the map is drawn, but the story has errors",
              file=sys.stderr)
        return 1
    return 0

