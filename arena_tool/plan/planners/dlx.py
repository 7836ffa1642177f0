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

# Row cells unlinked between clock reads (about a millisecond of CPython). The clock is read
# by work, not by nodes: one node covering long rows can unlink a large part of the matrix,
# and 64 such nodes ran 5 s past a 1 s limit.
_CHECK_CELLS = 4096


class _Aborted(Exception):
    """The deadline passed during a search (raised from inside a cover)."""


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
        self.spent = False  # an aborted search left rows covered: no further search

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
        leftmost on ties. The matrix is restored on FOUND and INFEASIBLE; ABORTED
        returns at once and leaves it spent (unwinding a deep stack of long rows
        took a quarter second past the deadline). ``progress``
        is ticked at each clock read, which comes after every _CHECK_CELLS row
        cells the covers unlinked (each node counts one more).
        """
        if self.spent:
            raise RuntimeError("dlx: solve on a matrix an aborted search left spent")
        U, D, C, S, L, R, ROW, RS = self.U, self.D, self.C, self.S, self.L, self.R, self.ROW, self.RS
        npri = self.n_primary
        clock = time.perf_counter
        work = 0  # row cells the covers visited
        next_read = 0  # read the clock at the first node, then after every _CHECK_CELLS of work
        nodes = 0
        ticked = 0

        def read_clock() -> None:
            """Tick the progress line; past the deadline raise _Aborted, even inside a cover
            (an aborted matrix is spent, so no cover needs finishing)."""
            nonlocal next_read, ticked
            next_read = work + _CHECK_CELLS
            if progress is not None:
                progress.tick(nodes - ticked)
                ticked = nodes
            if clock() > deadline:
                raise _Aborted

        def cover(c: int) -> None:
            nonlocal work
            if c <= npri:
                left, right = L[c], R[c]
                R[left] = right
                L[right] = left
            i = D[c]
            while i != c:
                row = ROW[i]
                work += RS[row + 1] - RS[row]
                if work >= next_read:
                    read_clock()
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
        try:
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
                    work += 1
                    if work >= next_read:
                        read_clock()
                    stack_c.append(c)
                    stack_r.append(r)
                    row = ROW[r]
                    for j in range(RS[row], RS[row + 1]):
                        if j != r:
                            cover(C[j])
                    break
        except _Aborted:
            self.search_nodes += nodes
            self.spent = True  # undoing the covers would cost as much as making them
            return Decision.ABORTED, []

    def _unwind(self, stack_c: list[int], stack_r: list[int], cover: Callable[[int], None],
                uncover: Callable[[int], None]) -> None:
        """Undo the covers of every level, innermost first, restoring the matrix."""
        C, ROW, RS = self.C, self.ROW, self.RS
        while stack_c:
            c = stack_c.pop()
            r = stack_r.pop()
            row = ROW[r]
            for j in range(RS[row + 1] - 1, RS[row] - 1, -1):
                if j != r:
                    uncover(C[j])
            uncover(c)
