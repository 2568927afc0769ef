"""scout-tui's widgets, one per module; the app imports them from here.

The screens the first frame does not show (the cost and prompt views, the compaction
preview) are imported on first use of their names (PEP 562 ``__getattr__``).
"""

from typing import TYPE_CHECKING, Any

from .chat_view import ChatView
from .composer import Composer
from .session_tree import SessionTree
from .status_bar import StatusBar
from .tool_activity import ToolActivity

# The scout-specific CSS variables the widgets use, with fallbacks: Textual fails to parse
# CSS naming an undefined variable, so an app showing these widgets returns them from
# ``App.get_theme_variable_defaults``; themes override them.
from ..themes import VARIABLE_DEFAULTS as THEME_VARIABLE_DEFAULTS

if TYPE_CHECKING:
    from .compaction import CompactionMarker, CompactPreview
    from .cost_view import CostView
    from .prompt_view import PromptView

_LATER = {"CompactionMarker": "compaction", "CompactPreview": "compaction", "CostView": "cost_view",
          "PromptView": "prompt_view"}


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
