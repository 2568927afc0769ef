"""Plan mode's way out: the ``exit_plan`` tool, and what each of the person's answers does.

In ``plan`` mode (``tools.permissions``) only what reads runs; the model ends by calling
``exit_plan`` with its plan in markdown. The person answers (``tools.approvals.PlanDecision``;
the TUI's plan dialog, ACP's permission request; ``-p`` cannot ask and answers ``stop``):

- ``here``: the mode goes back to the one plan mode was entered from, and the model carries the
  plan out in this conversation (the turn goes on);
- ``fresh``: the turn ends, and ``Session.turn`` goes on in a new branch of the tree, a sibling
  starting from nothing, whose first message is the plan and the request (``fresh_prompt``); the
  exploration stays as its own branch;
- ``keep``: the mode stays ``plan`` and the model reads the person's note;
- ``stop``: the plan is the turn's answer; the turn ends and nothing changes.

Each answer is recorded as a ``plan.decision`` event. The shape of ``exit_plan`` follows Claude
Code's ``ExitPlanMode`` (``{"plan": markdown}``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scout_tui.tools.base import Tool, ToolContext, ToolError, ToolResult, object_schema, string

if TYPE_CHECKING:
    from scout_tui.core.bus import PlanBranch
    from scout_tui.session.session import Session
    from scout_tui.tools.approvals import PlanDecision

EXIT_PLAN = "exit_plan"

DESCRIPTION = (
    "Plan mode only: when you have explored enough (read-only) and know what to change, propose your plan "
    "to the user with this tool. The plan is markdown: the steps in order, the files each one changes and "
    "how, and how to check the result. The user approves it (then you carry it out), asks you to keep "
    "planning, or edits it. Call it alone, as your last call of the answer."
)


@dataclass
class FreshContext:
    """A plan approved to run in a fresh context, waiting for the turn to end: ``plan`` as
    approved and ``request`` (the prompt it answers)."""

    plan: str
    request: str


def exit_plan_tool(session: Session) -> Tool:
    """The ``exit_plan`` tool of ``session``: asks ``session.review_plan`` (None: answers
    ``stop``) and acts on the answer (see the module's docstring)."""

    async def run(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        plan = input.get("plan")
        if not isinstance(plan, str) or not plan.strip():
            raise ToolError("'plan' must be the plan in markdown, not empty")
        return await decide(session, ctx, plan.strip())

    return Tool(EXIT_PLAN, DESCRIPTION, object_schema(plan=string("The plan, in markdown."), required=("plan",)),
                run, read_only=True)


async def decide(session: Session, ctx: ToolContext, plan: str) -> ToolResult:
    """Ask the person about ``plan`` and act on the answer; the result the model reads."""
    from scout_tui.core.bus import PlanDecided
    from scout_tui.tools.approvals import PlanDecision, PlanReview

    review = PlanReview(ctx.call_id, plan, request_text(session.messages), session.mode_before_plan)
    ask = session.review_plan
    decision = await ask(review) if ask is not None else PlanDecision("stop")
    approved = decision.plan.strip() or plan
    if ctx.emit is not None:
        ctx.emit(PlanDecided(ctx.call_id, decision.action, approved, decision.note))
    return outcome(session, decision, approved, review.request, edited=approved != plan)


def outcome(session: Session, decision: PlanDecision, plan: str, request: str, *, edited: bool = False) -> ToolResult:
    """What ``decision`` does to ``session`` and says to the model (``plan`` as approved,
    ``edited`` when the person changed it)."""
    edited_text = " as they edited it" if edited else ""
    if decision.action == "here":
        session.set_permission_mode(session.mode_before_plan)
        return ToolResult(f"The user approved the plan{edited_text}. Carry it out now, step by step; the permission "
                          f"mode is {session.mode_before_plan} again.\n\nThe approved plan:\n{plan}")
    if decision.action == "fresh":
        session.fresh_context = FreshContext(plan, request)
        return ToolResult("The user approved the plan, to be carried out in a fresh context: stop here.",
                          ends_turn=True)
    if decision.action == "keep":
        note = f" They said: {decision.note.strip()}" if decision.note.strip() else ""
        return ToolResult(f"The user wants to keep planning; the plan is not approved yet.{note} Stay in plan mode, "
                          "explore what is missing, then propose the revised plan with exit_plan.", True)
    return ToolResult("The plan is shown to the user, who will decide on it: stop here, without a summary.",
                      ends_turn=True)


def offer_exit_plan(session: Session) -> None:
    """``exit_plan`` among ``session``'s agent's tools in plan mode only (a subagent never takes
    it: its ``Registry.keep`` refuses the name)."""
    agent = session.agent
    if agent is None:
        return
    if agent.permissions is not None and agent.permissions.mode == "plan":
        if EXIT_PLAN not in agent.tools:
            agent.tools.add(exit_plan_tool(session))
    else:
        agent.tools.tools.pop(EXIT_PLAN, None)


async def open_fresh_branch(session: Session, fresh: FreshContext) -> tuple[PlanBranch, list[dict]]:
    """The approved plan's new branch, opened in ``session``: a sibling of the exploration that
    starts from nothing (``Store.fork`` at 0), in the mode plan mode was entered from. Returns the
    ``PlanBranch`` event that says so and the branch's first message (``fresh_prompt``)."""
    from scout_tui.core.bus import PlanBranch
    from scout_tui.store.opening import open_session

    parent = session.id
    assert parent is not None
    branch = await asyncio.to_thread(session.store.fork, parent, 0)
    session.open(await asyncio.to_thread(open_session, session.store, session.cwd, resume=branch.id))
    session.set_permission_mode(session.mode_before_plan)
    return PlanBranch(parent, branch.id), fresh_prompt(fresh)


def request_text(messages: list[dict | None]) -> str:
    """The text of the prompt the turn answers: the last message the person typed in ``messages``."""
    from scout_tui.core.messages import is_prompt, message_text

    for message in reversed(messages):
        if message is not None and is_prompt(message):
            return message_text(message).strip()
    return ""


def fresh_prompt(fresh: FreshContext) -> list[dict]:
    """The first message of a fresh-context branch: the request (its first line the branch's
    title, as a prompt's is), then the approved plan."""
    head = fresh.request or "Carry out the approved plan."
    return [{"type": "text", "text": f"{head}\n\n## The approved plan\n{fresh.plan}\n\nCarry out this plan now, "
                                     "step by step."}]
