"""scout-tui: a full-screen terminal coding assistant built on Textual."""

__version__ = "0.1.0"
