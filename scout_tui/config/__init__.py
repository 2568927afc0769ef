"""Configuration: the layered settings files, provider profiles, API keys, model metadata, themes,
plugin trust and what was learnt of each model.
"""
