"""The answer of a decision search: "is there a layout under this capacity?"

Why its own vocabulary: both exact searches (``search.Search``, branch and bound,
and ``dlx.ExactCover``, Algorithm X) answer that yes/no question, and their
planners turn the answers into a ``problem.Status`` (a refuted capacity proves a
bound, an aborted search proves nothing). A Decision is never a plan's status.
"""

from __future__ import annotations

import enum


class Decision(enum.StrEnum):
    FOUND = "found"  # a layout under the capacity exists (and is returned)
    INFEASIBLE = "infeasible"  # the search was exhausted: none exists
    ABORTED = "aborted"  # stopped first (deadline, node limit): nothing is known
