"""scout-tui's widgets, one per module; the app imports them from here.

Each name is imported on first use (PEP 562 ``__getattr__``), so importing one widget imports
only its module: the first frame imports the chat, composer and status bar, not the side panes
(mounted after it) or the screens it does not show (the cost and prompt views, the compaction
preview).
"""

from typing import TYPE_CHECKING, Any

# The scout-specific CSS variables the widgets use, with fallbacks: Textual fails to parse
# CSS naming an undefined variable, so an app showing these widgets returns them from
# ``App.get_theme_variable_defaults``; themes override them.
from ..theming.themes import VARIABLE_DEFAULTS as THEME_VARIABLE_DEFAULTS

if TYPE_CHECKING:
    from .chat_view import ChatView
    from .compaction import CompactionMarker, CompactPreview
    from .composer import Composer
    from .cost_view import CostView
    from .prompt_view import PromptView
    from .session_tree import SessionTree
    from .status_bar import StatusBar
    from .tool_activity import ToolActivity

_LATER = {"ChatView": "chat_view", "CompactionMarker": "compaction", "CompactPreview": "compaction",
          "Composer": "composer", "CostView": "cost_view", "PromptView": "prompt_view",
          "SessionTree": "session_tree", "StatusBar": "status_bar", "ToolActivity": "tool_activity"}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LATER[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "THEME_VARIABLE_DEFAULTS",
    "ChatView",
    "CompactPreview",
    "CompactionMarker",
    "Composer",
    "CostView",
    "PromptView",
    "SessionTree",
    "StatusBar",
    "ToolActivity",
]
