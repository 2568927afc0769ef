"""Themes: TOML files that become Textual themes (so every widget, Textual's own too, follows them),
and scout-tui's colour variables derived from a theme. Imports Textual's colour and theme classes.
"""
