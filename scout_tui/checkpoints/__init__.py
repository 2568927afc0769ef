"""Checkpoints: snapshots of the workspace's files (the ``git`` program) and what /undo, /redo and
a rewind write back.
"""
