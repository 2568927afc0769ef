"""API keys: which environment variables hold them, taking them out of this process's
environment, and the list of secret values every output is redacted with.

The variables are scout-tui's own (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``SCOUT_API_KEY``)
and every provider's in the models.dev catalogue (``Provider.env``, https://models.dev) whose
name says it holds a secret (``…_KEY``, ``…_TOKEN``, ``…_SECRET…``, ``…_PAT``), so the key of a
provider not in use (``OPENAI_API_KEY`` while talking to Anthropic) is hidden as well as the one
in use. ``withhold`` removes them from ``os.environ`` and, on Linux, blanks them in the process's
initial environment block, which ``/proc/PID/environ`` shows and ``unsetenv`` leaves in place.
"""

from __future__ import annotations

import base64
import functools
import os
import re
from typing import Iterable, Mapping, MutableMapping

OWN_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SCOUT_API_KEY")
"""The variables scout-tui itself reads keys from (profiles.PROVIDER_KEY_ENV and SCOUT_API_KEY)."""

_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PAT|PASSWORD)(?:_ID)?$|_SECRET_|_TOKEN_")
MIN_SECRET = 8
"""Values shorter than this are not redacted: replacing "true" or "1234" everywhere would mangle
output and hide nothing."""

_WITHHELD: dict[str, str] = {}  # variable -> value, taken out of os.environ by ``withhold``


@functools.cache
def key_variables() -> frozenset[str]:
    """The names of the environment variables that hold provider keys (see the module docstring).

    The first call reads the models.dev catalogue (``catalog.providers``); later calls are free.
    """
    from scout_tui.config import catalog

    names = {name for provider in catalog.providers().values() for name in provider.env}
    return frozenset({*OWN_VARIABLES, *(n for n in names if _SECRET_NAME.search(n))})


def withhold(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Take every ``key_variables`` variable out of ``environ`` (default ``os.environ``), keeping
    its value for ``environment`` and ``secrets``; return the names taken, sorted.

    With ``os.environ`` on Linux, the same entries are also blanked in the initial environment
    block (``/proc/self/environ``), where another process of this user could still read them;
    a failure to do so (no /proc, a kernel that forbids writing /proc/self/mem) is ignored.
    Calling it again takes only what was added since.
    """
    target = os.environ if environ is None else environ
    taken = sorted(name for name in key_variables() if name in target)
    for name in taken:
        value = target.pop(name)
        if value:
            _WITHHELD[name] = value
    if environ is None and taken:
        _blank_initial_environment(taken)
    return taken


def withheld() -> list[str]:
    """The names ``withhold`` took out of the environment so far, sorted (for ``scout-tui doctor``)."""
    return sorted(_WITHHELD)


def environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) with the withheld key variables back in: what config
    loading reads keys from, after ``withhold`` took them out."""
    return {**_WITHHELD, **(os.environ if environ is None else environ)}


def secrets(configured: Iterable[str | None] = (), environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret value to redact, longest first (a key that contains another is replaced whole):
    the ``configured`` keys, the withheld key variables' values, and the values of key variables
    still in ``environ`` (default ``os.environ``), each also as it reads encoded (``encodings``).
    Values under ``MIN_SECRET`` characters are left out."""
    environ = os.environ if environ is None else environ
    names = key_variables() if environ else frozenset()
    values = {v for v in (*configured, *_WITHHELD.values(), *(v for k, v in environ.items() if k in names))
              if v and len(v) >= MIN_SECRET}
    return tuple(sorted({*values, *(e for v in values for e in encodings(v))}, key=len, reverse=True))


def encodings(secret: str) -> list[str]:
    """How ``secret`` reads when a command prints it encoded, for redaction to catch too: in
    hex (lower and upper case), and in base64 (RFC 4648) at each of the three byte offsets it
    may start at in the encoded stream, without the characters at either end that depend on
    the bytes around it (``base64 -w0 ~/.bashrc`` shows one of these). Forms under
    ``MIN_SECRET`` characters are left out."""
    data = secret.encode()
    found = [data.hex(), data.hex().upper()]
    for offset in range(3):
        text = base64.b64encode(bytes(offset) + data).decode()
        start = 4 if offset else 0  # the first group also holds the bytes before the secret
        end = len(text) - 4 if (offset + len(data)) % 3 else len(text)  # the last, the bytes after it
        found.append(text[start:end])
    return [f for f in found if len(f) >= MIN_SECRET]


def without_keys(environ: Mapping[str, str], secret_values: Iterable[str]) -> dict[str, str]:
    """``environ`` without the key variables and without any variable whose value is one of
    ``secret_values`` (the same key under a name no list knows): the environment tools get."""
    names, values = key_variables(), set(secret_values)
    return {k: v for k, v in environ.items() if k not in names and v not in values}


def blank_command_line(values: Iterable[str | None]) -> None:
    """Overwrite each of ``values`` (a key given as ``--api-key KEY``) with ``*`` in this
    process's command line as ``/proc/PID/cmdline`` shows it (between ``arg_start`` and
    ``arg_end``, fields 48 and 49 of /proc/self/stat), where any process of the person could
    read it. Python keeps its own copy (``sys.argv``). Linux only; failures are ignored."""
    wanted = [v.encode() for v in values if v and len(v) >= MIN_SECRET]
    if wanted:
        _rewrite_block(45, lambda block: _masked(block, wanted))


def _masked(block: bytes, wanted: list[bytes]) -> bytes:
    for value in wanted:
        block = block.replace(value, b"*" * len(value))
    return block


def _blank_initial_environment(names: Iterable[str]) -> None:
    """Overwrite ``NAME=value`` of each of ``names`` with NUL bytes in this process's initial
    environment block (between ``env_start`` and ``env_end``, fields 50 and 51 of
    /proc/self/stat, proc(5)), by writing /proc/self/mem. libc no longer points at those
    strings once ``unsetenv`` has run, and Python keeps its own copies, so nothing reads them."""
    prefixes = tuple(name.encode() + b"=" for name in names)

    def blanked(block: bytes) -> bytes:
        return b"\0".join(bytes(len(entry)) if entry.startswith(prefixes) else entry for entry in block.split(b"\0"))

    _rewrite_block(47, blanked)


def _rewrite_block(field: int, change) -> None:
    """Apply ``change`` (same-length bytes in, bytes out) to the memory between the addresses in
    fields ``field`` and ``field + 1`` (0-based after the command name) of /proc/self/stat."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[field]), int(fields[field + 1])
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            new = change(block)
            if new != block and len(new) == len(block):
                mem.seek(start)
                mem.write(new)
    except (OSError, ValueError, IndexError):
        pass
