"""The layout picture of plans (``arena-tool plan|compare --plot FILE``): op on x, arena offset on y,
every buffer a rectangle [first_op - 0.5, last_op + 0.5] x [offset, offset + size).

Several plans (compare's planners) are panels on one y scale, COLUMNS to a row (ten planners
are a grid, not one strip), so taller is more RAM. On each panel a step line draws the live
bytes per op (an alias group once, as explain counts them) on the offset axis itself, op by op
under the rectangles: where it touches the lower bound line is the peak, and the gap between
the lower bound and the arena top is what the layout lost to fragmentation. A buffer is
labelled with its name where that fits, else with its elided name or its index (#i), the whole
name always in its hover title; no label overlaps another (an alias's rectangle lies on its
root's: it is labelled only where the root's label leaves room) or the arena and lower-bound labels.

Only matplotlib's object API (Figure, Agg canvas) is used, inside one rc_context from
matplotlib's defaults, so nothing leaks into or out of pyplot or a user's matplotlibrc. The SVG
is byte-identical for the same plans: a fixed hash salt, text as <text>, no date. Each buffer's
rectangle is an SVG group with id ``buf:<panel>:<index in the plan's buffers>`` and a <title>
(what a browser shows on hover).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Iterator, Sequence
from xml.sax.saxutils import escape

import matplotlib
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import elide, fmt_bytes
from arena_tool.core.files import write_atomic
from arena_tool.report.timeline import Layout, Rect, layout

if TYPE_CHECKING:
    from arena_tool.plan.planfile import PlanFile
    from matplotlib.typing import RcKeyType

FORMATS = (".svg", ".png")
COLOURS = {"io": "#8fb8de", "activation": "#f2b880", "scratch": "#bdbdbd", "alias": "#9ccc9c"}
LIVE = "#202020"  # the live-bytes step line
COLUMNS = 3  # panels per row
LEGEND = {"io": "input / output", "activation": "activation", "scratch": "workspace / scratch",
          "alias": "alias (view, in-place)"}
LABEL_PT = 7.0
RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "arena",  # clip-path and hatch ids from a fixed salt, not a random uuid
    "svg.fonttype": "none",  # text stays <text>: small, searchable, no glyph cache ids
    "path.snap": False,  # rectangles at their exact data coordinates, not pixel-snapped
    "font.size": 8.0,
    "hatch.linewidth": 0.5,
}
PNG_DPI = 150
_RC_LOCK = threading.RLock()  # see _style
PNG_MAX_PX = 6000  # a ten-planner compare stays an image viewers open


@dataclasses.dataclass(frozen=True)
class Geometry:
    """Inches of one figure: fixed margins, so data-to-pixel transforms are known before drawing
    (labels are fitted against them) and the same for every panel (one y scale); ``height``
    is one row's."""

    main: float
    between: float = 0.35  # one panel to the next in its row
    left: float = 0.95
    right: float = 0.2
    bottom: float = 0.55
    top: float = 0.8  # the legend and two-line panel titles
    height: float = 5.0

    def width(self, panels: int) -> float:
        """The figure's width for ``panels`` in one row (at most COLUMNS)."""
        n = min(panels, COLUMNS)
        return self.left + self.right + n * self.main + (n - 1) * self.between


@contextlib.contextmanager
def _style() -> Iterator[None]:
    """matplotlib's own defaults plus RC, whatever the user's matplotlibrc says; restored after.

    rcParams are process-wide and SCons runs actions in threads (-j): without the lock a second
    picture's rc_context restores the defaults under the first one (svg.hashsalt None: random ids)."""
    with _RC_LOCK, matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        yield


def _colour_key(r: Rect) -> str:
    if r.alias_of is not None:
        return "alias"
    if r.kind in ("input", "output"):
        return "io"
    return "scratch" if r.kind == "scratch" else "activation"


def hover(r: Rect) -> str:
    """The tooltip of one buffer: what it is, where it is, when it lives."""
    alias = f" (alias of {r.alias_of})" if r.alias_of else ""
    shape = "x".join(map(str, r.shape)) or "scalar"
    return (f"{r.name}{alias}\n{r.kind}, {r.dtype} [{shape}]\n"
            f"{fmt_bytes(r.size)} at offset {r.offset:,}: [{r.offset:,}, {r.offset + r.size:,})\n"
            f"live ops {r.first_op}..{r.last_op}")


