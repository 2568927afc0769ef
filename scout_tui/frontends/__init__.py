"""The front ends without a screen: headless ``-p``, the ACP agent, ``doctor`` and the checkpoint
commands.
"""
