"""How a campaign's values reach commands: as one token of a safe alphabet, or as an environment variable.

A factor level or parameter is pasted into a command (a ``{name}`` placeholder of a setup
step, service or neighbour, or an adapter's argv) only when :func:`is_safe` holds: a number,
a word of letters, digits and ``. _ - + : , @ % /`` that starts with a letter, digit or ``_``,
or an absolute path. Such a token cannot end a command, start another, substitute, redirect,
glob, quote or become an option, wherever the template puts it. A value the campaign declares
as text (:class:`Text`) is never pasted: :func:`fill` exports it as the environment variable
``PERFLAB_<NAME>`` ahead of the command, and the template refers to ``"$PERFLAB_<NAME>"``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

#: ``{name}`` placeholders in setup, teardown, neighbour and service commands.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: One command-line token that no shell or option parser reads as more than a value: it starts with a
#: letter, digit or ``_`` (never ``-``), and holds no quote, space, ``$``, backquote, ``;``, ``|``,
#: ``&``, ``<``, ``>``, ``(``, ``)``, ``*``, ``?``, ``[``, ``]``, ``{``, ``}``, ``~``, ``!``, ``=``, ``#`` or backslash.
SAFE_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:+@%/-]*\Z")
#: An absolute path of safe characters (allowed only under a ``scratch`` location).
ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9_.,:+@%/-]*\Z")
#: A size: a number of bytes or bits, optionally with a unit suffix (4k, 64M, 1GiB, 100Mb).
SIZE = re.compile(r"\d+(?:\.\d+)?(?:[kKmMgGtTpP]i?[bB]?|[bB])?\Z")
#: A number written as text (a YAML string such as "0.5" or "1e3").
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\Z")
#: Files a tool may read without a scratch location.
READABLE_DEVICES = frozenset({"/dev/zero", "/dev/urandom", "/dev/null"})
#: Directories that are never scratch: a campaign cannot declare them (or ``/``) writable.
SYSTEM_DIRS = ("/bin", "/boot", "/dev/mem", "/etc", "/lib", "/lib64", "/proc", "/root", "/sbin", "/sys", "/usr")


def env_name(name: str) -> str:
    """The environment variable that carries the text value ``name`` to commands: ``PERFLAB_<NAME>``."""
    return f"PERFLAB_{name.upper()}"


def inside(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    """True when the absolute ``path`` (no ``..``) is one of ``roots`` or lies under one."""
    if ".." in path.split("/"):
        return False
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def is_safe(value: Any, scratch: tuple[str, ...] | list[str] | None = None) -> bool:
    """True when ``value`` may reach a command line as one token: a number, a boolean, a :data:`SAFE_WORD`
    without ``..``, or an absolute path (under one of ``scratch``, when given)."""
    if isinstance(value, (bool, int, float)):
        return True
    if not isinstance(value, str):
        return False
    if SAFE_WORD.match(value):
        return ".." not in value.split("/")
    if ABSOLUTE_PATH.match(value):
        return ".." not in value.split("/") and (scratch is None or inside(value, scratch))
    return False



class Text(str):
    """A value the campaign declares as text: it reaches commands only as an environment variable."""


def label(level: Any) -> Any:
    """The name of a factor level: itself, or the ``label`` of a level that sets several parameters."""
    return level["label"] if isinstance(level, Mapping) else level


def fill(command: str, values: Mapping[str, Any]) -> str:
    """``command`` with each ``{name}`` replaced by ``values[name]`` (others left alone), text values exported.

    Every substituted value must pass :func:`is_safe` (``ValueError`` otherwise: the campaign's
    checks refuse such values at load, so this guards values from elsewhere, e.g. an
    inventory); each :class:`Text` value is exported as ``PERFLAB_<NAME>`` before the command.
    """
    def one(match: re.Match[str]) -> str:
        name = match[1]
        if name not in values:
            return match[0]
        value = values[name]
        if isinstance(value, Text) or not is_safe(value):
            raise ValueError(f"{{{name}}}: {value!r} is not a safe command-line token; a campaign passes such a "
                             f"value as text, through ${env_name(name)}")
        return str(value)

    body = PLACEHOLDER.sub(one, command)
    exports = "".join(f"export {env_name(k)}={shlex.quote(str(v))}; " for k, v in sorted(values.items())
                      if isinstance(v, Text))
    return exports + body
