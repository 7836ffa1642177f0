"""arena_report.html / arena_report.md (arena_tool/report/htmlreport.py) from real builds of the example.

Two scons runs, each shared by the tests of this module: nucleo_f746 built through the
``report`` alias (linked when arm-none-eabi-gcc is on PATH), and nucleo_f746 over a budget of
8K with a tensor of kws renamed to a ``<script>`` (the gate fails before compiling). The pages
are parsed (html.parser: every number the page shows under a ``data-key`` must equal the JSON's
and the plan's) and opened in headless chromium (no console message, not a blank screenshot).
Chromium tests skip where it is absent, unless ARENA_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from arena_tool.model import macs
from arena_tool.plan import plancheck, planfile, planners
from arena_tool.builder import board_report
from arena_tool.emit import linker_fragment
from arena_tool.target import boards
from arena_tool.report import explain, htmlreport
from arena_tool.run.runreport import Section
from conftest import ROOT, require_tool
from builders import copy_example, copy_package, scons, set_budget, typed

BOARD = "nucleo_f746"
HOSTILE = '<script>console.error("pwned")</script>'
VOID = {"meta", "br", "img", "input", "link", "hr"}


class Page(HTMLParser):
    """What a test reads of a page: the text (and attributes) of each element with a data-key,
    every tag name, every attribute value, all text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.keyed: dict[str, tuple[str, dict[str, str]]] = {}
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._open: list[tuple[str, str | None, dict[str, str]]] = []
        self._buf: dict[int, list[str]] = {}
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        self.attrs += list(a.items())
        if tag not in VOID:
            self._open.append((tag, a.get("data-key"), a))
            self._buf[len(self._open) - 1] = []

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            t, key, a = self._open.pop()
            text = "".join(self._buf.pop(len(self._open)))
            if key is not None:
                assert key not in self.keyed, f"data-key {key} twice"
                self.keyed[key] = (" ".join(text.split()), a)
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for i in self._buf:
            self._buf[i].append(data)

    def number(self, key: str) -> int:
        return _int(self.keyed[key][0])

    def value(self, key: str) -> int:
        return int(self.keyed[key][1]["data-value"])


def _int(text: str) -> int:
    m = re.match(r"-?[\d,]+", text.strip())
    assert m, text
    return int(m.group().replace(",", ""))


def _plans(proj: Path, doc: dict) -> dict[str, dict]:
    return {m["name"]: json.loads((proj / m["plan"]).read_text()) for m in doc["models"]}


def _board_dir(proj: Path) -> Path:
    return proj / "build" / BOARD


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the package the builds run from: an edit to the checkout meanwhile (the
    generator is a dependency of every output) cannot turn the no-op build into a rebuild."""
    return copy_package(tmp_path_factory.mktemp("pkg"))


@pytest.fixture(scope="module")
def ok(tmp_path_factory: pytest.TempPathFactory, pkg: Path) -> Path:
    """The example's nucleo_f746 built once through the report alias."""
    proj = copy_example(tmp_path_factory.mktemp("ok"))
    p = scons(proj, f"board={BOARD}", "report", pkg=pkg)
    assert p.returncode == 0, p.stdout + p.stderr
    return proj


def rename_tensor(model: Path, old: str, new: str) -> None:
    """Rename one value of an ONNX model everywhere it is named (node inputs/outputs, value_info)."""
    import onnx

    m = onnx.load(str(model))
    for node in m.graph.node:
        node.input[:] = [new if x == old else x for x in node.input]
        node.output[:] = [new if x == old else x for x in node.output]
    for vi in list(m.graph.value_info) + list(m.graph.output):
        if vi.name == old:
            vi.name = new
    onnx.save(m, str(model))


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory, pkg: Path) -> Path:
    """nucleo_f746 over an 8K budget, kws's largest tensor named HOSTILE: the gate fails."""
    proj = copy_example(tmp_path_factory.mktemp("failed"))
    set_budget(proj, BOARD, "8K")
    kws = proj / "example_firmware" / "models" / "kws.onnx"
    rename_tensor(kws, _first_output(kws), HOSTILE)
    p = scons(proj, f"board={BOARD}", "link=0", "report", pkg=pkg)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "arena bug" not in p.stderr, p.stderr
    return proj


