"""The session store: the append-only sqlite event log (the truth), its projections and queries,
opening a stored session, exports.
"""
