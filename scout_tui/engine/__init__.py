"""The engine: the agent loop (model -> tool calls -> results) and what it computes before each
model call (context window, compaction, prompt strategies, token budget, summary). No Textual.
"""