def _first_output(model: Path) -> str:
    """An intermediate tensor of the model: the first node's first output."""
    import onnx

    return onnx.load(str(model)).graph.node[0].output[0]


# ---------------------------------------------------------------- numbers


def test_html_numbers_are_the_reports_and_the_plans(ok: Path) -> None:
    b = _board_dir(ok)
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # the document the page shows
    page = Page((b / "arena_report.html").read_text(encoding="utf-8"))
    assert page.keyed["status"][1]["data-value"] == doc["status"] == "ok"
    for key in ("arena_size", "lower_bound", "limit", "headroom", "budget"):
        assert page.number(key) == doc[key], key
    assert float(page.keyed["percent"][0].split()[0]) == doc["percent"]
    assert page.number("ram.used") == doc["ram"]["used"] and page.number("flash.used") == doc["flash"]["used"]
    plans = _plans(ok, doc)
    for m in doc["models"]:
        plan, name = plans[m["name"]], m["name"]
        for key in ("arena_size", "lower_bound", "base"):
            assert page.number(f"models.{name}.{key}") == page.number(f"model.{name}.{key}") == m[key], (name, key)
        assert m["arena_size"] == plan["arena_size"] and m["lower_bound"] == plan["lower_bound"]
        assert page.number(f"models.{name}.gap") == plan["arena_size"] - plan["lower_bound"]
        assert page.number(f"models.{name}.headroom") == doc["limit"] - m["arena_size"]  # sequential
        assert page.keyed[f"models.{name}.planner"][0] == plan["planner"]
        assert page.keyed[f"models.{name}.region"][0] == doc["region"]["name"]
        ex = explain.explain(planfile.PlanFile.from_json(plan), "greedy_size", planners.Params())
        peak = page.keyed[f"model.{name}.peak"][1]
        assert int(peak["data-op"]) == ex["peak_op"] and int(peak["data-value"]) == plan["lower_bound"]
        live = [(page.keyed[k][0], page.number(k[:-4] + "size")) for k in page.keyed
                if re.fullmatch(rf"model\.{name}\.live\.\d+\.name", k)]
        assert live == [(r["name"], r["size"]) for r in ex["live_at_peak"]]
        assert sum(r["size"] for r in ex["live_at_peak"]) == plan["lower_bound"]  # alias groups once
        # MACs: the report's per op (the plan's order, counted from the model) and their total
        lowered = plancheck.lowered_model(str(ok / m["model"]), planfile.PlanFile.from_json(plan))
        assert [o["macs"] for o in m["ops"]] == list(macs.plan_macs(planfile.PlanFile.from_json(plan).schedule, lowered))
        assert [o["op_type"] for o in m["ops"]] == [s["op_type"] for s in plan["schedule"]]
        assert page.number(f"model.{name}.macs") == m["macs"] == sum(o["macs"] for o in m["ops"]) > 0
        assert [page.number(f"model.{name}.ops.{o['index']}.macs") for o in m["ops"]] == [o["macs"] for o in m["ops"]]
    # Every byte of RAM and flash the report counts sits in one region of the page.
    regions = {k: v for k, v in page.keyed.items() if re.fullmatch(r"region\.[^.]+\.used", k)}
    board = boards.load_board_file(str(ROOT / "boards" / f"{BOARD}.yaml"))
    ram = sum(int(regions[f"region.{r.name}.used"][1]["data-value"]) for r in board.ram)
    assert ram == doc["ram"]["used"]
    assert int(regions[f"region.{board.flash.name}.used"][1]["data-value"]) == doc["flash"]["used"]
    if doc["stage"] == "linked":  # the ELF's sections, the arena in its region
        assert page.number(f"region.{doc['region']['name']}..arena") >= doc["arena_size"]
        assert f"region.{board.flash.name}..text" in page.keyed


