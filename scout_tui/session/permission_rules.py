"""``/permissions``: the permission rules in force, each with where it comes from (a config
file's path and line, or this session), numbered; and a rule added for the session
(``/permissions allow RULE``, ``/permissions deny RULE``) or a session rule removed
(``/permissions remove N``), in force from the next tool call on. The same in the TUI, ``-p`` and
``acp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scout_tui.config.files import did_you_mean
from scout_tui.core.errors import ScoutError
from scout_tui.tools.permissions import BUILTIN_TOOL_NAMES, PROTECTED, Rule, parse_rule, rule_text

if TYPE_CHECKING:
    from scout_tui.config.layers import Config
    from scout_tui.tools.permissions import Policy

SESSION = "session"
"""The ``Rule.origin`` of a rule added in this session (the approval prompt's "allow for the
session" gives it too)."""

USAGE = ("Use `/permissions` (the rules), `/permissions allow RULE` or `/permissions deny RULE` (for this session; "
         "a RULE reads `bash:git *`, `bash(git *)`, `edit:src/**` or a tool's name), or `/permissions remove N`.")

def numbered_rules(policy: Policy) -> list[tuple[str, Rule]]:
    """Every rule of ``policy`` as ``(kind, rule)``, kind "deny" or "allow", in the order
    ``/permissions`` numbers them from 1: the deny rules (files', then this session's), the
    allow rules of the files, then those allowed for this session."""
    return [*(("deny", r) for r in policy.deny), *(("allow", r) for r in policy.allow),
            *(("allow", r) for r in policy.session)]


def permissions_command(policy: Policy, config: Config | None, args: str) -> str:
    """``/permissions ARGS``: the change made (``change_rules``), then the rules as they are now
    (``describe_rules``), as Markdown.

    Raises:
        ScoutError: as ``change_rules`` (nothing changed).
    """
    said = change_rules(policy, args)
    listing = describe_rules(policy, config)
    return f"{said}\n\n{listing}" if said else listing


def change_rules(policy: Policy, args: str) -> str:
    """Apply ``/permissions ARGS`` to ``policy`` and say what changed: "" for no arguments (the
    list only); ``allow RULE`` adds a session allow rule (``Policy.allow_for_session``), ``deny
    RULE`` a session deny rule, ``remove N`` takes away session rule N (``numbered_rules``).

    Raises:
        ScoutError: other arguments, a bad rule (``parse_rule``), a deny rule naming a near miss
            of a built-in tool (``bsh:rm *``: it would deny nothing), a number that is not a rule,
            or one of a config file (it is removed there, not here). Nothing is changed then.
    """
    verb, _, rest = args.strip().partition(" ")
    rest = rest.strip()
    if not verb:
        return ""
    if verb in ("allow", "deny") and rest:
        rule = parse_rule(rule_text(rest), SESSION)
        if verb == "allow":
            policy.allow_for_session([rule.text])
            return f"Allowed for this session: `{rule.text}` (deny rules still win)."
        hint = did_you_mean(rule.tool, sorted(BUILTIN_TOOL_NAMES)) if rule.tool not in BUILTIN_TOOL_NAMES else ""
        if hint:
            raise ScoutError(f"/permissions deny {rest}: {rule.tool!r} names no tool{hint} Nothing was changed: "
                             "a misspelt deny rule would deny nothing.")
        if rule not in policy.deny:
            policy.deny.append(rule)
        return f"Denied for this session: `{rule.text}`."
    if verb == "remove" and rest.isascii() and rest.isdigit():
        rules = numbered_rules(policy)
        number = int(rest)
        if not 1 <= number <= len(rules):
            raise ScoutError(f"/permissions remove {rest}: there is no rule {number} (the rules are numbered 1 to "
                             f"{len(rules)}: `/permissions` lists them).")
        kind, rule = rules[number - 1]
        if rule.origin != SESSION:
            raise ScoutError(f"/permissions remove {rest}: rule {number} (`{rule.text}`) comes from {rule.origin}: "
                             "remove it from that file (this command removes the rules of this session).")
        for held in (policy.deny, policy.session):
            if rule in held:
                held.remove(rule)
        return f"Removed the session's {kind} rule `{rule.text}`."
    raise ScoutError(USAGE)


def describe_rules(policy: Policy, config: Config | None = None) -> str:
    """``/permissions``'s Markdown: the mode (where it was chosen, from ``config``), then each
    rule numbered (``numbered_rules``) with its kind and where it comes from, and what always
    asks whatever the rules say."""
    from scout_tui.session.status import mode_line

    mode = mode_line(config, policy) if config is not None else policy.mode
    lines = [f"**Permission rules** · mode {mode}", ""]
    rules = numbered_rules(policy)
    for number, (kind, rule) in enumerate(rules, 1):
        where = "this session" if rule.origin == SESSION else rule.origin
        only = " (its bash rules only in the sandbox: a project's)" if rule in policy.project_rules and rule.tool == "bash" else ""
        lines.append(f"{number}. {kind} `{rule.text}` · {where}{only}")
    if not rules:
        lines.append("No rules: `[permissions] allow = [...]` and `deny = [...]` in scout.toml, a project's "
                     "`.claude/settings.json` `permissions`, or `/permissions allow RULE` for this session.")
    lines += ["", "Deny wins over allow. A path outside the workspace and a change to "
              f"{', '.join(f'`{p}`' for p in PROTECTED)} always ask (but in yolo). `/permissions allow RULE`, "
              "`/permissions deny RULE` add a rule for this session; `/permissions remove N` takes one away."]
    return "\n".join(lines)
