"""``@path`` mentions in a prompt: each mentioned file's text (or folder's listing) goes to the
model with the prompt, as one more text block of the user message.

A mention is ``@`` at the start of the prompt or after whitespace (or an opening bracket or
quote after it), then a path relative to
the workspace (``@src/app.py``, ``@docs/``); trailing punctuation that is not part of an
existing path is left out (``see @a.py,`` mentions ``a.py``), and so is a line suffix
(``@a.py:12``); a name with spaces is quoted (``@"my notes.txt"``). A path that does not
exist is not a mention (``@someone`` stays text; one that reads as a path is said). Each mention becomes a block
``<mention path="…" kind="file|folder" …>`` + text + ``</mention>``: the model reads the path
and the content; ``mention_of`` reads the header back, so the chat shows a chip instead of
the content and a message's typed text (``typed_text``) leaves the blocks out.

Limits: ``MAX_BYTES`` and ``MAX_LINES`` per file, ``MAX_ENTRIES`` per folder; what is cut is
said in the block (the ``read`` tool can page on). A binary file, a path outside the
workspace, or one the permission rules deny is not attached: ``prompt_content`` says why.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.session.completion import OPENING
from scout_tui.core.messages import blocks, is_turn_marker

if TYPE_CHECKING:
    from scout_tui.tools.permissions import Policy

MAX_BYTES = 100_000
MAX_LINES = 2_000
MAX_ENTRIES = 300

_MENTION = re.compile(r"(?<![^\s" + re.escape(OPENING) + r"])@(?:\"([^\"\n]+)\"|(\S+))")
_HEADER = re.compile(r'<mention path="([^"]*)" kind="(file|folder)" size="([^"]*)"( cut="[^"]*")?>\n')
_TRAILING = ",.;:!?)]}'\"`"
_LINE_SUFFIX = re.compile(r"(?::\d+(?:[-:]\d+)?|#L\d+(?:-L?\d+)?)\Z")  # src/app.py:12, app.py#L3-L9
_IMAGE = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tiff")


@dataclass(frozen=True)
class Mention:
    """One attached path: ``path`` (workspace-relative, ``/`` for a folder's end), ``kind``
    ("file" or "folder"), ``size`` ("120 lines", "14 entries") and ``cut`` (what was left
    out, "" when nothing)."""

    path: str
    kind: str
    size: str
    cut: str = ""


def mentioned_paths(text: str, root: Path) -> list[str]:
    """The existing paths ``text`` mentions, in order, each once (as typed, without the ``@``,
    the quotes of ``@"a name with spaces"``, trailing punctuation and a line suffix such as
    ``:12`` or ``#L3-L9``)."""
    found: list[str] = []
    for word in _words(text):
        word = _existing(word, root)
        if word and word not in found:
            found.append(word)
    return found


def unknown_paths(text: str, root: Path) -> list[str]:
    """The words after ``@`` in ``text`` that read as paths (a ``/`` or a file extension) but
    name nothing in ``root``: said to the person, as they are not attached."""
    return [word for word in _words(text) if not _existing(word, root)
            and re.search(r"/|\.[A-Za-z0-9]{1,8}\Z", word.rstrip(_TRAILING))]


def _words(text: str) -> list[str]:
    return [match.group(1) or match.group(2) for match in _MENTION.finditer(text)]


def _existing(word: str, root: Path) -> str:
    """``word`` less trailing punctuation and a line suffix, as far as needed to name an
    existing path under ``root``; "" when nothing does."""
    while word and not (root / word).exists():
        if word[-1] in _TRAILING:
            word = word[:-1]
        elif _LINE_SUFFIX.search(word):
            word = _LINE_SUFFIX.sub("", word)
        else:
            return ""
    return word


def prompt_content(text: str, root: Path, policy: Policy | None = None,
                   attached: Collection[Path] = ()) -> tuple[list[dict], list[str]]:
    """The user message content for prompt ``text`` typed in workspace ``root``: the text
    block, then one block per mention; and the notes on mentions not attached.

    A path ``policy`` (the permission rules) denies to the ``read`` tool is not attached; None
    allows every path inside ``root``. A path in ``attached`` (resolved paths whose contents
    the prompt already carries: an ACP client's embedded resources) is not attached again.
    """
    content: list[dict] = [{"type": "text", "text": text}]
    notes: list[str] = []
    workspace = root.resolve()
    notes += [f"@{word} not found: not attached." for word in unknown_paths(text, root)]
    for word in mentioned_paths(text, root):
        path = (root / word).resolve()
        if path in attached:
            continue
        if not path.is_relative_to(workspace):
            notes.append(f"@{word} is outside the project: not attached (ask the model to read it).")
            continue
        if policy is not None and (check := policy.check("read", {"path": str(path)}, root, read_only=True)).verdict == "deny":
            notes.append(f"@{word} not attached: {check.reason}")
            continue
        try:
            block = folder_block(word, path, root) if path.is_dir() else file_block(word, path)
        except (OSError, ValueError) as e:
            notes.append(f"@{word} not attached: {e}")
            continue
        content.append({"type": "text", "text": block})
    return content, notes


def file_block(word: str, path: Path) -> str:
    """The block for file ``path`` mentioned as ``word``: its first ``MAX_LINES`` lines within
    ``MAX_BYTES``, the cut said in the header and at the end.

    Raises:
        ValueError: the file is binary (a NUL byte in its first 8 KB).
        OSError: it cannot be read.
    """
    with path.open("rb") as f:
        data = f.read(MAX_BYTES + 1)
        size = max(len(data), path.stat().st_size)
    if b"\0" in data[:8192] or (path.suffix.lower() in _IMAGE and not data[:64].isascii()):
        kind = "an image" if path.suffix.lower() in _IMAGE else "a binary file"
        raise ValueError(f"{kind} ({size:,} bytes); only text files are attached")
    whole = len(data) <= MAX_BYTES
    lines = data[:MAX_BYTES].decode("utf-8", "replace").splitlines(keepends=True)
    if not whole and len(lines) > 1 and not lines[-1].endswith("\n"):
        lines.pop()  # cut mid-line by the byte limit: end at the last whole line
    shown = lines[:MAX_LINES]
    cut = ""
    if not whole or len(shown) < len(lines):
        cut = f"showing lines 1-{len(shown)}; read the file from line {len(shown) + 1} for the rest"
    body = "".join(shown)
    if body and not body.endswith("\n"):
        body += "\n"
    total = _count(len(lines), "line") if whole else f"{size:,} bytes"
    return _header(word, "file", total, cut) + body + (f"[… cut: {cut}]\n" if cut else "") + "</mention>"


def folder_block(word: str, path: Path, root: Path) -> str:
    """The block for folder ``path`` of workspace ``root`` mentioned as ``word``: its entries
    (folders with a trailing ``/``), sorted, at most ``MAX_ENTRIES``, those the workspace's
    ``.gitignore`` files ignore left out (the rules of every folder above it apply too)."""
    from scout_tui.session.workspace_files import list_files

    prefix = path.relative_to(root.resolve()).as_posix() + "/" if path != root.resolve() else ""
    entries = [p[len(prefix):] for p in list_files(root).paths
               if p.startswith(prefix) and "/" not in p[len(prefix):].rstrip("/") and p != prefix]
    entries.sort(key=lambda p: (not p.endswith("/"), p.lower()))
    word = word.rstrip("/") + "/"
    cut = f"{len(entries) - MAX_ENTRIES} more entries not listed" if len(entries) > MAX_ENTRIES else ""
    body = "".join(f"{e}\n" for e in entries[:MAX_ENTRIES])
    return _header(word, "folder", _count(len(entries), "entry", "entries"), cut) + body + (f"[… {cut}]\n" if cut else "") + "</mention>"


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _header(word: str, kind: str, size: str, cut: str) -> str:
    cut_attr = f' cut="{html.escape(cut)}"' if cut else ""
    return f'<mention path="{html.escape(word)}" kind="{kind}" size="{size}"{cut_attr}>\n'


def mention_of(block: dict) -> Mention | None:
    """The mention a content block carries (made by ``prompt_content``), else None."""
    if block.get("type") != "text":
        return None
    match = _HEADER.match(str(block.get("text") or ""))
    if match is None:
        return None
    cut = match.group(4) or ""
    return Mention(html.unescape(match.group(1)), match.group(2), match.group(3),
                   html.unescape(cut[6:-1]) if cut else "")


def mentions(message: dict) -> list[Mention]:
    """The mentions attached to user ``message``, in order."""
    return [m for b in blocks(message)[1:] if (m := mention_of(b)) is not None]


HOOK_CONTEXT = "<hook-context>"
"""How a text block a hook added to a prompt begins (``hook_context``)."""


def hook_context(text: str) -> dict:
    """The text block carrying what a ``UserPromptSubmit`` or ``SessionStart`` hook added to a prompt."""
    return {"type": "text", "text": f"{HOOK_CONTEXT}\n{text}\n</hook-context>"}


def typed_text(message: dict) -> str:
    """What the person typed in user ``message``: its text blocks without the attached
    mentions and hook context (the first block is always typed text); "" for the record of an
    interrupted or failed turn (``messages.turn_marker``), which no one typed."""
    if is_turn_marker(message):
        return ""
    parts = blocks(message)
    return "\n".join(str(b.get("text") or "") for n, b in enumerate(parts)
                     if b.get("type") == "text" and (n == 0 or mention_of(b) is None
                                                     and not str(b.get("text") or "").startswith(HOOK_CONTEXT)))
