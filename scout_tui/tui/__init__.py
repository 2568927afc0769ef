"""The full-screen front end (Textual): the app, its screens and features. Widgets are in
``scout_tui/widgets/``.
"""
