"""The OS sandbox for commands tools start: bubblewrap (``bwrap``) on Linux keeps the filesystem
read-only outside the workspace, gives each command a private /tmp and PID namespace, and can cut the network;
a seccomp filter (``seccomp``) keeps commands off the host's unix sockets.

Settings (``sandbox_config.SandboxSettings``) come from the ``[sandbox]`` table; ``wrap`` builds
the bwrap command line. bwrap's options are those of bwrap(1) (bubblewrap 0.8,
https://github.com/containers/bubblewrap/blob/main/bwrap.xml).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Sequence, TypeGuard

from scout_tui.config.layers import user_config_dir
from scout_tui.tools import seccomp
from scout_tui.tools.sandbox_config import SandboxSettings

# ``SandboxSettings`` and the [sandbox] table's names live in sandbox_config: start-up reads the
# table before the first frame, and does not import subprocess and seccomp for it.
PROBE_TIMEOUT = 10.0  # seconds the one trial run of bwrap may take


def bwrap_path() -> str | None:
    """Where ``bwrap`` is on PATH, or None."""
    return shutil.which("bwrap")


@functools.cache
def available() -> bool:
    """Whether bwrap is installed and can build a sandbox here (a container may forbid the
    namespaces it needs). The first call runs ``bwrap ... true`` once (a few ms); later calls
    return that answer, and ``unavailable_reason`` says why it is False. Tests that change
    PATH call ``available.cache_clear()``."""
    global _reason
    _reason = _probe()
    return _reason is None


_reason: str | None = None


def unavailable_reason() -> str | None:
    """Why ``available()`` is False, for a person to act on (None when bwrap works): bwrap not
    installed, the first line of what bwrap printed when its trial run failed, or a platform
    without bwrap. Runs the probe when ``available()`` has not yet."""
    return None if available() else _reason


def _probe() -> str | None:
    """Run bwrap once in the sandbox ``available`` promises; None when it worked, else why not.

    The trial run loads the seccomp filter (``wrap``). When only that fails (a kernel built
    without seccomp filters), the sandbox is still used, without the filter: the filesystem,
    PID and network isolation matter more than the unix sockets, and ``unix_sockets`` says why
    they are reachable."""
    global _filter_refused
    _filter_refused = None
    if sys.platform == "darwin":
        return "macOS has no bubblewrap, and scout-tui does not use sandbox-exec yet"
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform} (bubblewrap needs Linux)"
    bwrap = bwrap_path()
    if bwrap is None:
        return "bwrap is not installed: install the bubblewrap package (Debian/Ubuntu: apt install bubblewrap)"
    settings = SandboxSettings(mode="read-only", network=False)
    with_filter = seccomp.program() is not None
    problem = _trial(wrap(["true"], Path("/"), settings, bwrap=bwrap, seccomp_filter=with_filter), bwrap)
    if problem is None or not with_filter:
        return problem
    if _trial(wrap(["true"], Path("/"), settings, bwrap=bwrap, seccomp_filter=False), bwrap) is not None:
        return problem
    _filter_refused = problem.rpartition("cannot create a sandbox here: ")[2]
    return None


def _trial(argv: list[str], bwrap: str) -> str | None:
    """Run ``argv`` (``true`` in a sandbox); None when it exited 0, else why not."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=PROBE_TIMEOUT, start_new_session=True)
    except subprocess.TimeoutExpired:
        return f"{bwrap} did not finish a trial run within {PROBE_TIMEOUT:g} s"
    except OSError as exc:
        return f"{bwrap} cannot be started: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    first = said[0].strip() if said else f"exit status {done.returncode}"
    return f"{bwrap} is installed but cannot create a sandbox here: {first}"


_filter_refused: str | None = None  # what bwrap said when the probe could not load the filter


def unix_sockets() -> str:
    """Whether a sandboxed command can reach the host's unix sockets, and why, for
    ``scout-tui doctor``: blocked by the seccomp filter, or reachable (all but the hidden
    ones) because this machine has no filter or bwrap could not load it. Runs the probe."""
    available()
    if _filter_refused is not None:
        why = f"bwrap could not load the seccomp filter ({_filter_refused})"
    elif seccomp.program() is None:
        why = f"no seccomp filter for {seccomp.machine_name()} (x86_64 and aarch64 only)"
    else:
        return "blocked: a command cannot open a unix socket (seccomp filter), so none of the host's is reachable"
    return f"reachable but for the hidden ones: {why}"


FILTER_FD = 9
"""The descriptor on which ``wrap``'s command line hands bwrap the seccomp filter (``--seccomp``)."""

