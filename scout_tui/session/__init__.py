"""The session under every front end: configuration -> backend, tools, system prompt and agent;
opening, mentions, slash commands. The TUI, ``-p`` and ``acp`` drive it; it imports no front end.
"""
