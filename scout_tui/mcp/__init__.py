"""MCP client: servers from ``[mcp.servers.NAME]`` in scout.toml and a project's ``.mcp.json``,
their tools offered to the model as ``mcp__SERVER__TOOL`` and their prompts as slash commands.

``config`` reads and checks the servers (no SDK import); ``client`` runs them with the official
``mcp`` SDK on a thread of its own; ``tools`` turns their tools into ``Tool`` objects. The SDK is
imported only once a server starts, so start-up does not pay for it.
"""
