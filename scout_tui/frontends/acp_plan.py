"""Plan mode over ACP: a plan from ``exit_plan`` as the client sees and answers it.

The plan goes to the client as ACP's plan update (``sessionUpdate: "plan"``, one entry per top
list item of the markdown, each ``pending``; https://agentclientprotocol.com/protocol/agent-plan),
then the person chooses through ``session/request_permission`` (as Claude Code's ACP adapter asks
about its ``ExitPlanMode``): run it here, run it in a fresh context, or keep planning.
"""

from __future__ import annotations

import re

from acp.schema import AgentPlanUpdate, PermissionOption, PlanEntry, ToolCallUpdate

from scout_tui.tools.approvals import PlanDecision, PlanReview

HERE, FRESH, KEEP = "plan_here", "plan_fresh", "plan_keep"
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.+)$")
ENTRY_CHARS = 300


def plan_entries(plan: str) -> list[str]:
    """The steps of ``plan`` (markdown): its top-level list items (bulleted or numbered), each on
    one line cut to ``ENTRY_CHARS``; the whole plan as one step when it has no list."""
    steps = [m.group(1).strip() for line in plan.splitlines() if (m := _ITEM.match(line))]
    return [s[:ENTRY_CHARS] for s in steps] or [" ".join(plan.split())[:ENTRY_CHARS]]


def plan_update(plan: str) -> AgentPlanUpdate:
    """The ``plan`` session update of ``plan``: its steps, pending, of medium priority."""
    return AgentPlanUpdate(session_update="plan", entries=[
        PlanEntry(content=step, priority="medium", status="pending") for step in plan_entries(plan)])


def plan_request(review: PlanReview) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """The ``session/request_permission`` that asks about ``review``: the ``exit_plan`` call with
    the plan as its content, and the three choices."""
    from scout_tui.frontends.acp_updates import text_content

    options = [PermissionOption(option_id=HERE, name=f"Run it here (back to {review.mode} mode)", kind="allow_once"),
               PermissionOption(option_id=FRESH, name="Run it in a fresh context", kind="allow_once"),
               PermissionOption(option_id=KEEP, name="Keep planning", kind="reject_once")]
    call = ToolCallUpdate(tool_call_id=review.id, title="Ready to code? Approve the plan", kind="think",
                          status="pending", raw_input={"plan": review.plan}, content=[text_content(review.plan)])
    return call, options


def plan_decision(option_id: str | None) -> PlanDecision:
    """The answer a chosen option gives; None (the request was cancelled) keeps planning."""
    return {HERE: PlanDecision("here"), FRESH: PlanDecision("fresh")}.get(option_id or "", PlanDecision("keep"))
