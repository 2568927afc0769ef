"""The slash commands of an ACP session: ``/compact [focus]``, ``/undo``, ``/redo``, ``/cost`` and
the plugins' commands, advertised to the client (``available_commands_update``,
https://agentclientprotocol.com/protocol/slash-commands) and run when a prompt's text is one of
them; what each did comes back as the agent's message. Another ``/word`` goes to the model.

The work is the session's (``session.compacting``, ``session.restore``, ``session.cost``); here
it is only worded for a client that shows Markdown and has no preview to edit or question to
confirm: ``/compact`` applies its summary, ``/undo`` refuses to overwrite what someone else changed.
"""

from __future__ import annotations

from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput

from scout_tui.session.commands import Commands

HINTS = {"compact": "what the summary should keep (optional)"}
"""The input hint a client shows after a command's name, for the commands that take one."""


def stopped(name: str) -> str:
    """What a command stopped by ``session/cancel`` says (``/compact``: nothing changed)."""
    from scout_tui.session.compacting import STOPPED

    return STOPPED if name == "compact" else f"/{name} stopped."


def advertised(commands: Commands) -> AvailableCommandsUpdate:
    """``commands`` as the ``available_commands_update`` a client offers when ``/`` is typed:
    each name, what it does, and the hint of its input when it takes one."""
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
        AvailableCommand(name=c.name, description=c.help + (f" ({c.owner})" if c.owner != "scout-tui" else ""),
                         input=AvailableCommandInput(UnstructuredCommandInput(hint=HINTS.get(c.name, c.args)))
                         if c.args else None)
        for c in commands])
