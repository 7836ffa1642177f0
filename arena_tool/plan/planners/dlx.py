"""Knuth's Algorithm X with dancing links, array based, iterative.

Columns 0..n_primary-1 are primary (each covered exactly once); the rest are
secondary (covered at most once: Knuth's trick is to leave their headers out of
the header list, so they are never chosen, yet covering a row still removes
every row that clashes with it there).

Layout, chosen for CPython speed and memory: every node is an int index into
flat lists ``U``/``D`` (vertical links), ``C`` (column header) and ``ROW``.
Node 0 is the root, nodes 1..n_columns the column headers, then the row
nodes, each row contiguous (``RS[row]`` .. ``RS[row+1]``). Rows are never
unlinked horizontally, so they need no left/right links: about 4 list slots
per node instead of 6. Only the primary headers carry ``L``/``R``.

Rows can be taken out of and put back into the matrix (``unlink_row`` /
``relink_row``) between searches, strictly last out, first in; exact_cover uses
this to lower and raise its canvas height without rebuilding.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Sequence

from arena_tool.plan.planners.decision import Decision

if TYPE_CHECKING:
    from arena_tool.core.progress import Progress

_CHECK_EVERY = 64  # search nodes between clock reads (a node can cost a millisecond)


class ExactCover:
    def __init__(self, n_primary: int, n_secondary: int) -> None:
        self.n_primary = n_primary
        ncol = n_primary + n_secondary
        self.n_columns = ncol
        heads = range(ncol + 1)
        self.U: list[int] = list(heads)
        self.D: list[int] = list(heads)
        self.C: list[int] = list(heads)
        self.ROW: list[int] = [-1] * (ncol + 1)
        self.S: list[int] = [0] * (ncol + 1)
        # header list: root 0 and the primary headers 1..n_primary, cyclic
        self.L: list[int] = [n_primary] + list(range(n_primary))
        self.R: list[int] = list(range(1, n_primary + 1)) + [0]
        self.RS: list[int] = [ncol + 1]  # RS[r] = first node of row r; one past the last row's end
        self.search_nodes = 0

    @property
    def n_rows(self) -> int:
        return len(self.RS) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.C)

    def add_row(self, columns: Sequence[int]) -> int:
        """Append a row covering ``columns`` (0-based, distinct); returns its id.

        The row goes to the bottom of each of its columns, so rows added first
        are tried first.
        """
        U, D, C, ROW, S = self.U, self.D, self.C, self.ROW, self.S
        r = len(self.RS) - 1
        j = len(C)
        for col in columns:
            h = col + 1
            last = U[h]
            C.append(h)
            ROW.append(r)
            U.append(last)
            D.append(h)
            D[last] = j
            U[h] = j
            S[h] += 1
            j += 1
        self.RS.append(j)
        return r

    def unlink_row(self, r: int) -> None:
        U, D, C, S = self.U, self.D, self.C, self.S
        for j in range(self.RS[r], self.RS[r + 1]):
            u = U[j]
            d = D[j]
            D[u] = d
            U[d] = u
            S[C[j]] -= 1

    def relink_row(self, r: int) -> None:
        U, D, C, S = self.U, self.D, self.C, self.S
        for j in range(self.RS[r + 1] - 1, self.RS[r] - 1, -1):
            U[D[j]] = j
            D[U[j]] = j
            S[C[j]] += 1

    def solve(self, deadline: float, progress: "Progress | None" = None) -> tuple[Decision, list[int]]:
        """First exact cover found: (FOUND, row ids) / (INFEASIBLE, []) / (ABORTED, []) past the deadline.

        Column choice: the primary column with the fewest rows (MRV), the
        leftmost on ties. The matrix is restored on every return. ``progress``
        is ticked at each clock read.
        """
        U, D, C, S, L, R, ROW, RS = self.U, self.D, self.C, self.S, self.L, self.R, self.ROW, self.RS
        npri = self.n_primary
        clock = time.perf_counter

        def cover(c: int) -> None:
            if c <= npri:
                left, right = L[c], R[c]
                R[left] = right
                L[right] = left
            i = D[c]
            while i != c:
                row = ROW[i]
                for j in range(RS[row], RS[row + 1]):
                    if j != i:
                        u = U[j]
                        d = D[j]
                        D[u] = d
                        U[d] = u
                        S[C[j]] -= 1
                i = D[i]

        def uncover(c: int) -> None:
            i = U[c]
            while i != c:
                row = ROW[i]
                for j in range(RS[row + 1] - 1, RS[row] - 1, -1):
                    if j != i:
                        S[C[j]] += 1
                        U[D[j]] = j
                        D[U[j]] = j
                i = U[i]
            if c <= npri:
                R[L[c]] = c
                L[R[c]] = c

        stack_c: list[int] = []
        stack_r: list[int] = []
        nodes = 0
        countdown = 1  # read the clock at the first node, then every _CHECK_EVERY
        while True:
            if R[0] == 0:
                self.search_nodes += nodes
                found = [ROW[r] for r in stack_r]
                self._unwind(stack_c, stack_r, cover, uncover)
                return Decision.FOUND, found
            # choose: fewest rows, leftmost on ties
            c = R[0]
            s = S[c]
            j = R[c]
            while j != 0 and s:
                if S[j] < s:
                    c = j
                    s = S[j]
                j = R[j]
            cover(c)
            r = D[c]
            while True:
                if r == c:  # column exhausted: back up one level
                    uncover(c)
                    if not stack_c:
                        self.search_nodes += nodes
                        return Decision.INFEASIBLE, []
                    c = stack_c.pop()
                    r = stack_r.pop()
                    row = ROW[r]
                    for j in range(RS[row + 1] - 1, RS[row] - 1, -1):
                        if j != r:
                            uncover(C[j])
                    r = D[r]
                    continue
                nodes += 1
                countdown -= 1
                if not countdown:
                    countdown = _CHECK_EVERY
                    if progress is not None:
                        progress.tick(_CHECK_EVERY)
                    if clock() > deadline:
                        self.search_nodes += nodes
                        stack_c.append(c)
                        stack_r.append(r)
                        self._unwind(stack_c, stack_r, cover, uncover, last_covered=False)
                        return Decision.ABORTED, []
                stack_c.append(c)
                stack_r.append(r)
                row = ROW[r]
                for j in range(RS[row], RS[row + 1]):
                    if j != r:
                        cover(C[j])
                break

    def _unwind(self, stack_c: list[int], stack_r: list[int], cover: Callable[[int], None],
                uncover: Callable[[int], None], last_covered: bool = True) -> None:
        """Undo the covers of every level, innermost first, restoring the matrix.

        last_covered False: the innermost row was pushed but its other columns
        were not covered yet.
        """
        C, ROW, RS = self.C, self.ROW, self.RS
        first = True
        while stack_c:
            c = stack_c.pop()
            r = stack_r.pop()
            if last_covered or not first:
                row = ROW[r]
                for j in range(RS[row + 1] - 1, RS[row] - 1, -1):
                    if j != r:
                        uncover(C[j])
            first = False
            uncover(c)