def _bytes_axis(v: float, _pos: Any) -> str:
    return f"{int(round(v)):,}"


def _geometry(lays: Sequence[Layout]) -> Geometry:
    """Wider panels for more ops (narrower when a row holds several), taller for more buffers."""
    ops = max(lay.ops for lay in lays)
    bufs = max(len(lay.rects) for lay in lays)
    main = min(max(3.5 + 0.12 * ops, 4.5), 12.0 if len(lays) == 1 else 6.0)
    return Geometry(main=main, height=min(max(4.0 + 0.02 * bufs, 5.0), 10.0))


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels


def _clear(box: Box, taken: Sequence[Box]) -> bool:
    """The box overlaps none of the labels already placed (with a pixel between them)."""
    return not any(box[0] < t[2] + 1 and t[0] < box[2] + 1 and box[1] < t[3] + 1 and t[1] < box[3] + 1 for t in taken)


def _label(ax: Any, r: Rect, renderer: Any, font: FontProperties, taken: list[Box]) -> str | None:
    """What fits inside the rectangle as drawn (pixels at the figure's dpi) and clear of every label
    already placed (``taken``, which it extends): the name, else the name elided to 24 or 12
    characters, else the buffer's index; None when nothing does. An alias's rectangle lies on its
    root's, whose label comes first, so an alias is labelled only where the root's label leaves room."""
    (x0, y0), (x1, y1) = ax.transData.transform([(r.first_op - 0.5, r.offset), (r.last_op + 0.5, r.offset + r.size)])
    if abs(y1 - y0) < 8 or abs(x1 - x0) < 8:
        return None
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    for text in dict.fromkeys((r.name, elide(r.name, 24), elide(r.name, 12), f"#{r.index}")):
        w, h, _ = renderer.get_text_width_height_descent(text, font, ismath=False)
        box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        if w + 4 <= abs(x1 - x0) and h + 2 <= abs(y1 - y0) and _clear(box, taken):
            taken.append(box)
            return text
    return None


def _draw_buffers(ax: Any, panel: int, lay: Layout, renderer: Any, taken: list[Box]) -> None:
    font = FontProperties(size=LABEL_PT)
    roots_first = sorted(lay.rects, key=lambda r: (r.alias_of is not None, r.index))
    for r in roots_first:
        key = _colour_key(r)
        ax.add_patch(Rectangle((r.first_op - 0.5, r.offset), r.last_op - r.first_op + 1, r.size,
                               facecolor=COLOURS[key], edgecolor="#303030", linewidth=0.5,
                               alpha=0.75 if key == "alias" else 1.0, hatch="///" if key == "alias" else None,
                               gid=f"buf:{panel}:{r.index}"))
        label = _label(ax, r, renderer, font, taken)
        if label is not None:
            ax.text((r.first_op + r.last_op) / 2, r.offset + r.size / 2, label, fontproperties=font,
                    ha="center", va="center", clip_on=True, gid=f"label:{panel}:{r.index}")


