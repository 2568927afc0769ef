"""What an ``Agent`` is given besides its backend and tools: one settings object.

``runtime.build_agent`` makes it from a ``Config`` (and the session's parts); a test makes one
with the few fields it needs. Every field has a default, so ``AgentSettings()`` is an agent with
no prompt, no limits beyond the defaults, no sandbox, no policy and no compaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from scout_tui.engine import summary as summaries

if TYPE_CHECKING:
    from scout_tui.backends.base import Backend
    from scout_tui.checkpoints.snapshots import Checkpoints
    from scout_tui.engine.budget import Estimator
    from scout_tui.tools.approvals import Approver
    from scout_tui.tools.permissions import Policy
    from scout_tui.tools.sandbox import SandboxSettings

Strategies = str | list | Callable[[list[dict]], list[dict]] | None
"""The prompt strategies applied before each call (``compaction.prepare_prompt``): a name, a
list of names or callables, or one callable; None: the configured default."""


@dataclass(slots=True)
class AgentSettings:
    """How one agent runs its turns (``Agent(backend, tools, settings)``)."""

    system: str = ""
    """The system prompt."""
    cwd: Path | None = None
    """The working directory tools resolve paths against (None: the process's current one)."""
    max_turns: int = 50
    """Model calls allowed per ``Agent.run`` before it stops (and says so)."""
    max_tokens: int = 8192
    """Output-token cap per model call, in tokens."""
    strategies: Strategies = None
    """The prompt strategies (see ``Strategies``). Ephemeral: they never change the agent's
    messages; their result is repaired by the history check."""
    compaction_settings: dict | None = None
    """Threshold overrides for the strategies, by ``[compaction]`` key (None: config and env)."""
    tool_env: dict[str, str] | None = None
    """The environment for processes tools start (None: this process's)."""
    sandbox: SandboxSettings | None = None
    """How processes tools start are sandboxed (``tools.sandbox``; None: unsandboxed)."""
    secrets: list[str] = field(default_factory=list)
    """Strings (API keys, ``keys.secrets``) replaced by ``[redacted]`` in everything the agent
    passes on: tool output (before the screen, the store, the model or a saved output file sees
    it), messages (the person's and the model's, streamed or whole), error text and notices,
    summaries. Strings shorter than ``keys.MIN_SECRET`` characters are not redacted."""
    permissions: Policy | None = None
    """The policy each tool call is checked against first (None: every call runs)."""
    approve: Approver | None = None
    """Asked, one call at a time, about a call the policy says to ask about (None: such calls
    are denied, and the model told so)."""
    output_dir: Path | None = None
    """Where a result cut to fit the model is saved whole (None: not saved)."""
    context_window: int | None = None
    """The model's context window, in tokens (None: unknown until a server's overflow error
    names it, or refuses a prompt of an estimated size, which bounds it); the token budget and
    auto-compaction need it."""
    auto_compact: float | None = None
    """The share of the context window (0 to 1] past which the conversation is summarised before
    the next call (None: never automatically)."""
    compaction: summaries.Compaction | None = None
    """The summary in force (from the session's ``session.compacted`` events)."""
    summary_backend: Backend | None = None
    """The backend that writes summaries (None: the agent's own)."""
    keep_tokens: int = summaries.KEEP_TOKENS
    """Tokens of the newest messages a summary leaves verbatim."""
    pricing: Callable[[dict, str], float | None] | None = None
    """``pricing(usage dict, model) -> dollars or None``, for the events' ``cost``."""
    cache_key: str | None = None
    """The conversation branch's id for OpenAI's ``prompt_cache_key`` (None: none)."""
    cache_ttl: str = "5m"
    """"5m" or "1h": the lifetime of Anthropic's cache breakpoints."""
    key_source: str = ""
    """Where the API key sent comes from, added to a refused key's error (``runtime.key_source``)."""
    summary_provider: str | None = None
    """The provider profile whose ``compaction_model`` built ``summary_backend``
    (``runtime.switch_agent`` keeps it only on that profile)."""
    checkpoints: Checkpoints | None = None
    """The workspace's snapshot store: a turn that may change files is snapshotted before its
    first such call and after it (None: no snapshots)."""
    estimator: Estimator | None = None
    """The token estimator, calibrated by earlier runs against this model and server (None:
    uncalibrated, ``budget.Estimator()``)."""
    remember: Callable[[float, int, int | None], None] | None = None
    """``remember(ratio, samples, window)``, called in a thread whenever a request taught the
    estimator (``window``, in tokens: one an overflow error named, else None), so that later runs
    start calibrated (``calibration.remember``; None: forgotten)."""
