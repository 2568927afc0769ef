"""Plugins: Python files in ``.agents/plugins/`` that extend scout through ``scout(api)``.

A plugin is trusted code: it runs in this process with the person's rights, outside the
sandbox, like the seed agent's plugins. The user's (``~/.agents/plugins/``) always run; a
project's (``./.agents/plugins/``, which a cloned repository or a command may have put there)
run only once the person has trusted that content (``scout_tui.config.trust``, ``scout-tui trust``).

A plugin file defines ``scout(api)`` and calls the ``PluginApi`` methods in it::

    from scout_tui.tools.base import Tool, object_schema, string

    def scout(api):
        async def run(input, ctx):
            return input["text"].upper()
        schema = object_schema(text=string("The text to upper-case."), required=["text"])
        api.tool(Tool("shout", "Upper-case a text.", schema, run, read_only=True))
        api.command("hello", lambda args: f"hello {args}")
        api.on("tool.end", lambda event: print(event.data["name"]))
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import itertools
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from scout_tui.core.bus import Bus, Event
from scout_tui.config.layers import Config, merge_tables
from scout_tui.core.errors import ScoutError, error_text, raised_at
from scout_tui.tools.base import Tool
from scout_tui.config.trust import UNTRUSTED, PluginFile, check_file, check_files, read_trusted

PLUGINS_DIR = Path(".agents") / "plugins"

Command = Callable[[str], "str | None"]
Handler = Callable[[Event], None]

_COMMAND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_module_numbers = itertools.count(1)


@dataclass
class _Staged:
    """What one plugin registered while its ``scout(api)`` ran; committed only if it returned."""

    tools: list[Tool] = field(default_factory=list)
    commands: list[tuple[str, Command]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    handlers: list[tuple[str, Handler]] = field(default_factory=list)
    providers: list[tuple[str, Callable[..., Any]]] = field(default_factory=list)
    strategies: list[tuple[str, Callable[..., Any]]] = field(default_factory=list)
    settings: dict[str, Any] | None = None
    events: list[Event] = field(default_factory=list)


class PluginApi:
    """What ``scout(api)`` may call; one object per plugin file.

    Attributes:
        name: the plugin's name (its file name without ``.py``).
        path: the plugin file.
        cwd: the working directory scout runs in.

    Registrations are staged while ``scout(api)`` runs and take effect only when it returns, so
    a plugin that raises leaves nothing behind. Later registration wins by name (tools,
    commands, providers, strategies), across plugins and over the built-ins.
    """

    def __init__(self, name: str, path: Path, cwd: Path, plugins: Plugins, config: Config | None) -> None:
        self.name = name
        self.path = path
        self.cwd = cwd
        self._plugins = plugins
        self._config = config
        self._staged: _Staged | None = _Staged()

    def tool(self, tool: Tool) -> None:
        """Offer ``tool`` to the model (replacing a built-in or earlier tool of its name).

        Raises:
            TypeError: ``tool`` is not a ``scout_tui.tools.Tool``.
        """
        if not isinstance(tool, Tool):
            raise TypeError(f"api.tool expects a scout_tui.tools.Tool, got {type(tool).__name__}")
        self._stage().tools.append(tool)

    def on(self, event: str, fn: Handler) -> None:
        """Call ``fn(event)`` for every bus event named ``event`` (``"*"``: every event).

        Event names and data are listed in ``scout_tui.core.bus``. Handlers run synchronously on
        the caller's thread (the TUI's event loop): keep them quick. One that raises is reported
        (see ``Plugins.attach``) and does not stop the turn.
        """
        _check_callable(fn, "api.on")
        self._stage().handlers.append((str(event), fn))

    def prompt(self, text: str) -> None:
        """Add ``text`` as a paragraph of the system prompt."""
        self._stage().prompts.append(str(text))

    def command(self, name: str, fn: Command) -> None:
        """Add the slash command ``/name`` (also in the command palette).

        ``fn(args)`` gets the text after the name (stripped, maybe ""), returns Markdown to show
        in the chat, or None to show nothing. It runs on the TUI's event loop.

        Raises:
            ValueError: ``name`` is not a word (letters, digits, ``_ . -``; a leading ``/`` is
                dropped).
        """
        name = str(name).removeprefix("/")
        if not _COMMAND_NAME.fullmatch(name):
            raise ValueError(f"invalid command name {name!r}: use letters, digits, '_', '.' or '-'")
        _check_callable(fn, "api.command")
        self._stage().commands.append((name, fn))

    def provider(self, name: str, factory: Callable[..., Any]) -> None:
        """Make ``provider = "name"`` build a backend with ``factory``, via
        ``backends.register_provider``: a ``Backend`` subclass, or a function called with the
        keyword arguments ``model, api_key, base_url, timeout, transport`` that returns a
        ``Backend``. A plugin provider is not refused for lacking an API key (headless checks
        ``Plugins.providers``); the factory decides."""
        if not name or not isinstance(name, str):
            raise ValueError(f"invalid provider name {name!r}")
        _check_callable(factory, "api.provider")
        self._stage().providers.append((name, factory))

    def strategy(self, name: str, fn: Callable[..., Any]) -> None:
        """Register the prompt strategy ``name`` (see ``compaction.register_strategy`` for the
        signature of ``fn``); ``/strategy name`` and the ``strategy`` setting can then use it.

        Raises:
            ValueError: ``name`` is empty or holds a comma or whitespace (the rule of
                ``register_strategy``, checked now so a bad call fails this plugin only).
        """
        if not name or not isinstance(name, str) or re.search(r"[,\s]", name):
            raise ValueError(f"invalid strategy name {name!r}: use a word without commas or spaces")
        _check_callable(fn, "api.strategy")
        self._stage().strategies.append((name, fn))

    def config(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """This plugin's settings: ``defaults`` overlaid with the ``[plugins.NAME]`` table of the
        config files (NAME is ``self.name``; user file < project file, tables merged key by key;
        a value in a file always wins over a default).

        When the plugin loads, the same dict is stored as ``Config.extra["plugins"][NAME]`` of
        the config given to ``load_plugins`` (without one, it is just the defaults). Example:
        ``[plugins.notify]\\nsound = false`` in ``./scout.toml`` with
        ``api.config({"sound": True, "volume": 3})`` gives ``{"sound": False, "volume": 3}``.

        Raises:
            TypeError: ``defaults`` is not a dict.
            ScoutError: ``plugins`` or ``plugins.NAME`` in a config file is not a table.
        """
        if not isinstance(defaults, dict):
            raise TypeError(f"api.config expects a dict of defaults, got {type(defaults).__name__}")
        settings = copy.deepcopy(defaults)
        if self._config is not None:
            where = self._config.sources.get("plugins", "config")
            table = self._config.extra.get("plugins", {})
            if not isinstance(table, dict):
                raise ScoutError(f"{where}: plugins must be a table ([plugins.NAME]), got {type(table).__name__}")
            own = table.get(self.name, {})
            if not isinstance(own, dict):
                raise ScoutError(f"{where}: plugins.{self.name} must be a table ([plugins.{self.name}])")
            settings = merge_tables(settings, own)
        self._stage().settings = settings
        return settings

    def emit(self, type: str, **data: Any) -> None:
        """Emit ``Event(type, data)`` on the bus: to the UI, the other plugins' handlers and any
        subscriber (not to the session log). Events emitted before a bus is attached (during
        loading) are delivered when ``Plugins.attach`` is called. A ``notice`` {text} event is
        shown in the chat."""
        if self._staged is not None:
            self._staged.events.append(Event.of(str(type), dict(data)))
        else:
            self._plugins._emit(Event.of(str(type), dict(data)))

    def _stage(self) -> _Staged:
        if self._staged is None:
            raise RuntimeError(f"plugin {self.name}: register tools, commands and the rest inside scout(api)")
        return self._staged


@dataclass
class Plugins:
    """Everything the loaded plugins registered, and what went wrong.

    Attributes:
        tools: tool name -> Tool (later registration won).
        commands: command name (without ``/``) -> (fn, plugin name).
        prompts: texts for the system prompt, in load order.
        handlers: event name -> [fn], in load order (subscribed by ``attach``).
        providers: provider name -> (factory, plugin name); also in ``backends.PROVIDERS``.
        strategies: strategy name -> plugin name; the functions are in the compaction registry.
        settings: plugin name -> its ``api.config`` settings.
        loaded: (plugin name, path) of each plugin that loaded, in load order.
        problems: one message per plugin skipped: "<path>:<line>: plugin NAME skipped: <error>",
            or not run because it is an untrusted project plugin ("<path>: plugin NAME not
            loaded: ..."; see ``load_plugins``), and one for an unreadable trust file.
    """

    tools: dict[str, Tool] = field(default_factory=dict)
    commands: dict[str, tuple[Command, str]] = field(default_factory=dict)
    prompts: list[str] = field(default_factory=list)
    handlers: dict[str, list[Handler]] = field(default_factory=lambda: defaultdict(list))
    providers: dict[str, tuple[Callable[..., Any], str]] = field(default_factory=dict)
    strategies: dict[str, str] = field(default_factory=dict)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    loaded: list[tuple[str, Path]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _buses: list[Bus] = field(default_factory=list, repr=False)
    _pending: list[Event] = field(default_factory=list, repr=False)
    _tool_owners: dict[str, str] = field(default_factory=dict, repr=False)  # tool name -> plugin name
    # (event, fn, plugin name, plugin file): for attach, and to name the plugin's line on failure
    _subscriptions: list[tuple[str, Handler, str, Path]] = field(default_factory=list, repr=False)
    _command_files: dict[str, Path] = field(default_factory=dict, repr=False)
    _reporting: bool = field(default=False, repr=False)

    def attach(self, bus: Bus, report: Callable[[str], None] | None = None) -> None:
        """Subscribe every plugin handler to ``bus`` and send ``api.emit`` events to it (the
        ones emitted while loading are delivered now). Call once per bus.

        A handler that raises does not reach the emitter: ``report(message)`` gets
        "plugin NAME: handler for 'EVENT' failed at <file>:<line>: <error>"; the default
        ``report`` emits a ``notice`` {text} event on ``bus``.
        """
        say = report or (lambda text: bus.emit(Event.of("notice", {"text": text})))
        for event, fn, owner, path in self._subscriptions:
            bus.on(event, self._guarded(fn, owner, path, say))
        self._buses.append(bus)
        pending, self._pending = self._pending, []
        for held in pending:
            self._emit(held)

    def run_command(self, name: str, args: str = "") -> str | None:
        """Run the plugin command ``/name`` with ``args``; its text (None: nothing to show).

        Raises:
            KeyError: no plugin registered ``name``.
            ScoutError: the command raised; the message names the plugin, file:line and error.
        """
        fn, owner = self.commands[name]
        try:
            result = fn(args.strip())
        except Exception as exc:
            where = raised_at(exc, self._command_files.get(name))
            raise ScoutError(f"/{name} (plugin {owner}) failed{f' at {where}' if where else ''}: {error_text(exc)}") from None
        return None if result is None else str(result)

    def describe(self) -> str:
        """Markdown for ``/plugins``: each loaded plugin with what it registered, then problems."""
        if not self.loaded and not self.problems:
            return "No plugins found. Add `NAME.py` defining `scout(api)` to `~/.agents/plugins/` or `./.agents/plugins/`."
        lines = ["**Plugins** (trusted code: they run with your rights):", ""]
        for name, path in self.loaded:
            owned = [f"tool `{t}`" for t in self.tools if self._tool_owners.get(t) == name]
            owned += [f"command `/{c}`" for c, (_, owner) in self.commands.items() if owner == name]
            owned += [f"provider `{p}`" for p, (_, owner) in self.providers.items() if owner == name]
            owned += [f"strategy `{s}`" for s, owner in self.strategies.items() if owner == name]
            what = f": {', '.join(owned)}" if owned else ""
            lines.append(f"- **{name}** (`{path}`){what}")
        if self.problems:
            lines += ["", "**Skipped:**", ""] + [f"- {p}" for p in self.problems]
        return "\n".join(lines)

    def _emit(self, event: Event) -> None:
        if not self._buses:
            self._pending.append(event)
        for bus in self._buses:
            bus.emit(event)

    def _guarded(self, fn: Handler, owner: str, path: Path, say: Callable[[str], None]) -> Handler:
        def handler(event: Event) -> None:
            try:
                fn(event)
            except Exception as exc:
                if self._reporting:  # a handler failing on the failure notice: don't loop
                    return
                self._reporting = True
                try:
                    where = raised_at(exc, path)
                    at = f" at {where}" if where else ""
                    say(f"plugin {owner}: handler for {event.type!r} failed{at}: {error_text(exc)}")
                finally:
                    self._reporting = False

        return handler

    def _commit(self, api: PluginApi, staged: _Staged) -> None:
        for tool in staged.tools:
            self.tools[tool.name] = tool
            self._tool_owners[tool.name] = api.name
        for name, fn in staged.commands:
            self.commands[name] = (fn, api.name)
            self._command_files[name] = api.path
        self.prompts.extend(staged.prompts)
        for name, handler in staged.handlers:
            self.handlers[name].append(handler)
            self._subscriptions.append((name, handler, api.name, api.path))
        for name, factory in staged.providers:
            from scout_tui.backends import register_provider  # imported only when a plugin needs it

            register_provider(name, factory)
            self.providers[name] = (factory, api.name)
        for name, fn in staged.strategies:
            from scout_tui.engine.compaction import register_strategy

            register_strategy(name, fn)
            self.strategies[name] = api.name
        if staged.settings is not None:
            self.settings[api.name] = staged.settings
            if api._config is not None:
                table = api._config.extra.setdefault("plugins", {})
                table[api.name] = staged.settings
        self.loaded.append((api.name, api.path))
        for emitted in staged.events:
            self._emit(emitted)


def plugin_files(cwd: Path, home: Path | None = None) -> list[Path]:
    """``home/.agents/plugins/*.py`` then ``cwd/.agents/plugins/*.py``, each folder sorted by
    name; files starting with ``_`` or ``.`` are helpers, not plugins. A folder reached twice
    (cwd is home) counts once, as the user's."""
    return [path for path, _ in _found(cwd, home)]


def project_plugin_files(cwd: Path, home: Path | None = None) -> list[Path]:
    """The project's part of ``plugin_files``: ``cwd/.agents/plugins/*.py``, the files that run
    only when trusted (none when that folder is the user's own, cwd being home)."""
    return [path for path, project in _found(cwd, home) if project]


def project_plugin_trust(cwd: Path, home: Path | None = None) -> tuple[list[PluginFile], list[str]]:
    """Each project plugin (``project_plugin_files``) read now with its trust state, and the
    problems met: an unreadable trust file (see ``trust.read_trusted``), "<path>: cannot read
    it: <why>" for a plugin file that cannot be read (left out of the list). For ``scout-tui
    trust`` and ``/trust``; never raises."""
    return check_files(project_plugin_files(cwd, home))


def _found(cwd: Path, home: Path | None) -> list[tuple[Path, bool]]:
    """(plugin file, whether it is the project's) in load order; see ``plugin_files``."""
    home = Path.home() if home is None else home
    files: list[tuple[Path, bool]] = []
    seen: set[Path] = set()
    for root, project in ((home, False), (cwd, True)):
        folder = root / PLUGINS_DIR
        if folder.resolve() in seen or not folder.is_dir():
            continue
        seen.add(folder.resolve())
        files += [(p, project) for p in sorted(folder.glob("*.py"))
                  if p.is_file() and not p.name.startswith(("_", "."))]
    return files


def load_plugins(cwd: Path, home: Path | None = None, *, config: Config | None = None) -> Plugins:
    """Run every plugin file (see ``plugin_files``) in order and collect what it registered.

    Each file is imported as a module of its own (a unique name in ``sys.modules``), then its
    ``scout(api)`` is called. A file that fails to import, has no ``scout`` function, or raises
    in ``scout(api)`` is skipped (nothing it registered is kept, its module is removed) with a
    message in ``Plugins.problems``; the others still load. Providers and strategies go into
    the global registries (``backends.PROVIDERS``, the compaction registry) as each plugin
    loads. ``config``: where ``api.config`` reads ``[plugins.NAME]`` and stores the settings.

    A project plugin (``project_plugin_files``) runs only when the trust file
    (``trust.trust_file()``) holds the sha256 of its content at its path; otherwise it is not
    imported and ``Plugins.problems`` gets "<path>: plugin NAME not loaded: it is new or changed
    since you trusted it; read it, then run `scout-tui trust` (or /trust) to load it". A missing
    trust file trusts nothing; a corrupt one trusts nothing and adds its own line. Each file is
    read once: what runs is the content that was checked.

    Plugins are trusted code: this runs them in this process.
    """
    plugins = Plugins()
    trusted: dict[str, str] | None = None  # read when the first project plugin needs it
    for path, project in _found(cwd, home):
        name = path.stem
        try:
            if project:
                if trusted is None:
                    trusted, problem = read_trusted()
                    if problem:
                        plugins.problems.append(problem)
                checked = check_file(path, trusted)
                if not checked.trusted:
                    plugins.problems.append(f"{path}: plugin {name} not loaded: {UNTRUSTED}")
                    continue
                source = checked.source
            else:
                source = path.read_bytes()
        except OSError as exc:
            plugins.problems.append(f"{path}: plugin {name} skipped: cannot read it: {exc.strerror or exc}")
            continue
        api = PluginApi(name, path, cwd, plugins, config)
        try:
            module = _import(path, name, source)
        except SyntaxError as exc:
            line = f":{exc.lineno}" if exc.lineno else ""
            plugins.problems.append(f"{path}{line}: plugin {name} skipped: SyntaxError: {exc.msg}")
            continue
        except (Exception, SystemExit) as exc:
            plugins.problems.append(_skipped(path, name, exc))
            continue
        entry = getattr(module, "scout", None)
        if not callable(entry):
            sys.modules.pop(module.__name__, None)
            plugins.problems.append(f"{path}: plugin {name} skipped: it defines no scout(api) function")
            continue
        try:
            result = entry(api)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise TypeError("scout(api) must be a plain function, not async")
        except (Exception, SystemExit) as exc:
            sys.modules.pop(module.__name__, None)
            plugins.problems.append(_skipped(path, name, exc))
            continue
        finally:
            staged = api._stage()
            api._staged = None  # later api calls (from handlers) emit directly
        plugins._commit(api, staged)
    return plugins


def _import(path: Path, name: str, source: bytes) -> ModuleType:
    """Execute ``source`` (the bytes read from ``path``, not the file again: what was checked is
    what runs) as a new module of file ``path``. It is in ``sys.modules`` while it runs
    (dataclasses and pickling look modules up there) and is removed again if it fails. No
    bytecode is cached next to the plugin.

    Raises:
        SyntaxError: ``source`` is not Python; whatever the module raises as it runs.
    """
    stem = re.sub(r"\W", "_", name)
    module_name = f"scout_plugin_{next(_module_numbers)}_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _skipped(path: Path, name: str, exc: BaseException) -> str:
    """"<path>:<line>: plugin NAME skipped: <Error>: <message>", the line being the plugin's
    deepest traceback frame; when the failure is in no frame of the plugin file (an imported
    helper), that place is added: "... (at <file>:<line>)"."""
    where = raised_at(exc, path)
    if where and where.startswith(f"{path}:"):
        return f"{where}: plugin {name} skipped: {error_text(exc)}"
    return f"{path}: plugin {name} skipped: {error_text(exc)}" + (f" (at {where})" if where else "")


def _check_callable(fn: Any, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what} expects a function, got {type(fn).__name__}")
