"""Errors a user can fix: one line each, naming the file, line, field, what was expected, what was found and what to do.

Every error the library raises for a mistake in what the user wrote or ran (a campaign, a
lab file, an inventory, a study declaration, a record on disk, a host that does not
answer) derives from :class:`UserError`. The ``perflab`` command prints such an error as
one line per problem and exits 2; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
from typing import Any

_UNSET: Any = object()


def one_line(text: object) -> str:
    """``text`` on one line: line breaks (and the blanks around them) become single spaces."""
    return re.sub(r"\s*[\r\n]+\s*", " ", str(text)).strip()


class UserError(Exception):
    """An error the user can fix, rendered as one line (or one line per problem, see :attr:`problems`).

    Either a ready ``message`` (what most callers pass), or its parts: ``file``, ``line``,
    ``field``, what was ``expected``, what was ``found`` and what to do (``fix``); both may be
    combined, the message then follows the location. ``problems`` holds several such lines
    when one file has several mistakes (a campaign, a lab file, a study declaration).
    """

    def __init__(self, message: str = "", *, file: object = None, line: int | None = None, field: str | None = None,
                 expected: str | None = None, found: object = _UNSET, fix: str | None = None) -> None:
        self.file = None if file is None else str(file)
        self.line, self.field, self.expected, self.found, self.fix = line, field, expected, found, fix
        self.message = message
        #: The error's lines, one per problem (one unless a file had several mistakes).
        self.problems: list[str] = getattr(self, "problems", None) or [self.render()]
        super().__init__(self.render())

    def render(self) -> str:
        """The error as one line: ``file:line: field: message; expected X, found Y; fix``."""
        where = ":".join(str(p) for p in (self.file, self.line) if p is not None)
        head = ": ".join(p for p in (where, self.field) if p)
        body = [one_line(self.message)] if self.message else []
        if self.expected is not None or self.found is not _UNSET:
            parts = ([f"expected {self.expected}"] if self.expected is not None else []) + \
                    ([f"found {self.found!r}"] if self.found is not _UNSET else [])
            body.append(", ".join(parts))
        if self.fix:
            body.append(one_line(self.fix))
        text = "; ".join(body)
        return f"{head}: {text}" if head and text else head or text

    def __str__(self) -> str:
        return "\n".join(self.problems)

    def __reduce__(self) -> tuple:
        # subclasses take other arguments than ``args``: rebuild from the attributes (pickling, processes)
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[UserError], args: tuple, state: dict) -> UserError:
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class FileError(UserError):
    """A file the user wrote is invalid: one ``file:line: field: problem`` line per problem."""

    def __init__(self, path: object, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = [one_line(p) for p in problems] or [f"{path}: invalid"]
        super().__init__("; ".join(self.problems))


class InputError(UserError, ValueError):
    """A value the user gave cannot be used as asked: a tool parameter of a campaign, a report's arguments, a
    tidy table that lacks the rows a report needs, a file of the wrong format.

    Also a :class:`ValueError`, so that callers that caught the plain ``ValueError`` raised before still do.
    """