def _draw_lines(ax: Any, panel: int, lay: Layout, renderer: Any) -> list[Box]:
    """The arena top (solid, label above) and the lower bound (dashed, label below); the boxes
    their labels take, which the buffers' labels keep clear of."""
    ax.axhline(lay.arena_size, color="#c0392b", linewidth=1.0, gid=f"arena_top:{panel}")
    ax.axhline(lay.lower_bound, color="black", linewidth=0.8, linestyle="--", gid=f"lower_bound:{panel}")
    at = blended_transform_factory(ax.transAxes, ax.transData)
    box = {"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1.0}
    same = lay.arena_size == lay.lower_bound
    texts = [ax.text(0.995, lay.arena_size, f"arena {'= lower bound ' if same else ''}{fmt_bytes(lay.arena_size)}",
                     transform=at, ha="right", va="bottom", color="#c0392b", bbox=box)]
    if not same:
        texts.append(ax.text(0.995, lay.lower_bound, f"lower bound {fmt_bytes(lay.lower_bound)}", transform=at,
                             ha="right", va="top", bbox=box))
    return [tuple(t.get_window_extent(renderer).extents) for t in texts]


def _draw_live(ax: Any, panel: int, lay: Layout) -> None:
    """Live bytes per op as a step line on the offset axis, over each op's column; the peak marked."""
    edges = [i - 0.5 for i in range(lay.ops + 1)]
    ax.stairs(lay.live, edges, fill=False, color=LIVE, linewidth=1.2, gid=f"live:{panel}")
    peak = lay.peak_op
    ax.plot([peak], [lay.live[peak]], marker="v", color=LIVE, markersize=4, gid=f"peak:{panel}")


def layout_figure(plans: Sequence[tuple[str, PlanFile]]) -> Figure:
    """One panel per (title, plan file), side by side on one y scale, with an Agg canvas."""
    if not plans:
        raise ValueError("layout_figure needs at least one plan")
    with _style():
        return _figure([(title, layout(plan)) for title, plan in plans])


def _figure(panels: Sequence[tuple[str, Layout]]) -> Figure:
    lays = [lay for _, lay in panels]
    g = _geometry(lays)
    width = g.width(len(panels))
    rows = -(-len(panels) // COLUMNS)
    height = rows * g.height
    fig = Figure(figsize=(width, height))
    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]  # unannotated in matplotlib
    top = max(max(lay.arena_size, lay.lower_bound, max(lay.live, default=0)) for lay in lays)
    h = (g.height - g.bottom - g.top) / height
    first = None
    for p, (title, lay) in enumerate(panels):
        row, col = divmod(p, COLUMNS)
        x = g.left + col * (g.main + g.between)
        bottom = ((rows - 1 - row) * g.height + g.bottom) / height
        ax = fig.add_axes((x / width, bottom, g.main / width, h), sharey=first)
        first = first or ax
        _main_axis(ax, p, col, title, lay, max(top, 1) * 1.06)
        _draw_buffers(ax, p, lay, renderer, _draw_lines(ax, p, lay, renderer))
        _draw_live(ax, p, lay)
    handles: list[Artist] = [Patch(facecolor=COLOURS[k], edgecolor="#303030", label=LEGEND[k],
                                   hatch="///" if k == "alias" else None) for k in COLOURS]
    handles.append(Line2D([], [], color=LIVE, linewidth=1.2, label="live bytes per op"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, 1.0), fontsize=7)
    return fig


def _main_axis(ax: Any, panel: int, col: int, title: str, lay: Layout, ymax: float) -> None:
    """Limits first: label fitting reads the data-to-pixel transform they fix."""
    ax.set_xlim(-0.5, lay.ops - 0.5)
    ax.set_ylim(0, ymax)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(_bytes_axis))
    ax.set_xlabel("op (schedule step)")
    if col == 0:
        ax.set_ylabel("arena offset, live bytes")
    else:
        ax.tick_params(labelleft=False)  # one scale: a row's first panel's numbers hold for all
    ax.set_title(f"{title}\narena {fmt_bytes(lay.arena_size)}, lower bound {fmt_bytes(lay.lower_bound)}",
                 fontsize=8)


_GROUP = re.compile(r'<g id="(buf:\d+:\d+)">')


def svg(plans: Sequence[tuple[str, PlanFile]]) -> str:
    """The picture as SVG text, byte-identical for the same plans; hover titles on the buffers."""
    panels = [(title, layout(plan)) for title, plan in plans]
    titles = {f"buf:{p}:{r.index}": hover(r) for p, (_, lay) in enumerate(panels) for r in lay.rects}
    with _style():
        buf = io.StringIO()
        _figure(panels).savefig(buf, format="svg", metadata={"Date": None})
    return _GROUP.sub(lambda m: f'{m.group(0)}\n  <title>{escape(titles[m.group(1)])}</title>', buf.getvalue())


def png(plans: Sequence[tuple[str, PlanFile]]) -> bytes:
    with _style():
        buf = io.BytesIO()
        fig = _figure([(title, layout(plan)) for title, plan in plans])
        dpi = min(PNG_DPI, PNG_MAX_PX / fig.get_figwidth())
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def check_path(path: str, field: str = "--plot") -> str:
    """The picture format of path ('.svg' or '.png'); anything else is a usage error.

    Called before planning, so a typo costs no planner time."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ArenaError(f"cannot draw a {suffix or 'suffix-less'} file: the picture is SVG or PNG", file=path,
                         field=field, hint="name the file *.svg (hover a buffer for its details) or *.png")
    return suffix


def write(plans: Sequence[tuple[str, PlanFile]], path: str, field: str = "--plot") -> None:
    """Draw the plans to path, the format from its suffix, atomically."""
    suffix = check_path(path, field)
    write_atomic(path, svg(plans) if suffix == ".svg" else png(plans))
