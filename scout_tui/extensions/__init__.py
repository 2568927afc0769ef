"""Extensions a project adds: skills (Markdown instructions) and plugins (Python files).
"""