def test_markdown_has_the_same_numbers(ok: Path) -> None:
    b = _board_dir(ok)
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # the document the page shows
    md = (b / "arena_report.md").read_text(encoding="utf-8")
    rows = {cells[0]: cells for cells in ([c.strip() for c in ln.strip().strip("|").split(" | ")]
                                          for ln in md.splitlines() if ln.startswith("| "))}
    for m in doc["models"]:
        cells = rows[m["name"]]
        assert [_int(c) for c in cells[2:6]] == [m["arena_size"], m["lower_bound"],
                                                 m["arena_size"] - m["lower_bound"], m["base"]]
        assert _int(cells[7]) == doc["budget"] and _int(cells[8]) == doc["limit"] - m["arena_size"]
    assert _int(rows["arena"][1]) == doc["arena_size"] and _int(rows["limit"][1]) == doc["limit"]
    for m in doc["models"]:
        assert f", {m['macs']:,} MACs per inference" in md
    used = [(kind, _int(n)) for kind, n in re.findall(r"^### (RAM|Flash) \S+: ([\d,]+) B used", md, re.M)]
    assert sum(n for k, n in used if k == "RAM") == doc["ram"]["used"]
    assert sum(n for k, n in used if k == "Flash") == doc["flash"]["used"]
    assert "<" not in md.replace("&lt;", "")


RERENDER = """
import sys
from arena_tool.builder import board_report
from arena_tool.emit import linker_fragment
from arena_tool.target import boards
from arena_tool.report import htmlreport
json_path, out, board_file, elf, root = sys.argv[1:]
memory = htmlreport.Memory.of_board(boards.load_board_file(board_file))
htmlreport.write(out, board_report.read(json_path), memory, elf or None, root=root)
"""


def test_views_are_the_json_document_rendered_and_rebuilt_only_when_it_changes(ok: Path, pkg: Path,
                                                                                tmp_path: Path) -> None:
    """Rendered again from arena_report.json, the plans and the ELF (by the same package): the same
    bytes. A second ``scons report`` does nothing: the views are declared targets."""
    b = _board_dir(ok)
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # the document the page shows
    elf = str(b / "firmware.elf") if doc["stage"] == "linked" else ""
    subprocess.run([sys.executable, "-c", RERENDER, str(b / "arena_report.json"), str(tmp_path / "arena_report.json"),
                    str(pkg / "boards" / f"{BOARD}.yaml"), elf, str(ok)],
                   env=dict(os.environ, PYTHONPATH=str(pkg)), check=True, timeout=120)
    for name in ("arena_report.html", "arena_report.md"):
        assert (tmp_path / name).read_bytes() == (b / name).read_bytes(), name  # same inputs, same bytes
    before = {n: (b / n).stat().st_mtime_ns for n in ("arena_report.html", "arena_report.md")}
    p = scons(ok, f"board={BOARD}", "report", pkg=pkg)
    assert p.returncode == 0 and "Checking build/" not in p.stdout, p.stdout
    assert before == {n: (b / n).stat().st_mtime_ns for n in before}


def test_html_is_self_contained(ok: Path) -> None:
    text = (_board_dir(ok) / "arena_report.html").read_text(encoding="utf-8")
    page = Page(text)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(page.tags)
    assert "svg" in page.tags and "style" in page.tags
    for name, value in page.attrs:
        if name in ("href", "xlink:href", "src"):
            assert value.startswith("#"), (name, value)
        assert "url(" not in value or "url(#" in value, value
        assert not name.startswith("on"), name
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"@import|url\((?!#)", text)


# ---------------------------------------------------------------- a failing build, hostile names


