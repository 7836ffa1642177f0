"""The one user-facing exception, and the exit codes.

Deep code raises ``ArenaError`` with whatever location it knows (often only
``field``); callers that know the file or line fill them in (``located``).
It is rendered once, at the edge (``cli.main`` and the SCons actions), as
``file:line:col: error: field: message (hint: ...)``, always one line:
control characters from the input (a name ending in a newline) are shown
escaped (``'kws\\n'``).
"""

from __future__ import annotations

from typing import Any, NoReturn, Sequence

EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # a check failed or a budget is exceeded
EXIT_USAGE = 2  # usage or input error
EXIT_BUG = 3  # an arena bug (including a planner producing an invalid plan)


class ArenaError(Exception):
    """A user error: bad input, a failed check or an exceeded budget."""

    def __init__(
        self,
        msg: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        field: str | None = None,
        hint: str | None = None,
        exit_code: int = EXIT_USAGE,
    ) -> None:
        super().__init__(msg)
        self.msg = msg
        self.file = file
        self.line = line
        self.col = col
        self.field = field
        self.hint = hint
        self.exit_code = exit_code

    def located(self, **where: object) -> "ArenaError":
        """Fill in location fields that are still unknown; returns self."""
        for key, value in where.items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        return self

    def render(self) -> str:
        return _one_line(self._render())

    def _render(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        kind = "error"
        field = f"{self.field}: " if self.field else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}{kind}: {field}{self.msg}{hint}"

    def __str__(self) -> str:
        return self.render()


def _one_line(text: str) -> str:
    """``text`` with control characters escaped (a newline becomes the two characters ``\\n``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class CheckFailed(ArenaError):
    """A check failed or a budget is exceeded (exit status 1)."""

    def __init__(self, msg: str, **kw: Any) -> None:
        kw.setdefault("exit_code", EXIT_CHECK_FAILED)
        super().__init__(msg, **kw)


class ArenaBug(ArenaError):
    """A planner (or any check arena makes of its own output) broke its contract: exit status 3."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, exit_code=EXIT_BUG, hint="this is an arena bug; please report it with the model")


class MachineError(ArenaError, OSError):
    """A file could not be written or read for a reason of the machine (disk full, read-only, permissions).

    Also an OSError, so a caller for whom the file is optional (a cache) keeps
    working with ``except OSError``.
    """


_OS_HINTS = {
    "ENOSPC": "the disk is full: free some space and run again",
    "EDQUOT": "the disk quota is exceeded: free some space and run again",
    "EROFS": "the file system is read-only: write the output somewhere else",
    "EACCES": "check the permissions of the file and of its folder",
    "EPERM": "check the permissions of the file and of its folder",
    "EISDIR": "the path is a folder: name a file",
    "ENOENT": "check that the folder exists",
}


def os_error(exc: OSError, doing: str, path: str | None = None) -> MachineError:
    """One ArenaError (exit 2) for an OSError while ``doing`` ('write', 'read') ``path``.

    Environment failures are the user's to fix, not arena bugs, so they get a
    message naming the file and the errno text instead of a traceback.
    """
    import errno

    name = errno.errorcode.get(exc.errno or -1, "")
    where = path if path is not None else (exc.filename if isinstance(exc.filename, str) else None)
    text = exc.strerror or str(exc) or type(exc).__name__
    return MachineError(f"cannot {doing}: {text}", file=where,
                      hint=_OS_HINTS.get(name, "check the disk and the file's permissions"))


def did_you_mean(word: str, options: Sequence[str], cutoff: float = 0.6) -> str:
    """"did you mean 'x'? " for the closest option, or "": the head of every such hint."""
    import difflib  # only on the error path: a no-op build imports this module

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=cutoff)
    return f"did you mean '{close[0]}'? " if close else ""


def fail(msg: str, **kw: Any) -> NoReturn:
    """Raise ArenaError; a NoReturn helper so type checkers follow control flow."""
    raise ArenaError(msg, **kw)


def require_regular(path: str, what: str, field: str | None = None) -> None:
    """Refuse ``path`` before it is opened when it names a FIFO, a device, a socket or a folder: a FIFO's
    open() waits for a writer (a hang), and arena reads an input more than once. A path that is not
    there is left to the caller's own "not found"."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode)
                else "a device or a socket")
        raise ArenaError(f"{what} is {kind}, not a regular file", file=path, field=field,
                         hint="give the file itself (arena may read it more than once)")
