"""The layout picture (plan/compare --plot), the text timeline (explain --timeline) and
arena-tool schema: one SVG rectangle per buffer at its planned coordinates, one y scale across
compare's panels, byte-identical output, the peak op marked."""

from __future__ import annotations

import json
import random
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import models
from builders import outputs_under_hash_seeds
from arena_tool.core import schema
from arena_tool.model import liveness
from arena_tool.plan import planfile, planners, planning
from arena_tool.report import plot, timeline
from arena_tool.cli import main
from arena_tool.core.errors import ArenaError
from arena_tool.core.problem import ModelOptions

KB = 1024
SVG = "{http://www.w3.org/2000/svg}"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def conv_relu_conv():
    """x -> conv1 -> y1 -> Relu (in place: y2 aliases y1) -> conv2 -> y3: every kind of buffer
    with --scratch full (each Conv's im2col workspace)."""
    return models.model(
        [models.node("Conv", ["x", "w1"], ["y1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         models.node("Relu", ["y1"], ["y2"], "relu"),
         models.node("Conv", ["y2", "w2"], ["y3"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        [models.vi("x", [1, 4, 8, 8])], [models.vi("y3", [1, 4, 8, 8])],
        [models.weight("w1", [8, 4, 3, 3]), models.weight("w2", [4, 8, 3, 3], 1)],
    )


@dataclass(frozen=True)
class Box:
    """One SVG rectangle: x grows right, y grows down (SVG user units)."""

    x0: float
    x1: float
    y0: float
    y1: float
    fill: str


def _box(group: ET.Element, patterns: dict[str, str] | None = None) -> Box:
    """The rectangle's extent and fill colour (a hatched fill: its pattern's background)."""
    path = group.find(f"{SVG}path")
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
    xs, ys = nums[0::2], nums[1::2]
    fill = re.search(r"fill: (#[0-9a-f]{6}|url\(#(\w+)\))", path.get("style"))
    colour = (patterns or {}).get(fill.group(2), "?") if fill.group(2) else fill.group(1)
    return Box(min(xs), max(xs), min(ys), max(ys), colour)


def patterns(svg_text: str) -> dict[str, str]:
    """Hatch pattern id -> its background colour."""
    return {p.get("id"): p.find(f"{SVG}rect").get("fill") for p in ET.fromstring(svg_text).iter(f"{SVG}pattern")}


def groups(svg_text: str, prefix: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg_text)
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith(prefix)}


def line_y(svg_text: str, gid: str) -> float:
    g = groups(svg_text, gid)[gid]
    ys = {round(float(y), 3) for y in re.findall(r"-?\d+(?:\.\d+)?", g.find(f".//{SVG}path").get("d"))[1::2]}
    assert len(ys) == 1, ys  # horizontal
    return ys.pop()


@dataclass(frozen=True)
class Scale:
    """svg = base - per * data: the data-to-SVG map of one axis, fitted from two points."""

    base: float
    per: float

    def __call__(self, v: float) -> float:
        return self.base - self.per * v


def fit_y(doc: dict, boxes: dict[int, Box]) -> Scale:
    """Fit bytes -> SVG y from the largest buffer, then every other must agree."""
    i = max(boxes, key=lambda i: doc["buffers"][i]["size"])
    b, box = doc["buffers"][i], boxes[i]
    per = (box.y1 - box.y0) / b["size"]
    return Scale(box.y1 + per * b["offset"], per)


def check_panel(svg_text: str, panel: int, doc: dict) -> Scale:
    """Exactly one rectangle per buffer, each at [first_op-0.5, last_op+0.5] x [offset, offset+size)
    under one monotone affine map per axis, filled with its kind's colour; the arena top line
    where the map puts arena_size. Returns the y map."""
    found = groups(svg_text, f"buf:{panel}:")
    bufs = doc["buffers"]
    assert sorted(found) == sorted(f"buf:{panel}:{i}" for i in range(len(bufs)))
    hatches = patterns(svg_text)
    boxes = {i: _box(found[f"buf:{panel}:{i}"], hatches) for i in range(len(bufs))}
    y = fit_y(doc, boxes)
    assert y.per > 0  # more bytes is higher up (smaller SVG y)
    x_per = (boxes[0].x1 - boxes[0].x0) / (bufs[0]["last_op"] - bufs[0]["first_op"] + 1)
    x_base = boxes[0].x0 - x_per * (bufs[0]["first_op"] - 0.5)
    assert x_per > 0
    for i, b in enumerate(bufs):
        box = boxes[i]
        assert box.y1 == pytest.approx(y(b["offset"]), abs=1e-3), b["name"]
        assert box.y0 == pytest.approx(y(b["offset"] + b["size"]), abs=1e-3), b["name"]
        assert box.x0 == pytest.approx(x_base + x_per * (b["first_op"] - 0.5), abs=1e-3), b["name"]
        assert box.x1 == pytest.approx(x_base + x_per * (b["last_op"] + 0.5), abs=1e-3), b["name"]
        key = "alias" if b["alias_of"] else "io" if b["kind"] in ("input", "output") else \
            "scratch" if b["kind"] == "scratch" else "activation"
        assert box.fill == plot.COLOURS[key], b["name"]
    assert line_y(svg_text, f"arena_top:{panel}") == pytest.approx(y(doc["arena_size"]), abs=1e-3)
    assert line_y(svg_text, f"lower_bound:{panel}") == pytest.approx(y(doc["lower_bound"]), abs=1e-3)
    return y


def _plan(capsys, tmp_path, model: str, picture: str, *extra: str) -> tuple[dict, Path]:
    out, pic = tmp_path / "plan.json", tmp_path / picture
    code, stdout, err = run(capsys, "plan", model, "-o", str(out), "--plot", str(pic), *extra)
    assert code == 0, err
    assert f"wrote {pic}" in stdout
    return json.loads(out.read_text()), pic  # the file as written, drawn from its numbers


def test_svg_one_rectangle_per_buffer_at_the_planned_coordinates(capsys, tmp_path):
    path = models.save(conv_relu_conv(), tmp_path / "m.onnx")
    doc, pic = _plan(capsys, tmp_path, path, "m.svg", "--scratch", "full")
    kinds = {b["kind"] for b in doc["buffers"]}
    assert kinds == {"input", "activation", "output", "scratch"}
    assert any(b["alias_of"] for b in doc["buffers"])
    text = pic.read_text()
    check_panel(text, 0, doc)
    found = groups(text, "buf:0:")
    for i, b in enumerate(doc["buffers"]):  # the hover title says what, how big, where and when
        title = found[f"buf:0:{i}"].find(f"{SVG}title").text
        for word in (b["name"], b["kind"], b["dtype"], f"{b['size']:,} B", f"offset {b['offset']:,}",
                     f"ops {b['first_op']}..{b['last_op']}"):
            assert word in title, (word, title)
        if b["alias_of"]:
            assert f"alias of {b['alias_of']}" in title
    # the alias shares its root's bytes: same y extent where both are the group's size
    by = {b["name"]: i for i, b in enumerate(doc["buffers"])}
    assert _box(found[f"buf:0:{by['y2']}"]).y1 == pytest.approx(_box(found[f"buf:0:{by['y1']}"]).y1)


def test_labels_only_where_they_fit(capsys, tmp_path):
    doc, pic = _plan(capsys, tmp_path, models.save(models.chain(), tmp_path / "c.onnx"), "c.svg")
    labels = groups(pic.read_text(), "label:0:")
    assert labels  # 4-6 KB rectangles in a 12 KB arena hold their names
    for gid, g in labels.items():
        i = int(gid.rsplit(":", 1)[1])
        assert doc["buffers"][i]["name"] in "".join(g.itertext())


def test_compare_panels_share_one_scale(capsys, tmp_path):
    path = models.save(models.chain(), tmp_path / "c.onnx")
    pic = tmp_path / "cmp.svg"
    code, out, err = run(capsys, "compare", path, "--planners", "naive,greedy_size", "--plot", str(pic))
    assert code == 0, err
    text = pic.read_text()
    mp = liveness.model_problem(path, ModelOptions())
    problem = mp.problem()
    docs = [planfile.build(mp, planning.run_planner(n, problem, planners.Params()), problem).to_json()
            for n in ("naive", "greedy_size")]
    assert docs[0]["arena_size"] == 18 * KB and docs[1]["arena_size"] == 12 * KB
    scales = [check_panel(text, p, d) for p, d in enumerate(docs)]
    assert scales[0].per == pytest.approx(scales[1].per) and scales[0].base == pytest.approx(scales[1].base)
    # so the naive arena's top is drawn half as high again as greedy_size's
    tops = [scales[0].base - line_y(text, f"arena_top:{p}") for p in (0, 1)]
    assert tops[0] / tops[1] == pytest.approx(1.5, abs=1e-4)
    texts = "".join(ET.fromstring(text).itertext())
    assert "naive" in texts and "greedy_size" in texts


def test_png_is_not_blank(capsys, tmp_path):
    import matplotlib.image

    _, pic = _plan(capsys, tmp_path, models.save(models.chain(), tmp_path / "c.onnx"), "c.png")
    img = matplotlib.image.imread(str(pic))
    assert img.ndim == 3 and img.shape[0] > 300 and img.shape[1] > 600
    rgb = img[..., :3]
    assert rgb.std() > 0.05
    colours = {tuple(c) for c in np.round(rgb.reshape(-1, 3) * 255).astype(int)[::7]}
    assert len(colours) > 20
    fill = tuple(int(plot.COLOURS["activation"][k:k + 2], 16) for k in (1, 3, 5))
    assert fill in colours  # the activations' rectangles are there


def test_svg_is_byte_identical(capsys, tmp_path):
    path = models.save(conv_relu_conv(), tmp_path / "m.onnx")
    plan = planning.plan_model(path, ModelOptions(), "optimal", planners.Params()).plan_file
    before = dict(matplotlib.rcParams)
    assert plot.svg([("a", plan), ("b", plan)]) == plot.svg([("a", plan), ("b", plan)])
    assert dict(matplotlib.rcParams) == before  # no rc state leaks out
    pic = str(tmp_path / "m{seed}.svg")
    outs = outputs_under_hash_seeds(["plan", str(path), "--plot", pic], pic)
    assert outs[0] == outs[1]
    assert b"<dc:date>" not in outs[0]


def test_svg_is_byte_identical_from_threads(tmp_path):
    """SCons -j draws the boards' reports in threads: each picture keeps its own rc settings
    (a second rc_context used to restore the defaults under the first: random clip-path ids)."""
    import threading

    path = models.save(conv_relu_conv(), tmp_path / "m.onnx")
    plan = planning.plan_model(path, ModelOptions(), "optimal", planners.Params()).plan_file
    alone = plot.svg([("a", plan)])
    outs: list[str] = []
    threads = [threading.Thread(target=lambda: outs.extend(plot.svg([("a", plan)]) for _ in range(3)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outs) == 12 and all(o == alone for o in outs)


@pytest.mark.parametrize("command", ["plan", "compare"])
@pytest.mark.parametrize("name", ["m.pdf", "m"])
def test_bad_plot_suffix_exits_2_with_one_line(capsys, tmp_path, command, name):
    path = models.save(models.chain(), tmp_path / "c.onnx")
    code, out, err = run(capsys, command, path, "--plot", str(tmp_path / name))
    assert code == 2
    assert out == ""  # refused before planning
    assert len(err.strip().splitlines()) == 1
    assert "--plot" in err and ".svg" in err and ".png" in err
    assert not (tmp_path / name).exists()


def test_write_refuses_an_unknown_format(tmp_path):
    with pytest.raises(ArenaError) as e:
        plot.write([("x", synthetic(2, 2))], str(tmp_path / "x.jpg"))
    assert e.value.field == "--plot" and "x.jpg" in e.value.render()


def synthetic(n: int = 600, ops: int = 300, seed: int = 1) -> planfile.PlanFile:
    """A schema-valid plan of n buffers (offsets need not be valid: only drawn)."""
    rnd = random.Random(seed)
    bufs = []
    for i in range(n):
        first = rnd.randrange(ops)
        size = 16 * rnd.randrange(1, 200)
        bufs.append({"name": f"t{i}", "kind": "activation", "dtype": "int8", "shape": [size], "elements": size,
                     "size": size, "offset": 16 * rnd.randrange(2000), "first_op": first,
                     "last_op": min(ops - 1, first + rnd.randrange(6)), "alias_of": None, "quant": None})
    live = [sum(b["size"] for b in bufs if b["first_op"] <= i <= b["last_op"]) for i in range(ops)]
    options = {"activation_dtype": None, "bitwidths": {}, "inplace": True, "scratch": "none", "input_shapes": {}}
    return planfile.PlanFile.from_json({
            "format_version": 1, "model": "synthetic", "model_sha256": "0" * 64, "planner": "none", "k": 1,
            "alignment": 16, "options": options, "lower_bound": max(live),
            "arena_size": max(b["offset"] + b["size"] for b in bufs), "optimal": None, "status": "heuristic",
            "weights_bytes": 0,
            "schedule": [{"node": i, "name": f"op{i}", "op_type": "Relu", "inputs": [], "outputs": [],
                          "workspace": None} for i in range(ops)], "buffers": bufs})


def test_hundreds_of_buffers_render_in_seconds():
    doc = synthetic()
    t0 = time.process_time()  # CPU seconds: the machine's other processes do not count
    text = plot.svg([("a", doc)])
    assert time.process_time() - t0 < 5
    assert len(groups(text, "buf:0:")) == 600
    assert len(timeline.render(doc).splitlines()) > 900  # one row per op and per group


def test_layout_figure_is_an_object_api_figure():
    from matplotlib.figure import Figure

    doc = synthetic(20, 10)
    fig = plot.layout_figure([("a", doc), ("b", doc)])
    assert isinstance(fig, Figure) and len(fig.axes) == 2  # one axis per panel: the live bytes are on it
    assert fig.axes[0].get_ylim() == fig.axes[1].get_ylim()


def test_ten_planners_are_a_grid_with_the_live_bytes_on_the_offset_axis():
    """compare's ten planners drew one 6000x709 px strip: now rows of plot.COLUMNS panels, one y
    scale; each panel's live-bytes line is drawn on its own offset axis, op for op."""
    doc = synthetic(20, 10)
    fig = plot.layout_figure([(f"p{i}", doc) for i in range(10)])
    one = plot.layout_figure([("a", doc)])
    assert len(fig.axes) == 10 and len({ax.get_ylim() for ax in fig.axes}) == 1
    rows = -(-10 // plot.COLUMNS)
    assert fig.get_figheight() == pytest.approx(rows * one.get_figheight())
    assert fig.get_figwidth() < 2 * plot.COLUMNS * one.get_figwidth() and fig.get_figwidth() / fig.get_figheight() < 1.5
    for p, ax in enumerate(fig.axes):
        [live] = [a for a in ax.patches if a.get_gid() == f"live:{p}"]
        assert list(live.get_data().values) == list(timeline.layout(doc).live)
        assert ax.get_xlim() == (-0.5, timeline.layout(doc).ops - 0.5)  # the buffers' op axis


def test_long_names_still_label_their_buffers(tmp_path):
    """tflite2onnx names are longer than any rectangle: the label is the elided name or the index."""
    doc = synthetic(8, 4).to_json()
    for b in doc["buffers"]:
        b["size"] = b["elements"] = 4096
    for i, b in enumerate(doc["buffers"]):
        b["name"] = f"StatefulPartitionedCall/model/{'x' * 200}/conv{i}"
        b["offset"], b["first_op"], b["last_op"] = 4096 * (i % 4), 0, 3
    plan = planfile.PlanFile.from_json(doc)
    labels = groups(plot.svg([("a", plan)]), "label:0:")
    assert labels
    for gid, g in labels.items():
        text = "".join(g.itertext()).strip()
        i = int(gid.rsplit(":", 1)[1])
        assert text == f"#{i}" or ("..." in text and text.endswith(f"conv{i}"[-5:])), text


# ------------------------------------------------------------ arena-tool schema


def test_schema_manifest_prints_an_existing_path(capsys):
    code, out, err = run(capsys, "schema", "manifest")
    assert code == 0, err
    path = Path(out.strip())
    assert path.is_file() and path.name == "manifest.schema.json"
    assert json.loads(path.read_text())["title"] == "arena manifest"
    code, text, _ = run(capsys, "schema", "manifest", "--print")
    assert code == 0 and text == path.read_text()


def test_schema_lists_the_names(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    names = out.split()
    assert names == sorted(names) and {"manifest", "board", "plan", "report", "explain"} <= set(names)
    code, _, err = run(capsys, "schema", "manifets")
    assert code == 2 and "did you mean 'manifest'" in err and len(err.strip().splitlines()) == 1


def test_manifest_schema_enumerates_the_planners():
    prop = schema.load_schema("manifest")["$defs"]["model_option_fields"]["properties"]["planner"]
    assert prop["enum"] == sorted(planners.PLANNERS)


def _text_overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of texts on one panel (buffer labels, the arena and lower-bound labels) whose drawn
    extents (matplotlib's renderer, at the figure's dpi) overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    out = []
    for ax in fig.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_text()]
        out += [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]
    return out


def test_labels_never_overlap(zoo_dir: Path) -> None:
    """SqueezeNet's in-place Relus: each alias's rectangle lies on its producer's, one op further,
    and first_fit leaves them tall enough to label: conv2's label and relu3's were drawn over each
    other (issue 36 defect 12). A label goes only where it overlaps no other and not the arena or
    lower-bound label; the check reads each text's extent from matplotlib's renderer."""
    pm = planning.plan_model(str(zoo_dir / "squeezenet.onnx"), ModelOptions(), "first_fit", planners.Params())
    fig = plot.layout_figure([("a", pm.plan_file), ("b", pm.plan_file)])
    labels = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text()]
    assert len(labels) > 20  # the picture still labels what it can
    assert _text_overlaps(fig) == []
    doc = synthetic(60, 30)
    assert _text_overlaps(plot.layout_figure([("a", doc)])) == []
