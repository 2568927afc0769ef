"""scout-tui's widgets, one per module; the app imports them from here."""

from .chat_view import ChatView
from .compaction import CompactionMarker, CompactPreview
from .composer import Composer
from .cost_view import CostView
from .prompt_view import PromptView
from .session_tree import SessionTree
from .status_bar import StatusBar
from .tool_activity import ToolActivity

# The scout-specific CSS variables the widgets use, with fallbacks: Textual fails to parse
# CSS naming an undefined variable, so an app showing these widgets returns them from
# ``App.get_theme_variable_defaults``; themes override them.
from ..themes import VARIABLE_DEFAULTS as THEME_VARIABLE_DEFAULTS

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
