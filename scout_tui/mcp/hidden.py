"""What of an MCP server's configuration may hold a credential, and how it reads when shown: the
values of a URL's query and its password, a command's arguments after ``--api-key``, ``--token``
and the like (or ``KEY=value``, or shaped like a token), and the words of a header value
(``Bearer TOKEN``: a server that echoes the header back usually echoes the token alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

SHOWN = "[redacted]"
CREDENTIAL_NAME = re.compile(r"auth|key|token|secret|cookie|pass|session|signature|credential|dsn|bearer",
                             re.IGNORECASE)
"""A name (an option, a query key, ``NAME=``) that says its value is a credential."""
_OPTION = re.compile(r"(-{1,2}[A-Za-z0-9][\w.-]*)(?:=(.*))?\Z", re.DOTALL)
_ASSIGNMENT = re.compile(r"([A-Za-z_][\w.-]*)=(.+)\Z", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+=~]{20,}\Z")


def looks_like_token(value: str) -> bool:
    """Whether ``value`` reads as a token on its own: 20 characters or more of letters, digits
    and ``_-+=~`` (no dot, slash or space: not a path, a host or a package), with at least four
    digits, or digits and both cases (``ghp_…``, ``sk-…``, a hex key; not ``mcp-server-postgres-v2``)."""
    if not _TOKEN.match(value):
        return False
    digits = sum(c.isdigit() for c in value)
    return digits >= 4 or (digits > 0 and any(c.isupper() for c in value) and any(c.islower() for c in value))


def url_secrets(url: str) -> list[str]:
    """The values in ``url`` never to show: its password and every query value (as written and
    decoded)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed port or host: nothing to take apart
        return []
    values = [password, unquote(password)] if password else []
    for raw in re.split(r"[&;]", parts.query):
        _, _, value = raw.partition("=")
        values += [value, unquote(value.replace("+", " "))]
    return [v for v in values if v]


def shown_url(url: str) -> str:
    """``url`` as it may be shown: each query value and a password read ``[redacted]``
    (``https://h/mcp?key=[redacted]``); the rest as written."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    netloc = parts.netloc
    if password:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{SHOWN}@{host}"
    query = "&".join(f"{key}={SHOWN}" if value else key
                     for key, value in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def arg_secrets(args: Iterable[str]) -> list[str]:
    """The arguments of a command never to show (``shown_args``), and the values in URLs among
    them (``url_secrets``)."""
    args = list(args)
    shown = shown_args(args)
    found: list[str] = []
    for arg, seen in zip(args, shown):
        if arg == seen:
            continue
        found += url_secrets(arg) if "://" in arg else [arg[len(seen) - len(SHOWN):]] if seen.endswith(SHOWN) else [arg]
    return [v for v in found if v]


def shown_args(args: Iterable[str]) -> list[str]:
    """``args`` as they may be shown: the value after an option named for a credential
    (``--api-key X``, ``--token=X``, ``--password X``, ``--secret X``), of ``NAME=X`` so named
    (``key=X``, ``API_TOKEN=X``), a token-shaped argument (``looks_like_token``) and a URL's
    query values and password (``shown_url``) read ``[redacted]``."""
    shown: list[str] = []
    follows = False  # the argument before was an option named for a credential, without its value
    for arg in args:
        option, assignment = _OPTION.match(arg), _ASSIGNMENT.match(arg)
        if follows and not arg.startswith("-"):
            shown.append(SHOWN)
        elif option and option[2] is not None and CREDENTIAL_NAME.search(option[1]) and option[2]:
            shown.append(f"{option[1]}={SHOWN}")
        elif not option and assignment and CREDENTIAL_NAME.search(assignment[1]) and "://" not in arg:
            shown.append(f"{assignment[1]}={SHOWN}")
        elif "://" in arg:
            shown.append(shown_url(arg))
        elif looks_like_token(arg.partition("=")[2] or arg):
            shown.append(f"{arg.partition('=')[0]}={SHOWN}" if "=" in arg else SHOWN)
        else:
            shown.append(arg)
        follows = bool(option and option[2] is None and CREDENTIAL_NAME.search(option[1]))
    return shown


def header_secrets(values: Iterable[str]) -> list[str]:
    """Each header value, and each of its words (``Bearer TOKEN``'s token, as a server echoes
    it), never to show."""
    return [part for value in values for part in dict.fromkeys([value, *value.split()]) if part]