def test_failing_build_writes_views_that_say_so(failed: Path) -> None:
    b = _board_dir(failed)
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # the document the page shows
    assert doc["status"] == "over" and doc["headroom"] < 0
    page = Page((b / "arena_report.html").read_text(encoding="utf-8"))
    assert page.keyed["status"][1]["data-value"] == "over" and "FAILED: over" in page.keyed["status"][0]
    text = " ".join("".join(page.text).split())
    assert all(" ".join(p["message"].split()) in text for p in doc["problems"])
    assert page.number("headroom") == doc["headroom"] and page.keyed["headroom"][0].startswith("-")
    md = (b / "arena_report.md").read_text(encoding="utf-8")
    assert "**FAILED: over" in md and f"{doc['arena_size']:,} B" in md
    assert re.search(rf"^- ram: arena: {BOARD}: ", md, re.M)


def test_hostile_tensor_name_is_escaped(failed: Path) -> None:
    b = _board_dir(failed)
    html_text = (b / "arena_report.html").read_text(encoding="utf-8")
    md = (b / "arena_report.md").read_text(encoding="utf-8")
    doc = board_report.read(str(b / "arena_report.json")).to_json()  # the document the page shows
    plan = _plans(failed, doc)["kws"]
    assert HOSTILE in {x["name"] for x in plan["buffers"]}  # the plan really holds the name
    page = Page(html_text)
    assert "script" not in page.tags and "<script" not in html_text
    assert HOSTILE in "".join(page.text)  # shown as text
    assert "<script" not in md and "&lt;script&gt;" in md


def test_hostile_strings_from_every_source_are_escaped() -> None:
    """Board, region, op and problem strings too (built in memory: no schema stops them here)."""
    evil = '"><img src=x onerror=alert(1)>|*_`'
    rep = board_report.BoardReport(
        board=evil, region=evil, region_origin=0, region_length=64, region_auto=False, sharing="sequential",
        arena_size=16, lower_bound=16, alignment=16, budget=64, budget_spec=evil, limit=64, reserve_stack=0,
        reserve_heap=0, warn_above=None, status="error", warning=evil, arena_tool_version="0",
        problems=(board_report.BoardProblem("link", evil),), ram=board_report.Usage(16, 64, "plan"),
        flash=board_report.Usage(0, 64, "plan"),
        models=(board_report.ModelUse(name="m", planner=evil, arena_size=16, lower_bound=16, optimal=True, status=evil,
                                base=0, plan=evil, model=evil, model_sha256="0" * 64, weights_bytes=0),))
    plan = typed({"arena_size": 16, "lower_bound": 16, "alignment": 16, "planner": evil, "model": evil,
                  "model_sha256": "0" * 64, "optimal": None, "status": "heuristic", "weights_bytes": 0,
                  "integer_ops": 0, "schedule": [{"node": 0, "name": evil, "op_type": evil, "outputs": [evil],
                                                  "inputs": [], "workspace": None}],
                  "buffers": [{"name": evil, "kind": "output", "dtype": "int8", "size": 16, "elements": 16,
                               "first_op": 0, "last_op": 0, "offset": 0, "alias_of": None}]})
    memory = htmlreport.Memory((htmlreport.Region(evil, 0, 64, "ram"),), htmlreport.Region("F", 64, 64, "flash"), evil)
    view = htmlreport.build(rep, {"m": plan}, memory,
                            picture=lambda docs: '<svg xmlns="http://www.w3.org/2000/svg"></svg>')
    page_text = htmlreport.render_html(view)
    page = Page(page_text)
    assert "img" not in page.tags and not any(n.startswith("on") for n, _ in page.attrs)
    assert evil in "".join(page.text)
    md = htmlreport.render_markdown(view)
    assert "<img" not in md and "\\|" in md and "\\*" in md


