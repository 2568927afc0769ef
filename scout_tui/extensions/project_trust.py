"""What a project brings that runs only once the person trusts it, in one list for ``scout-tui
trust`` and ``/trust``: its plugins (``.agents/plugins``), MCP servers (``.mcp.json``, its
scout.toml), agent files (``.agents/agents``, ``.claude/agents``) and hooks (its scout.toml,
``.claude/settings*.json``)."""

from __future__ import annotations

from pathlib import Path

from scout_tui.config.trust import PluginFile


def project_trust(cwd: Path) -> tuple[list[PluginFile], list[str]]:
    """Each trust entry of the project in ``cwd`` with its state (plugins, MCP servers, agents,
    hooks, in that order) and the problems met reading them. Never raises."""
    from scout_tui.extensions.agents import project_agent_trust
    from scout_tui.extensions.hook_config import project_hook_trust
    from scout_tui.extensions.plugins import project_plugin_trust
    from scout_tui.mcp.config import project_server_trust

    files: list[PluginFile] = []
    problems: list[str] = []
    for found, said in (project_plugin_trust(cwd), project_server_trust(cwd), project_agent_trust(cwd),
                        project_hook_trust(cwd)):
        files += found
        problems += [p for p in said if p not in problems]  # an unreadable trust file is said once
    return files, problems
