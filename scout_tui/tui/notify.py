"""Telling the person that a turn ended, or that an approval waits, while the terminal is in the
background: a desktop notification where the terminal shows one, else the bell (``notify`` in
scout.toml: "auto", "bell" or "off").

A feature of ``ScoutApp`` (app.py). Whether the terminal has focus is Textual's
``App.app_focus`` (the terminal's FocusIn/FocusOut reports, ``events.AppFocus``/``AppBlur``).
Every escape sequence goes out through ``compat.write_to_terminal``, here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from scout_tui import compat
from scout_tui.core.redaction import redact
from scout_tui.core.text import sanitize
from scout_tui.tui.feature import Feature

Form = Literal["osc777", "osc99", "osc9", "bell"]
"""How a terminal shows a notification: OSC 777 ``notify`` (rxvt-unicode's, taken up by VTE,
WezTerm, foot, Ghostty), OSC 99 (kitty's own protocol), OSC 9 (iTerm2's, also Windows Terminal
and ConEmu), or only the bell."""

Kind = Literal["finished", "approval"]
"""What a notification says: a turn finished, or an approval prompt or the plan dialog waits."""

WHAT = {"finished": "finished", "approval": "needs your approval"}
"""The end of a notification's text, by kind."""

TITLE = "scout-tui"
"""The notification's title where the form has one (OSC 777)."""

TEXT_LIMIT = 100
"""Characters of a notification's text at most (a desktop notification is one short line)."""

LABEL_LIMIT = 48
"""Characters of the session's title or first prompt in that text at most."""

DETECTING = ("TERM", "TERM_PROGRAM", "LC_TERMINAL", "TMUX", "KITTY_WINDOW_ID", "WEZTERM_PANE",
             "GHOSTTY_RESOURCES_DIR", "ITERM_SESSION_ID", "WT_SESSION", "ConEmuPID")
"""The environment variables ``terminal_form`` reads (a test clears them all)."""

def terminal_form(env: Mapping[str, str]) -> Form:
    """The notification form the terminal described by ``env`` (``os.environ``) shows.

    ``TERM_PROGRAM`` names the terminal in WezTerm, Ghostty and iTerm2 (tmux replaces it with
    "tmux", so each terminal's own variables are read too: ``WEZTERM_PANE``,
    ``GHOSTTY_RESOURCES_DIR``, ``KITTY_WINDOW_ID``, ``LC_TERMINAL``/``ITERM_SESSION_ID``);
    ``TERM`` says foot (``foot``, ``foot-extra``), kitty (``xterm-kitty``) and Ghostty
    (``xterm-ghostty``); Windows Terminal sets ``WT_SESSION`` and ConEmu ``ConEmuPID``. Any
    other terminal gets the bell. kitty reads OSC 99, not OSC 777 (its documentation, "Desktop
    notifications")."""
    program = env.get("TERM_PROGRAM", "").lower()
    term = env.get("TERM", "").lower()
    if (program in ("wezterm", "ghostty") or term == "xterm-ghostty" or term.startswith("foot")
            or "WEZTERM_PANE" in env or "GHOSTTY_RESOURCES_DIR" in env):
        return "osc777"
    if term == "xterm-kitty" or "KITTY_WINDOW_ID" in env:
        return "osc99"
    if (program == "iterm.app" or env.get("LC_TERMINAL") == "iTerm2" or "ITERM_SESSION_ID" in env
            or "WT_SESSION" in env or "ConEmuPID" in env):
        return "osc9"
    return "bell"


def notification_sequence(form: Form, text: str, *, tmux: bool = False) -> str:
    """The escape sequence that shows ``text`` (already ``notification_text``: no control
    characters, no ``;``) in form ``form``; "" for the bell (``App.bell`` rings it). Inside tmux
    (``tmux``: ``TMUX`` is set) it is wrapped in tmux's passthrough (``ESC P tmux; … ESC \\``,
    each ESC inside doubled), which tmux passes on when ``allow-passthrough`` is on.

    Forms: OSC 777 ``ESC ] 777 ; notify ; TITLE ; text BEL``; OSC 99 ``ESC ] 99 ; ; text ESC \\``
    (https://sw.kovidgoyal.net/kitty/desktop-notifications/); OSC 9 ``ESC ] 9 ; text BEL``
    (iTerm2's "Post a notification")."""
    if form == "bell":
        return ""
    sequence = {"osc777": f"\x1b]777;notify;{TITLE};{text}\x07",
                "osc99": f"\x1b]99;;{text}\x1b\\",
                "osc9": f"\x1b]9;{text}\x07"}[form]
    if tmux:
        sequence = "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def notification_text(label: str, kind: Kind, secrets: tuple[str, ...] = ()) -> str:
    """"<label>: finished" or "<label>: needs your approval": ``label`` (the session's title or
    its first prompt) on one line without control characters or escape sequences
    (``text.sanitize``), ``;`` (a field separator of OSC 777) written as ``,``, every one of
    ``secrets`` replaced by "[redacted]", cut to ``LABEL_LIMIT`` characters; the whole at most
    ``TEXT_LIMIT``. Without a label: "scout: finished"."""
    clean = " ".join(redact(sanitize(label), secrets).replace(";", ",").split())
    if len(clean) > LABEL_LIMIT:
        clean = clean[: LABEL_LIMIT - 1].rstrip() + "…"
    return f"{clean or 'scout'}: {WHAT[kind]}"[:TEXT_LIMIT]


class Notifier(Feature):
    """The notifications of ``ScoutApp``: ``turn_ended`` and ``needs_you`` send one when the
    terminal does not have focus, as the ``notify`` setting says; a turn that ended so fires the
    session's ``Notification`` hooks too ("idle_prompt", as Claude Code when it waits for you; an
    approval fires them from the engine, for every front end)."""

    def turn_ended(self) -> None:
        """A turn ended, for any reason: tell the person if they look elsewhere."""
        self.send("finished")

    def needs_you(self) -> None:
        """An approval prompt or the plan dialog waits: tell the person if they look elsewhere."""
        self.send("approval")

    def send(self, kind: Kind, env: Mapping[str, str] | None = None) -> bool:
        """Send one notification of ``kind`` unless the terminal has focus or ``notify`` is
        "off": with "auto" in the form ``terminal_form(env)`` gives (``env`` defaults to
        ``os.environ``), with "bell" the bell. Returns whether one was sent."""
        app = self.app
        setting = app.session.config.notify
        if app.app_focus or setting == "off":
            return False
        env = os.environ if env is None else env
        text = notification_text(self.label(), kind, app.secrets)
        sequence = notification_sequence(terminal_form(env), text, tmux="TMUX" in env) if setting == "auto" else ""
        if sequence:
            compat.write_to_terminal(app, sequence)
        else:
            app.bell()
        if kind == "finished" and app.session.hooks is not None:
            app.session.hooks.notify(text, "idle_prompt")
        return True

    def label(self) -> str:
        """What names the session in a notification: its title as opened, else the text of its
        first prompt, else ""."""
        session = self.app.session
        info = session.opened.info if session.opened is not None else None
        if info is not None and info.title:
            return info.title
        from scout_tui.session.mentions import typed_text

        for message in session.messages:
            if message and message.get("role") == "user" and (text := typed_text(message)).strip():
                return text  # the prompt itself: attached files and hook context left out
        return ""
