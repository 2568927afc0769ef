"""CostView: a branch's spending by model, every branch's own spending, the price note, Esc / q."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Static

from scout_tui.store.event_log import SessionInfo
from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, CostView
from scout_tui.session.cost import cache_hit, cost_text

BY_MODEL = {
    "claude-sonnet-4-5": {"requests": 12, "input_tokens": 3_000, "output_tokens": 8_400,
                          "cache_read_tokens": 87_000, "cache_write_tokens": 10_000, "cost": 0.4213},
    "claude-haiku-4-5": {"requests": 1, "input_tokens": 40_000, "output_tokens": 1_500,
                         "cache_read_tokens": 0, "cache_write_tokens": 0, "cost": 0.05},
}


def session(id: str, title: str, *, parent: str | None = None, fork_at: int | None = None, count: int = 4,
            input: int = 0, output: int = 0, cost: float = 0.0) -> SessionInfo:
    return SessionInfo(id=id, parent=parent, fork_at=fork_at, cwd="/repo", title=title, created=0.0, updated=0.0,
                       message_count=count, input_tokens=input, output_tokens=output, cost=cost)


BRANCHES = [
    (session("root", "Parser rewrite [bold]", count=30, input=100_000, output=9_000, cost=0.42), 0),
    (session("b", "Try a lexer", parent="root", fork_at=12, count=18, input=20_000, output=900, cost=0.05), 1),
    (session("c", "Local model", count=3, input=5_000, output=200), 0),
]


class CostApp(App):
    def __init__(self, by_model: dict, note: str = "prices: models.dev (anthropic/claude-sonnet-4-5)") -> None:
        super().__init__()
        self.by_model = by_model
        self.note = note
        self.closed: list[None] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def on_mount(self) -> None:
        self.push_screen(CostView(self.by_model, BRANCHES, "b", note=self.note), self.closed.append)


def text_of(view: CostView, id: str) -> str:
    """What a Static of the view draws, as plain lines (a border line left out)."""
    static = view.query_one(f"#{id}", Static)
    lines = [strip.text.rstrip() for strip in static.render_lines(static.region.reset_offset)]
    return "\n".join(line for line in lines if line.strip("─"))


def row(text: str, first: str) -> list[str]:
    """The cells of the table line starting with ``first`` (split on runs of spaces)."""
    line = next(line for line in text.splitlines() if line.strip().startswith(first))
    return [cell for cell in line.replace(first, "", 1).split() if cell]


async def test_totals_and_the_table_by_model_show_tokens_cache_hits_and_dollars():
    app = CostApp(BY_MODEL)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        view = app.screen
        assert isinstance(view, CostView)
        assert text_of(view, "cost-title") == "What this session cost: $0.47"
        assert text_of(view, "cost-subtitle").startswith("13 requests: this branch")
        by_model = text_of(view, "cost-by-model")
        assert row(by_model, "claude-sonnet-4-5") == ["12", "3.0k", "87.0k", "10.0k", "8.4k", "87%", "$0.42"]
        assert row(by_model, "claude-haiku-4-5") == ["1", "40.0k", "0", "0", "1.5k", "0%", "$0.05"]
        assert row(by_model, "all models") == ["13", "43.0k", "87.0k", "10.0k", "9.9k", "62%", "$0.47"]
        assert by_model.index("claude-sonnet") < by_model.index("claude-haiku")  # most expensive first
        assert text_of(view, "cost-note") == "prices: models.dev (anthropic/claude-sonnet-4-5)"


async def test_the_table_by_branch_indents_forks_marks_the_current_one_and_says_when_a_cost_is_unknown():
    app = CostApp(BY_MODEL)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        by_branch = text_of(app.screen, "cost-by-branch")
        lines = by_branch.splitlines()
        root = next(line for line in lines if "Parser rewrite [bold]" in line)  # a title, never markup
        lexer = next(line for line in lines if "Try a lexer" in line)
        assert lexer.index("● ") < root.index("Parser") < lexer.index("⑂ at 12 Try a lexer")
        assert "●" not in root
        assert root.split()[-3:] == ["30", "109k", "$0.42"]
        assert lexer.split()[-3:] == ["18", "20.9k", "$0.05"]
        assert row(by_branch, "Local model") == ["3", "5.2k", "—"]  # tokens spent, no price known
        assert row(by_branch, "all branches") == ["135k", "$0.47"]


async def test_a_model_without_a_price_shows_a_dash_not_zero_dollars():
    unpriced = {"llama-3.1-8b": {"requests": 2, "input_tokens": 900, "output_tokens": 80,
                                 "cache_read_tokens": 0, "cache_write_tokens": 0, "cost": 0.0}}
    note = 'no price known for this model: set [models."ID"] input/output in scout.toml'
    app = CostApp(unpriced, note=note)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert text_of(app.screen, "cost-title") == "What this session cost: —"
        assert row(text_of(app.screen, "cost-by-model"), "llama-3.1-8b")[-1] == "—"
        assert text_of(app.screen, "cost-note") == note  # literal, brackets and all


async def test_escape_and_q_close_the_view():
    app = CostApp(BY_MODEL)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CostView) and app.closed == [None]
        app.push_screen(CostView(BY_MODEL, BRANCHES, None), app.closed.append)
        await pilot.pause()
        assert isinstance(app.screen, CostView)
        await pilot.press("q")
        await pilot.pause()
        assert not isinstance(app.screen, CostView) and app.closed == [None, None]


def test_cost_and_cache_hit_texts():
    assert [cost_text(None, 0), cost_text(0.0, 10), cost_text(0.0, 0), cost_text(0.004, 10), cost_text(12.46, 1)] == [
        "—", "—", "$0", "<$0.01", "$12.5"]
    assert cache_hit({"input_tokens": 10, "cache_read_tokens": 30, "cache_write_tokens": 0}) == "75%"
    assert cache_hit({"input_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}) == "—"
