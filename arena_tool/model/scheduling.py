"""Memory-aware operator scheduling: the topological order with the smallest peak of live bytes.

The packing is solved on a given order (``optimal`` reaches the lower bound); what is left
is the lower bound itself, which depends on which ops run first. This module knows only a
small dependency graph (``SchedGraph``: what each op reads and writes, in bytes), so ONNX
and TFLite models share it and tests can brute-force it.

Memory model (the one liveness uses, so a schedule's ``peak`` is the lower bound the plan
of that order gets): at rest after a set S of ops, the live bytes are the storage units
produced in S (or graph inputs, live from the start) that a later op still reads or that
are graph outputs (live to the end). While op v runs: the units at rest before it (its
inputs included), plus its outputs, plus its workspace. A view's output shares its input's
unit whatever the order; an in-place output adds nothing when the input's unit dies at v,
is neither a graph input nor output, and has the output's size.

Search (SERENITY's dynamic programming over the frontier): a state is the set of ops
already run; the live bytes at rest are a function of the set alone, so the best peak to
reach a set is all that has to be remembered. States grow level by level (one more op per
level). Chains and cut points keep the frontier small on real networks (an Inception
module of four short branches has a few dozen states). Where a level holds more than
``beam`` states the best ``beam`` by (peak, live bytes) are kept and the result is no
longer proven (``exact`` False): a heuristic whose answer is still a valid order; callers
keep the graph order when it is not strictly better. Deterministic: states and ops are
visited in a fixed order and a tie keeps the first found.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from arena_tool.core.problem import ModelProblem


@dataclasses.dataclass(frozen=True)
class SchedOp:
    """One op as the scheduler sees it.

    inputs/outputs: arena tensors it reads / writes (constants are not listed).
    workspace: bytes alive only while it runs.
    view_of: the input whose bytes its single output shares whatever the order (a view).
    inplace: inputs its single output may overwrite when they die here (by shape and
      element width; the equal-size rule is applied here).
    """

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    workspace: int = 0
    view_of: str | None = None
    inplace: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class SchedGraph:
    """ops in the model's order; sizes: planned bytes of every tensor named by an op."""

    ops: tuple[SchedOp, ...]
    sizes: Mapping[str, int]
    inputs: frozenset[str] = frozenset()
    outputs: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Schedule:
    """order: op indices of the graph in run order; peak: its live-bytes peak; exact: proven minimal."""

    order: tuple[int, ...]
    peak: int
    exact: bool


class _Units:
    """Storage units: a tensor and the views of it, found once (views do not depend on the order)."""

    def __init__(self, g: SchedGraph) -> None:
        root: dict[str, str] = {}
        for op in g.ops:
            if op.view_of is not None and len(op.outputs) == 1:
                root[op.outputs[0]] = root.get(op.view_of, op.view_of)
        names = sorted({t for op in g.ops for t in op.inputs + op.outputs} | set(g.inputs))
        self.of = {t: root.get(t, t) for t in names}
        roots = sorted(set(self.of.values()))
        self.index = {r: i for i, r in enumerate(roots)}
        n = len(roots)
        self.size = [0] * n
        self.consumers = [0] * n  # bit mask of the ops reading any member
        self.producer = [-1] * n  # the op writing the root; -1 for a graph input
        self.pinned_in = [False] * n
        self.pinned_out = [False] * n
        for t, r in self.of.items():
            u = self.index[r]
            if t == r:
                self.size[u] = g.sizes[t]
            self.pinned_in[u] |= t in g.inputs
            self.pinned_out[u] |= t in g.outputs
        for v, op in enumerate(g.ops):
            for t in op.inputs:
                self.consumers[self.u(t)] |= 1 << v
            for t in op.outputs:
                if self.of[t] == t:
                    self.producer[self.index[t]] = v

    def u(self, tensor: str) -> int:
        return self.index[self.of[tensor]]


class _Search:
    """The per-op arithmetic, precomputed once: what an op adds, frees and needs."""

    def __init__(self, g: SchedGraph) -> None:
        self.g = g
        self.units = U = _Units(g)
        n = len(g.ops)
        self.full = (1 << n) - 1
        self.preds = [0] * n
        writer = {t: v for v, op in enumerate(g.ops) for t in op.outputs}
        for v, op in enumerate(g.ops):
            for t in op.inputs:
                w = writer.get(t)
                if w is not None and w != v:
                    self.preds[v] |= 1 << w
        self.new_units = [[U.index[t] for t in dict.fromkeys(op.outputs) if U.of[t] == t] for op in g.ops]
        self.in_units = [sorted({U.u(t) for t in op.inputs}) for op in g.ops]
        self.inplace = [sorted({U.u(x) for x in op.inplace}) if len(op.outputs) == 1 else [] for op in g.ops]
        self.start = sum(U.size[u] for u in range(len(U.size))
                         if U.pinned_in[u] and (U.pinned_out[u] or U.consumers[u]))

    def step(self, done: int, rest: int, v: int) -> tuple[int, int]:
        """(bytes while v runs after ``done``, bytes at rest after it)."""
        U, op = self.units, self.g.ops[v]
        after = done | (1 << v)
        added = sum(U.size[u] for u in self.new_units[v])
        during = rest + added + op.workspace
        if op.inplace and self.new_units[v]:
            y = self.new_units[v][0]
            for x in self.inplace[v]:
                if (U.consumers[x] & ~after == 0 and not U.pinned_in[x] and not U.pinned_out[x]
                        and U.size[x] == U.size[y]):
                    during -= U.size[y]
                    break
        born = sum(U.size[u] for u in self.new_units[v] if U.pinned_out[u] or U.consumers[u] & ~after)
        died = sum(U.size[u] for u in self.in_units[v] if not U.pinned_out[u] and not U.consumers[u] & ~after)
        return during, rest + born - died