def test_split_report_says_each_regions_limit_and_what_each_section_is() -> None:
    """A split arena with weights copied to its fast region, linked: the banner gives each region's
    use against its own limit (not their sum in the first), a 4 B .init_array in flash is drawn in
    the flash (not as RAM outside every region at origin 0), .weights_DTCM says whose weights."""
    regions = (linker_fragment.RegionUse("DTCM", 0x20000000, 128, 80, 20, 0, 128, ".arena_DTCM", ".weights_DTCM"),
               linker_fragment.RegionUse("AXI", 0x24000000, 256, 60, 0, 0, 256, ".arena_AXI", None))
    rep = board_report.BoardReport(
        board="b", region="DTCM", region_origin=0x20000000, region_length=128, region_auto=False, sharing="sequential",
        arena_size=140, lower_bound=140, alignment=16, budget=384, budget_spec="100%", limit=384, reserve_stack=0,
        reserve_heap=0, warn_above=None, status="ok", warning=None, arena_tool_version="0", problems=(),
        ram=board_report.Usage(160, 384, "elf"), flash=board_report.Usage(64, 4096, "elf"), stage="linked",
        regions=regions,
        models=(board_report.ModelUse(name="m", planner="greedy_size", arena_size=140, lower_bound=140, optimal=True,
                                      status="proven", base=0, plan="m.plan.json", model="m.onnx",
                                      model_sha256="0" * 64, weights_bytes=16, weights_region="DTCM",
                                      weights_ram=20),))
    memory = htmlreport.Memory((htmlreport.Region("DTCM", 0x20000000, 128, "ram"),
                                htmlreport.Region("AXI", 0x24000000, 256, "ram")),
                               htmlreport.Region("FLASH", 0, 4096, "flash"), "DTCM")
    sections = (Section(".text", 0, 40, True, False), Section(".init_array", 40, 4, True, True),
                Section(".arena_DTCM", 0x20000000, 80, False, True), Section(".weights_DTCM", 0x20000050, 20, True, True),
                Section(".arena_AXI", 0x24000000, 60, False, True))
    view = htmlreport.build(rep, {}, memory, sections, picture=None)
    text = htmlreport.render_html(view)
    assert "each region within its limit: DTCM 100 B of 128 B, AXI 60 B of 256 B" in text
    assert "384 B limit in DTCM" not in text and "outside every RAM region" not in text
    flash = next(u for u in view.regions if u.region.name == "FLASH")
    assert [o.name for o in flash.occupants if o.name.startswith(".init")] == [".init_array"]
    dtcm = next(u for u in view.regions if u.region.name == "DTCM")
    assert [o.what for o in dtcm.occupants if o.name == ".weights_DTCM"] == ["the weights of m, copied here at startup"]
    assert all(o.what for u in view.regions for o in u.occupants), [(o.name, o.what) for u in view.regions
                                                                     for o in u.occupants]


def _fit_report() -> board_report.BoardReport:
    """A board the fit: search picked for: the pick and three runners-up (RAM, flash, slower)."""
    from arena_tool.target.manifest_data import FitChoice, FitConfig

    fit = FitChoice("speed", 12, FitConfig("m: patches: pw:4x4", "speed", 35_216, 61_000, 1_180_000), (
        FitConfig("m: as the manifest says", "speed", 75_328, None, 1_000_000, "needs 71,232 B of arena > 65,536 B"),
        FitConfig("m: io: int8", "speed", 40_000, 300_000, 1_100_000, "needs 300,000 B of flash > 262,144 B"),
        FitConfig("m: patches: pw:5x1", "size", 36_000, 58_000, 1_392_400, "1.18x the instructions (+212,400)")))
    return board_report.BoardReport(
        board="b", region="SRAM", region_origin=0x20000000, region_length=65536, region_auto=False, sharing="sequential",
        arena_size=31_120, lower_bound=30_000, alignment=16, budget=65536, budget_spec="100%", limit=61_440,
        reserve_stack=4096, reserve_heap=0, warn_above=None, status="ok", warning=None, arena_tool_version="0",
        problems=(), ram=board_report.Usage(35_216, 65536, "plan"), flash=board_report.Usage(61_000, 262_144, "plan"),
        models=(board_report.ModelUse(name="m", planner="optimal", arena_size=31_120, lower_bound=30_000,
                                      optimal=True, status="proven", base=0, plan="m.plan.json", model="m.onnx",
                                      model_sha256="0" * 64, weights_bytes=16),), fit=fit)


