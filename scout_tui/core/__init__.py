"""The vocabulary every layer shares: the message shape, the events, errors, text and token helpers.

Imports nothing of scout_tui outside this package.
"""