def peak(g: SchedGraph, order: Sequence[int]) -> int:
    """The live-bytes peak of running g's ops in ``order`` (a topological permutation)."""
    s = _Search(g)
    done, rest, top = 0, s.start, 0
    for v in order:
        if s.preds[v] & ~done:
            raise ValueError(f"op {v} runs before an op it reads from")
        during, rest = s.step(done, rest, v)
        top = max(top, during)
        done |= 1 << v
    return top


def memory_order(g: SchedGraph, beam: int = 2048) -> Schedule:
    """The order with the smallest peak (exact unless a level held more than ``beam`` states)."""
    s = _Search(g)
    n = len(g.ops)
    if n == 0:
        return Schedule((), 0, True)
    succs = [[w for w in range(n) if s.preds[w] >> v & 1] for v in range(n)]
    ready0 = sum(1 << v for v in range(n) if s.preds[v] == 0)
    # state (ops done) -> (peak so far, bytes at rest, ready ops, parent state, last op)
    level: dict[int, tuple[int, int, int, int, int]] = {0: (0, s.start, ready0, -1, -1)}
    history = []
    exact = True
    for _ in range(n):
        nxt: dict[int, tuple[int, int, int, int, int]] = {}
        for done, (top, rest, ready, _, _) in level.items():
            r = ready
            while r:
                bit = r & -r
                r ^= bit
                v = bit.bit_length() - 1
                during, after_rest = s.step(done, rest, v)
                key = done | bit
                cand_peak = max(top, during)
                old = nxt.get(key)
                if old is None or cand_peak < old[0]:
                    new_ready = ready ^ bit
                    for w in succs[v]:
                        if s.preds[w] & ~key == 0:
                            new_ready |= 1 << w
                    nxt[key] = (cand_peak, after_rest, new_ready, done, v)
        if len(nxt) > beam:
            exact = False
            nxt = dict(sorted(nxt.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]))[:beam])
        history.append(nxt)
        level = nxt
    state = s.full
    best = level[state][0]
    order: list[int] = []
    for lv in reversed(history):
        _, _, _, parent, v = lv[state]
        order.append(v)
        state = parent
    return Schedule(tuple(reversed(order)), best, exact)


def graph_of(mp: "ModelProblem", views: Mapping[int, str] | None = None,
             inplace: Mapping[int, Sequence[str]] | None = None) -> SchedGraph:
    """The scheduler's view of a ModelProblem planned in graph order: what each step reads and
    writes, its workspace, and (ONNX) which steps are views or may work in place."""
    sizes = {t.name: t.size for t in mp.tensors}
    kinds = {t.name: t.kind for t in mp.tensors}
    ops = []
    for k, st in enumerate(mp.schedule):
        ins = tuple(dict.fromkeys(t for t in st.inputs if kinds.get(t, "scratch") != "scratch"))
        outs = tuple(dict.fromkeys(t for t in st.outputs if kinds.get(t, "scratch") != "scratch"))
        ops.append(SchedOp(ins, outs, sizes[st.workspace] if st.workspace else 0,
                           (views or {}).get(k), tuple((inplace or {}).get(k, ()))))
    return SchedGraph(tuple(ops), sizes, frozenset(n for n, kd in kinds.items() if kd == "input"),
                      frozenset(n for n, kd in kinds.items() if kd == "output"))


def op_floor(g: SchedGraph) -> int:
    """A bound no order beats: the largest op's own inputs, outputs and workspace, with the
    graph inputs and outputs (live the whole run). What a heuristic schedule is measured against."""
    U = _Units(g)
    pinned = sum(U.size[u] for u in range(len(U.size)) if U.pinned_in[u] and U.pinned_out[u])
    best = 0
    for op in g.ops:
        ins, outs = {U.u(t) for t in op.inputs}, {U.u(t) for t in op.outputs} - {U.u(t) for t in op.inputs}
        own = sum(U.size[u] for u in ins | outs) + op.workspace
        if op.inplace and outs:  # it may write over an input of the output's size
            own -= max((U.size[U.u(x)] for x in op.inplace if U.size[U.u(x)] == U.size[min(outs)]), default=0)
        best = max(best, own)
    return max(best, pinned)