_filter_lock = threading.Lock()
_filter_file: tuple[str, int, int] | None = None  # (path, descriptor kept open, pid that wrote it)


def filter_path() -> str | None:
    """The path of a private file (mode 0600, in the temporary folder) holding
    ``seccomp.program()``, written once per process and written again if it went missing or
    was replaced (a /tmp cleaner); None on a machine without a filter. The file is deleted when
    scout-tui exits."""
    global _filter_file
    program = seccomp.program()
    if program is None:
        return None
    with _filter_lock:
        if _filter_file is not None:
            path, fd, pid = _filter_file
            if pid == os.getpid() and _is_file(path, fd):
                return path
            if pid == os.getpid():
                os.close(fd)
        fd, path = tempfile.mkstemp(prefix="scout-seccomp-", suffix=".bpf")
        os.write(fd, program)
        if _filter_file is None:
            atexit.register(_remove_filter_file)
        _filter_file = (path, fd, os.getpid())
        return path


def _is_file(path: str, fd: int) -> bool:
    try:
        return os.path.samestat(os.stat(path), os.fstat(fd))
    except OSError:
        return False


def _remove_filter_file() -> None:
    """At exit: delete ``filter_path()``'s file if this process wrote it and it is still there."""
    if _filter_file is not None:
        path, fd, pid = _filter_file
        if pid == os.getpid() and _is_file(path, fd):
            with contextlib.suppress(FileNotFoundError):  # a /tmp cleaner got there first
                os.unlink(path)


def active(settings: SandboxSettings | None) -> TypeGuard[SandboxSettings]:
    """Whether commands run in the sandbox: settings given, mode not ``off``, bwrap works."""
    return settings is not None and settings.mode != "off" and available()


def in_force(settings: SandboxSettings | None) -> str:
    """The mode commands actually run in: ``settings.mode``, or ``off`` when there are no
    settings or bwrap cannot run (for the status bar and ``scout-tui doctor``)."""
    return settings.mode if active(settings) else "off"


PROTECTED = (".git/config", ".git/config.worktree", ".git/hooks", ".git/commondir", ".git/modules", ".git",
             ".agents", ".scout", "scout.toml")
"""What runs outside the sandbox later, relative to the workspace: git's config (``core.fsmonitor``,
``core.pager``, aliases: run by the person's next ``git status``), hooks, ``commondir`` (which
points git at another folder's config and hooks) and submodules' own configs, ``.agents/``
(plugins and skills scout-tui loads in-process at its next start), ``.scout/`` and the project's
``scout.toml``. ``.git`` counts only as a file (a worktree's or submodule's ``gitdir:`` pointer);
a ``.git`` folder stays writable so that ``git add``, ``commit`` and ``checkout -b`` work."""

SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock", "/run/dbus/system_bus_socket")
"""Unix sockets that let a client act outside the sandbox (docker and podman are root-equivalent;
the system bus starts services); ``$SSH_AUTH_SOCK`` is added at ``wrap`` time."""


def protected_paths(cwd: Path, settings: SandboxSettings) -> list[Path]:
    """The ``PROTECTED`` paths that exist, the folder ``core.hooksPath`` names, and scout-tui's own
    installation (``_own_installation``), resolved, that a ``workspace-write`` sandbox would
    otherwise let a command write (inside the workspace or a ``writable`` path); ``wrap`` binds
    them read-only. Empty in the other modes (nothing but /tmp is writable there). A missing path
    is not protected: binding it would leave an empty mount point in the person's repository."""
    if settings.mode != "workspace-write":
        return []
    cwd = Path(cwd).resolve()
    roots = [cwd, *settings.writable]
    found: dict[Path, None] = {}
    candidates = [cwd / name for name in PROTECTED if not (name == ".git" and (cwd / name).is_dir())]
    candidates += [*_hooks_path(cwd), *_own_installation()]
    for path in candidates:
        if not os.path.lexists(path):
            continue
        real = path.resolve()
        if any(real.is_relative_to(root) for root in roots):
            found[real] = None
    return list(found)