def _fit_view(rep: board_report.BoardReport) -> htmlreport.BoardView:
    memory = htmlreport.Memory((htmlreport.Region("SRAM", 0x20000000, 65536, "ram"),),
                               htmlreport.Region("FLASH", 0, 262_144, "flash"), "SRAM")
    return htmlreport.build(rep, {}, memory, picture=None)


def test_the_fit_choice_and_why_each_runner_up_lost_are_in_every_view() -> None:
    rep = _fit_report()
    assert board_report.BoardReport.from_json(json.loads(board_report.dumps(rep.to_json()))) == rep  # schema-checked
    text = board_report.summary([rep])
    assert ("  fit (speed, 12 configurations weighed): picked m: patches: pw:4x4, optimize speed: RAM 35,216 B, "
            "flash 61,000 B, 1,180,000 instructions (cost model)") in text.splitlines()
    assert ("    runner-up: m: as the manifest says, optimize speed: RAM 75,328 B, not linked, 1,000,000 instructions "
            "(cost model): needs 71,232 B of arena > 65,536 B") in text.splitlines()
    view = _fit_view(rep)
    page = Page(htmlreport.render_html(view))
    fit = rep.to_json()["fit"]
    assert page.keyed["fit.pick.label"][0] == fit["pick"]["label"] and page.number("fit.pick.ram") == 35_216
    for i, r in enumerate(fit["runners_up"]):
        assert page.keyed[f"fit.runners_up.{i}.why"][0] == r["why"]
        assert page.number(f"fit.runners_up.{i}.instructions") == r["instructions"]
    md = htmlreport.render_markdown(view)
    assert "## Fit" in md and "| runner-up | m: io: int8 | speed | 40,000 | 300,000 | 1,100,000 | needs 300,000 B " \
                              "of flash &gt; 262,144 B |" in md  # as md_escape writes '>'
    plain = dataclasses.replace(rep, fit=None)
    assert "fit" not in plain.to_json() and board_report.BoardReport.from_json(plain.to_json()) == plain
    assert "Fit" not in htmlreport.render_html(_fit_view(plain)) and "fit (" not in board_report.summary([plain])


# ---------------------------------------------------------------- in a browser


def chromium(page: Path, png: Path, profile: Path) -> list[str]:
    """Open page in headless chromium and screenshot it; the console messages it logged."""
    exe = require_tool("chromium")
    p = subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", f"--user-data-dir={profile}", f"--screenshot={png}",
                        "--window-size=1200,1600", "--enable-logging=stderr", "--v=0", page.as_uri()],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert png.is_file(), p.stderr[-2000:]
    return [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln]


def not_blank(png: Path) -> None:
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))[..., :3]
    inked = (pixels.min(axis=2) < 0.9).mean()  # share of pixels that are not (near) white
    assert pixels.std() > 0.05 and inked > 0.02, (pixels.std(), inked)


@pytest.mark.parametrize("which", ["ok", "failed", "fit"])
def test_opens_in_chromium_without_console_messages(which: str, request: pytest.FixtureRequest,
                                                     tmp_path: Path) -> None:
    """The failing page holds the <script> tensor name: run, it would log (and the CSP would too);
    fit: a page with the fit: search's table, rendered from a report in memory."""
    require_tool("chromium")
    if which == "fit":
        page = tmp_path / "arena_report.html"
        page.write_text(htmlreport.render_html(_fit_view(_fit_report())), encoding="utf-8")
    else:
        page = _board_dir(request.getfixturevalue(which)) / "arena_report.html"
    console = chromium(page, tmp_path / "shot.png", tmp_path / "profile")
    assert console == []
    not_blank(tmp_path / "shot.png")
