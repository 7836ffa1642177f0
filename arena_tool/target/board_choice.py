"""Which boards ``board=`` picks from a manifest's: apart from the manifest's types, so a no-op
build (build_graph on the cached manifest document) picks them without building those."""

from __future__ import annotations

from arena_tool.core.errors import ArenaError, did_you_mean


def select_names(names: list[str], spec: str | None, file: str) -> list[str]:
    """The board names ``board=`` picks: 'all', 'a,b' or one name (None or '' = all), in given order."""
    if not spec or spec.strip() == "all":
        return list(names)
    chosen: list[str] = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name not in names:
            guess = did_you_mean(name, sorted(names))
            raise ArenaError(f"board '{name}' is not in the manifest", field="board",
                             hint=f"{guess}expected one of: {', '.join(sorted(names))} (or add it to {file})")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise ArenaError("no board given", field="board", hint="use board=NAME, board=a,b or board=all")
    return chosen