def _hooks_path(cwd: Path) -> list[Path]:
    """The folder ``core.hooksPath`` in the repository's ``.git/config`` names (husky and the
    like point it into the worktree, where ``.git/hooks`` protects nothing), relative to the
    workspace. Read as text (git-config(1)'s syntax, the common forms): no git process per command."""
    try:
        text = (cwd / ".git" / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").split()[0].lower() if line.strip("[]").split() else ""
        elif section == "core" and "=" in line and line.split("=", 1)[0].strip().lower() == "hookspath":
            value = line.split("=", 1)[1].strip().strip('"')
            return [cwd / os.path.expanduser(value)] if value else []
    return []


def _own_installation() -> list[Path]:
    """scout-tui's own code and the Python environment it runs from: written inside a workspace
    (a project's own ``.venv``, an editable install), a ``.pth`` file there would run at
    scout-tui's next start, before any trust gate."""
    import scout_tui

    return [Path(sys.prefix), Path(scout_tui.__file__).parent]


def hidden_paths(cwd: Path) -> tuple[list[Path], list[Path]]:
    """``(sockets, folders)`` a sandbox hides in every mode, from ``os.environ`` now: the
    ``SOCKETS`` and ``$SSH_AUTH_SOCK`` that exist as sockets (``/dev/null`` is bound over each),
    and the folders ``$XDG_RUNTIME_DIR`` (the user's D-Bus and systemd sockets) and scout-tui's
    config folder (``scout.toml`` may hold ``api_key``) that exist (an empty tmpfs covers each).
    Paths resolved, each once; those under /tmp (private already) and folders that hold the
    workspace ``cwd`` are left out."""
    cwd = Path(cwd).resolve()

    def visible(path: Path) -> bool:
        return not path.is_relative_to("/tmp") or path.is_relative_to(cwd)

    folders: dict[Path, None] = {}
    for text in (os.environ.get("XDG_RUNTIME_DIR", ""), str(user_config_dir())):
        if text and os.path.isabs(text) and os.path.isdir(text):
            path = Path(text).resolve()
            if visible(path) and not cwd.is_relative_to(path):
                folders[path] = None
    sockets: dict[Path, None] = {}
    for text in (*SOCKETS, os.environ.get("SSH_AUTH_SOCK", "")):
        if not text or not os.path.isabs(text):
            continue
        try:
            is_socket = stat.S_ISSOCK(os.stat(text).st_mode)
        except OSError:
            continue
        path = Path(text).resolve()
        if is_socket and visible(path) and not any(path.is_relative_to(f) for f in folders):
            sockets[path] = None
    return list(sockets), list(folders)


def wrap(argv: Sequence[str], cwd: Path, settings: SandboxSettings, *, bwrap: str | None = None,
         seccomp_filter: bool | None = None) -> list[str]:
    """The command line that runs ``argv`` in ``cwd`` (the workspace) inside the sandbox.

    With the seccomp filter (``seccomp_filter``; None: when this machine has one and the probe
    found bwrap able to load it), the line starts ``/bin/sh -c 'exec 9<"$0" && exec "$@"'
    FILTER_PATH bwrap ...``: the shell opens ``filter_path()`` on descriptor 9 and replaces
    itself with bwrap (same pid, so bwrap still leads the caller's process group), so that any
    caller can start the line as it is, without passing descriptors. Otherwise it starts with
    bwrap. bwrap closes descriptor 9 once it has read the filter.

    Mount order matters: a later mount covers an earlier one, so the workspace (which may lie
    under /tmp) is bound after the private /tmp, and what is protected or hidden comes after
    the workspace and the ``writable`` paths. The options, from bwrap(1):

    - ``--ro-bind / /``: the whole filesystem, read-only (submounts too): a write anywhere
      fails with EROFS, "Read-only file system".
    - ``--dev /dev``: a fresh minimal /dev (null, zero, random, tty, a private /dev/shm), so
      device nodes of the host are not reachable.
    - ``--proc /proc`` with ``--unshare-pid``: a new PID namespace and its own procfs, so
      ``/proc/$PPID`` (and every other pid) is bwrap's init, not scout-tui; the environment seen
      there is the tool's, without API keys. When that init dies, the kernel kills every process
      left in the namespace, even one that left the process group.
    - ``--tmpfs /tmp``: a private, empty /tmp; nothing written there outlives the command.
    - ``--bind CWD CWD`` (``--ro-bind`` in ``read-only`` mode): the workspace, resolved.
    - ``--bind-try P P`` for each ``writable`` path: bound writable when it exists, skipped
      when it does not (bwrap's ``--bind`` would fail the command).
    - ``workspace-write`` only: ``--bind D D`` for each folder between the workspace and a
      ``protected_paths`` entry (``.git`` for ``.git/config``): bound onto itself it becomes a
      mount point, which rename() and rmdir() refuse (EBUSY), so a command cannot move ``.git``
      aside and put a folder with its own config in its place. Then ``--ro-bind-try P P`` for
      each protected path: git's config and hooks, a ``.git`` file, ``.agents``, ``.scout``,
      ``scout.toml`` are read-only (writing fails with EROFS; replacing or deleting them, with
      EBUSY), so nothing a command plants there runs outside the sandbox later. A protected
      path that does not exist yet (no ``.agents/``, no ``.git/hooks/``) can still be created.
    - ``--ro-bind /dev/null S`` for each ``hidden_paths`` socket (docker, podman, the system
      D-Bus, ``$SSH_AUTH_SOCK``), and ``--tmpfs F`` over each hidden folder
      (``$XDG_RUNTIME_DIR`` with the session bus and systemd's socket; scout-tui's config
      folder, whose ``scout.toml`` may hold ``api_key``): a read-only mount does not stop
      connect() on a socket, nor reading a key and printing it encoded past redaction. /run as
      a whole stays, for DNS (``/run/systemd/resolve``). A ``writable`` path inside a hidden
      folder stays hidden.
    - ``--unshare-net`` when ``network`` is off: a network namespace holding only its own
      loopback, so nothing outside (nor the host's 127.0.0.1) is reachable.
    - ``--seccomp 9``: load the cBPF program read from descriptor 9 (``seccomp.program``) before
      running the command: ``socket(AF_UNIX)`` fails with EACCES, so no unix socket of the host
      is reachable, whatever its path (docker or podman in $HOME, an editor's server, an
      abstract socket, which no mount can hide: they belong to the network namespace). Stream
      ``socketpair()``s still work; datagram pairs, ``io_uring_setup`` and 32-bit x86
      ``socketcall`` socket creation are refused too (``seccomp.program`` says why). Hiding the
      known sockets above still matters where there is no filter.
    - ``--die-with-parent``: the sandbox is SIGKILLed when scout-tui dies (PR_SET_PDEATHSIG).
    - ``--chdir CWD``: start in the workspace.

    Not ``--new-session``: its setsid() would move the command out of the process group that
    the bash tool kills on Esc and timeout. Its purpose (no TIOCSTI input injection into the
    controlling terminal) is met already: the tool starts bwrap with ``start_new_session``, so
    the sandbox has no controlling terminal, and stdin is /dev/null.
    """
    cwd = Path(cwd).resolve()
    if settings.mode == "off":  # only network = false to keep: a network namespace, nothing else
        return [bwrap or bwrap_path() or "bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent",
                "--chdir", str(cwd), "--", *argv]
    line = [bwrap or bwrap_path() or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
            "--tmpfs", "/tmp"]
    if settings.mode == "read-only":
        line += ["--ro-bind", str(cwd), str(cwd)]
    else:
        line += ["--bind", str(cwd), str(cwd)]
        for path in settings.writable:
            line += ["--bind-try", str(path), str(path)]
    protected = protected_paths(cwd, settings)
    roots = [cwd, *settings.writable]
    pins: dict[Path, None] = {}
    for path in protected:
        root = max((r for r in roots if path.is_relative_to(r)), key=lambda r: len(r.parts))
        for folder in reversed(path.parents):
            if folder.is_relative_to(root) and folder != root:
                pins[folder] = None
    for folder in pins:
        line += ["--bind", str(folder), str(folder)]
    for path in protected:
        line += ["--ro-bind-try", str(path), str(path)]
    sockets, folders = hidden_paths(cwd)
    for path in sockets:
        line += ["--ro-bind", "/dev/null", str(path)]
    for path in folders:
        line += ["--tmpfs", str(path)]
    if not settings.network:
        line.append("--unshare-net")
    filter_file = None
    if seccomp_filter or (seccomp_filter is None and _filter_refused is None):
        filter_file = filter_path()
    if filter_file is not None:
        line += ["--seccomp", str(FILTER_FD)]
    line += ["--die-with-parent", "--chdir", str(cwd), "--", *argv]
    if filter_file is not None:
        line = ["/bin/sh", "-c", f'exec {FILTER_FD}<"$0" && exec "$@"', filter_file, *line]
    return line


def wraps(settings: SandboxSettings | None) -> bool:
    """Whether commands are started through bwrap: the sandbox is ``active``, or it is ``off``
    but ``network = false`` is kept with a network namespace alone. bwrap must work."""
    return settings is not None and (settings.mode != "off" or not settings.network) and available()


def sandboxed(argv: Sequence[str], cwd: Path, settings: SandboxSettings | None) -> list[str]:
    """``argv`` as it should be started: wrapped by ``wrap`` when bwrap is used (``wraps``),
    else unchanged. For the bash tool and plugin tools that start processes; the line may start
    with ``/bin/sh`` (``wrap``), which takes descriptor 9 for itself."""
    return wrap(argv, cwd, settings) if settings is not None and wraps(settings) else list(argv)
