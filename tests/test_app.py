"""The real app, driven with Pilot, against loopback model servers speaking each wire format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.core.messages import is_turn_marker
from scout_tui.extensions.plugins import project_plugin_trust
from scout_tui.store.event_log import Store
from scout_tui.config.trust import record_trust
from scout_tui.widgets import ChatView, Composer, SessionTree, StatusBar, ToolActivity
from scout_tui.widgets.chat_view import AssistantMessage, Notice, UserMessage
from tests.app_helpers import SIZE, HeldReply, conversation, long_session, make_app, running_and_printed, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream, split

@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    return workdir


async def test_anthropic_turn_reads_a_file_and_shows_the_answer(repo):
    first = anthropic_stream(["Let me read ", "the file."], ("toolu_1", "read", ['{"pa', 'th": "not', 'es.txt"}']))
    replies = [Reply(split(first, 23)), Reply(split(anthropic_stream(["The file says ", "**42**."]), 17))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "what does notes.txt say?")
            await settle(app, pilot)
            answers = list(app.query(AssistantMessage))
            assert answers[-1].source == "The file says **42**."
            assert app.query_one(ToolActivity).status_of("toolu_1") == "ok"
            assert [str(u.content) for u in app.query(UserMessage)] == ["what does notes.txt say?"]
            session_id = app.session.id
    result = server.requests[1].json()["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "the answer is 42" in json.dumps(result)
    stored = Store().messages(session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[2]["content"][0]["tool_use_id"] == "toolu_1"


async def test_openai_compatible_turn_runs_bash(repo):
    call = ("call_9", "bash", ['{"command": "echo from-', 'bash; cat notes.txt"}'])
    replies = [Reply(split(openai_stream([], call), 31)), Reply(openai_stream(["It printed ", "the answer."]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server, provider="openai", model="llama3.1", permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "run it")
            await settle(app, pilot)
            assert list(app.query(AssistantMessage))[-1].source == "It printed the answer."
            tools = app.query_one(ToolActivity)
            assert tools.status_of("call_9") == "ok"
            assert "from-bash" in tools.output_of("call_9")
            session_id = app.session.id
    tool_message = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"][0]
    assert tool_message["tool_call_id"] == "call_9" and "from-bash" in tool_message["content"]
    assert len(Store().messages(session_id)) == 4


async def test_escape_interrupts_a_stream_and_keeps_the_partial_answer(repo):
    body = anthropic_stream(["Half of ", "an answer", " that never ends"])
    cut = body.index(b"\n\n", body.index(b"an answer")) + 2
    with LoopbackServer([Reply([body[:cut], body[cut:]], delay=600)]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "go")
            await wait_until(pilot, lambda: "an answer" in "".join(a.source for a in app.query(AssistantMessage)))
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy)  # the rest of the answer would take 600 s
            await settle(app, pilot)
            answer = list(app.query(AssistantMessage))[-1]
            assert answer.source == "Half of an answer" and answer.query(".interrupted")
            session_id = app.session.id
    stored = Store().messages(session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user"]  # the last: the interruption, for the model
    assert stored[1]["content"][0]["text"] == "Half of an answer" and is_turn_marker(stored[2])


async def test_escape_during_bash_kills_it_and_answers_the_call(repo):
    call = ("toolu_s", "bash", [json.dumps({"command": "echo started; sleep 600; touch finished"})])
    with LoopbackServer([Reply(anthropic_stream(["Sleeping."], call))]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "sleep")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_s", "started"))
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy)  # only the kill ends a 600 s sleep
            await settle(app, pilot)
            assert app.query_one(ToolActivity).status_of("toolu_s") == "error"
            session_id = app.session.id
    stored = Store().messages(session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user"]
    result = stored[2]["content"][0]
    assert result["tool_use_id"] == "toolu_s" and result["is_error"] is True and "Interrupted" in result["content"]
    assert not (repo / "finished").exists()


async def test_the_app_stays_responsive_while_a_turn_streams(repo):
    pieces = split(anthropic_stream(["x" * 4] * 400), 64)
    reply = HeldReply(pieces, held_after=len(pieces) // 2)  # the second half waits for the test
    with LoopbackServer([reply]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "stream a lot")
            await wait_until(pilot, lambda: "xxxx" in "".join(a.source for a in app.query(AssistantMessage)),
                             what="the first half of the answer is shown")
            composer = app.query_one(Composer)
            await pilot.press(*"typing while it streams")
            assert composer.text == "typing while it streams"
            assert app.busy  # typed mid-stream: the answer is not over
            reply.release()
            await settle(app, pilot)
            assert list(app.query(AssistantMessage))[-1].source == "x" * 1600


async def test_without_an_api_key_the_chat_explains_how_to_configure(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        notices = " ".join(n.text for n in app.query(Notice))
        assert "ANTHROPIC_API_KEY" in notices and "--base-url http://localhost:11434/v1" in notices
        await send(app, pilot, "hello?")
        await wait_until(pilot, lambda: not app.busy and "Not sent" in list(app.query(Notice))[-1].text,
                         what="the prompt is refused")
        assert app.session.id is None
        # The prompt is kept, in the composer, to send once a key is set.
        assert app.query_one(Composer).text == "hello?" and not app.query(UserMessage)
        last = list(app.query(Notice))[-1].text
        assert last.startswith("Not sent (kept in the composer): ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=")
        assert "Ollama" not in last and "above" not in last  # not the help again, nor a pointer to it


async def test_choosing_a_session_in_the_tree_opens_it(repo):
    store = Store()
    older = store.create_session(repo)
    store.append(older, __import__("scout_tui.core.bus", fromlist=["Event"]).Event.of(
        "message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "older question"}]}}))
    store.close()
    with LoopbackServer([Reply(anthropic_stream(["new answer"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "new question")
            await settle(app, pilot)
            tree = app.query_one(SessionTree)
            tree.post_message(SessionTree.Opened(older))
            await settle(app, pilot)
            assert app.session.id == older
            assert [str(u.content) for u in app.query(UserMessage)] == ["older question"]
            assert app.query_one(StatusBar).session_id == older


async def test_ctrl_o_shows_what_the_model_sees_with_compacted_calls_marked(repo, small_epochs):
    from scout_tui.widgets.prompt_view import PromptView

    sid = long_session(Store(), repo)
    app = ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptView), what="the prompt view")
        stored = str(app.screen.query_one("#prompt-stored Static").content)
        sent = str(app.screen.query_one("#prompt-sent Static").content)
        # 30 calls, threshold 10, epoch 5: the newest 10 whole, 10 truncated, 10 dropped
        assert stored.count("[dropped]") == 20 and stored.count("[truncated]") == 20  # call and result
        assert "f0.txt" in stored and "f0.txt" not in sent
        assert "Truncated (5003)" in sent and "Strategy shorten_tools_epoch: 10 tool calls truncated, 10 dropped" in str(
            app.screen.query_one("#prompt-summary").content)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PromptView), what="the prompt view closed")


async def test_a_misspelt_strategy_in_scout_toml_is_shown_at_start_with_its_file_and_line(repo):
    (repo / "scout.toml").write_text('[compaction]\nstrategy = "shorten_tool"\n')
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        notices = lambda: " ".join(n.text for n in app.query(Notice))  # noqa: E731
        await wait_until(pilot, lambda: "shorten_tool" in notices(), what="the strategy error in the chat")
        assert f"{repo / 'scout.toml'}:2: [compaction]: unknown prompt strategy 'shorten_tool'" in notices()
        assert "did you mean 'shorten_tools'" in notices()


async def test_strategy_command_switches_the_strategy_for_this_session(repo, small_epochs):
    sid = long_session(Store(), repo)
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        app = ScoutApp(load_config(repo, flags={"api_key": "sk-test", "base_url": server.url}), cwd=repo, resume=sid)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            status = app.query_one(StatusBar)
            # the estimate is a worker started after the history's first frame: wait for its figure
            await wait_until(pilot, lambda: status.context_used > 0, what="the context estimate")
            compacted_use = status.context_used
            assert compacted_use < 30 * 5000 / 4
            await send(app, pilot, "/strategy nonsense")
            await pilot.pause()
            assert "Unknown strategy 'nonsense'" in " ".join(n.text for n in app.query(Notice))
            await send(app, pilot, "/strategy none")
            await settle(app, pilot)
            await wait_until(pilot, lambda: status.context_used > 30 * 5000 / 4, what="the estimate without compaction")
            await send(app, pilot, "go on")
            await settle(app, pilot)
    assert json.dumps(server.requests[0].json()["messages"]).count("x" * 5000) == 30  # nothing compacted


async def test_the_strategy_chosen_holds_for_an_agent_built_again_later(repo, small_epochs):
    """The agent is built again between turns (an MCP server's tools changed, plugins loaded, a
    model switch): the session's ``/strategy`` goes with it (``Session.strategies``)."""
    sid = long_session(Store(), repo)
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        app = ScoutApp(load_config(repo, flags={"api_key": "sk-test", "base_url": server.url}), cwd=repo, resume=sid)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await send(app, pilot, "/strategy none")
            await settle(app, pilot)
            app.session.agent = None  # as ``McpServers`` does when a server's tools change between turns
            await send(app, pilot, "go on")
            await settle(app, pilot)
    assert json.dumps(server.requests[0].json()["messages"]).count("x" * 5000) == 30  # nothing compacted


async def test_command_palette_offers_the_strategies_and_the_model_view(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Prompt strategy: none", "Prompt strategy: shorten_tools", "Prompt strategy: shorten_tools_epoch",
                "What the model sees", "New session"} <= set(titles)


async def test_fork_at_a_selected_prompt_makes_a_sibling_branch_and_keeps_the_original(repo):
    replies = [Reply(anthropic_stream(["first answer"])), Reply(anthropic_stream(["second answer"])),
               Reply(anthropic_stream(["different answer"]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "first question")
            await settle(app, pilot)
            await send(app, pilot, "second question")
            await settle(app, pilot)
            original = app.session.id
            chat = app.query_one(ChatView)
            chat.focus()
            await pilot.pause()
            await pilot.press("k")  # from the newest answer up to the third message, the second prompt
            await pilot.press("f")
            await settle(app, pilot)
            branch = app.session.id
            assert branch != original
            composer = app.query_one(Composer)
            assert composer.text == "second question" and composer.has_focus
            composer.load_text("a different question")
            await pilot.press("enter")
            await settle(app, pilot)
            tree = app.query_one(SessionTree)
            roots = [node for node in tree.root.children]
            assert [n.data.id for n in roots] == [original]
            assert [n.data.id for n in roots[0].children] == [branch]
            # back to the original branch from the keyboard: Ctrl+T, up to it, Enter
            await pilot.press("ctrl+t")
            tree.select_node(roots[0])
            tree.move_cursor(roots[0])
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.session.id == original
            assert [str(u.content) for u in app.query(UserMessage)] == ["first question", "second question"]
            assert [a.source for a in app.query(AssistantMessage)] == ["first answer", "second answer"]
    store = Store()
    texts = lambda sid: [b["text"] for m in store.messages(sid) for b in m["content"]]
    assert texts(original) == ["first question", "first answer", "second question", "second answer"]
    assert texts(branch) == ["first question", "first answer", "a different question", "different answer"]
    assert store.session(branch).parent == original and store.session(branch).fork_at == 2
    # the branch shares its first two messages with the original: no copies were written
    assert len(store.events(branch)) < len(store.events(original))
    sent = [b["text"] for m in server.requests[2].json()["messages"] for b in m["content"]]
    assert sent == ["first question", "first answer", "a different question"]


async def test_an_unknown_provider_is_explained_in_the_chat(repo):
    app = make_app(repo, None, provider="bogus", api_key="sk-x")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "unknown provider 'bogus'" in " ".join(n.text for n in app.query(Notice))
        await send(app, pilot, "hi")
        await pilot.pause()
        assert not app.busy and app.session.id is None


async def test_a_long_session_paints_its_newest_messages_then_reads_the_rest(repo):
    from scout_tui.tui.sessions import OPEN_TAIL
    from scout_tui.core.bus import Event

    store = Store()
    sid = store.create_session(repo)
    for i in range(OPEN_TAIL * 3):
        role = "user" if i % 2 == 0 else "assistant"
        store.append(sid, Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": f"m{i}"}]}}))
    with LoopbackServer([Reply(anthropic_stream(["fine"]))]) as server:
        app = make_app(repo, server)
        app._resume = sid
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert len(app.session.messages) == OPEN_TAIL * 3 and None not in app.session.messages
            assert app.session.messages[0]["content"][0]["text"] == "m0"
            await send(app, pilot, "next")
            await settle(app, pilot)
    sent = server.requests[0].json()["messages"]
    assert len(sent) == OPEN_TAIL * 3 + 1 and sent[0]["content"][0]["text"] == "m0"


@pytest.mark.parametrize("calls", [12, 40])  # shorter than the chat, and taller
async def test_a_reopened_session_shows_its_last_message_once_the_earlier_batch_is_in(repo, calls):
    # More messages than the chat mounts at first (LOAD_LIMIT): the batch before them mounts
    # once they are drawn. That must not unpin the view from the bottom, or the last answer is
    # left below it when heights change after (seen: the last line cut off under the composer).
    sid = long_session(Store(), repo, calls=calls, size=200)
    app = make_app(repo, None, api_key="sk-test")
    app._resume = sid
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await wait_until(pilot, lambda: app.chat.loaded_count == len(app.session.messages))
        await settle(app, pilot)
        last = app.chat.children[-1]
        assert isinstance(last, AssistantMessage) and last.region.height > 0
        assert app.chat.region.contains_region(last.region)


async def test_page_keys_in_the_composer_scroll_the_chat(repo):
    from scout_tui.core.bus import Event

    store = Store()
    sid = store.create_session(repo)
    for i in range(10):  # all mounted at once (under LOAD_LIMIT), several pages tall
        role = "user" if i % 2 == 0 else "assistant"
        text = "\n\n".join(f"line {n} of message {i}" for n in range(12))
        store.append(sid, Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}}))
    app = make_app(repo, None, api_key="sk-test")
    app._resume = sid
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        chat, composer = app.chat, app.query_one(Composer)
        assert composer.has_focus and chat.max_scroll_y > 0
        bottom = chat.scroll_y
        await pilot.press("pageup")
        await wait_until(pilot, lambda: chat.scroll_y < bottom)
        assert bottom - chat.scroll_y >= chat.scrollable_content_region.height - 2  # about a page
        assert chat.max_scroll_y > 3 * chat.scrollable_content_region.height
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: chat.scroll_y == bottom)
        await pilot.press("ctrl+home")
        await wait_until(pilot, lambda: chat.scroll_y == 0)
        await pilot.press("ctrl+end")
        await wait_until(pilot, lambda: chat.scroll_y == chat.max_scroll_y)
        assert composer.has_focus and composer.text == ""


async def test_the_focused_pane_is_marked(repo):
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.tree_pane is not None)
        tree, tools = app.tree_pane, app.tool_pane
        plain = tree.styles.border_title_color
        assert tools.styles.border_title_color == plain and not app.chat.styles.outline_left[0]
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: tree.styles.border_title_color != plain)
        marked = tree.styles.border_title_color
        assert tools.styles.border_title_color == plain
        app.query_one("#tool-list").focus()
        await wait_until(pilot, lambda: tools.styles.border_title_color == marked)
        assert tree.styles.border_title_color == plain
        app.chat.focus()
        await wait_until(pilot, lambda: app.chat.styles.outline_left[0] == "vkey")
        assert tools.styles.border_title_color == plain


async def test_a_turn_s_retries_read_as_one_line_counting_up(repo):
    from tests.conftest import wire

    def overloaded(retry_after: str) -> Reply:
        return Reply(wire("anthropic_error_overloaded_529.json"), 529,
                     {"content-type": "application/json", "retry-after": retry_after})

    with LoopbackServer([overloaded("0"), overloaded("60")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await wait_until(pilot, lambda: len(server.requests) == 2 and "retrying 2/" in app.status.state)
            await pilot.pause()
            retries = [n.text for n in app.query(Notice) if n.has_class("-retry")]
            assert len(retries) == 1 and "retrying (2/" in retries[0]
            await pilot.press("escape")  # the second wait would take 60 s
            await wait_until(pilot, lambda: not app.busy)


async def test_resume_of_an_unknown_id_keeps_the_open_session(repo):
    with LoopbackServer([Reply(anthropic_stream(["hello"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hi")
            await settle(app, pilot)
            current = app.session.id
            await send(app, pilot, "/resume zzzz9999")
            await settle(app, pilot)
            assert app.session.id == current and app.query_one(StatusBar).session_id == current
            assert [str(u.content) for u in app.query(UserMessage)] == ["hi"]


async def test_sessions_written_by_another_process_appear_in_the_tree(repo, monkeypatch):
    import scout_tui.tui.app as app_module
    from scout_tui.core.bus import Event

    monkeypatch.setattr(app_module, "SESSIONS_POLL", 0.05)
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        other = Store()  # a second connection to the same file, as another scout-tui would have
        sid = other.create_session(repo)
        other.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "from elsewhere"}]}}))
        other.close()
        tree = app.query_one(SessionTree)
        await wait_until(pilot, lambda: [n.data.id for n in tree.root.children] == [sid],
                         what="the other process's session is in the tree")


async def test_ctrl_t_goes_to_the_tree_and_back_to_where_focus_was(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        chat = app.query_one(ChatView)
        chat.focus()
        await pilot.press("ctrl+t")
        assert app.query_one(SessionTree).has_focus
        await pilot.press("ctrl+t")
        assert chat.has_focus


def test_the_model_view_shows_only_the_newest_messages_of_a_long_session():
    from scout_tui.widgets.prompt_view import SHOWN_MESSAGES, render_conversation

    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": f"m{i}"}]}
                for i in range(SHOWN_MESSAGES + 600)]
    text = render_conversation(messages, {}).plain
    assert text.startswith("… 600 earlier messages not shown") and f"m{SHOWN_MESSAGES + 599}" in text
    assert "#599 " not in text and "#600 " in text


async def test_project_plugins_and_skills_reach_the_tui(repo):
    plugins = repo / ".agents" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "shout.py").write_text('''
from scout_tui.tools import Tool

async def run(input, ctx):
    return input["text"].upper()

def scout(api):
    api.tool(Tool("shout", "Upper-cases text.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                  "required": ["text"]}, run, read_only=True))
    api.command("hello", lambda args: f"hello {args or 'world'} from a plugin")
''')
    (plugins / "broken.py").write_text("def scout(api):\n    raise RuntimeError('boom')\n")
    record_trust(project_plugin_trust(repo)[0])  # project plugins run once trusted (tests/test_trust.py)
    skill = repo / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: How to cut a release\n---\nSteps: tag, build, upload.\n")
    call = ("toolu_p", "shout", ['{"text": "quiet words"}'])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["done"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert any("broken.py" in n.message and "boom" in n.message for n in app._notifications)
            await send(app, pilot, "/hello there")
            await settle(app, pilot)
            await send(app, pilot, "/skills")
            await settle(app, pilot)
            notices = " ".join(n.text for n in app.query(Notice))
            assert "hello there from a plugin" in notices and "release" in notices and "How to cut a release" in notices
            await send(app, pilot, "shout it")
            await settle(app, pilot)
            assert app.query_one(ToolActivity).status_of("toolu_p") == "ok"
    first = server.requests[0].json()
    assert "shout" in [t["name"] for t in first["tools"]] and "skill" in [t["name"] for t in first["tools"]]
    system = first["system"][0]["text"]  # one text block, with a cache breakpoint
    assert "How to cut a release" in system and "tag, build, upload" not in system
    assert "QUIET WORDS" in json.dumps(server.requests[1].json()["messages"][-1])


async def test_up_recalls_the_reopened_session_s_prompts_and_esc_goes_back_to_the_composer(repo):
    store = Store()
    sid = conversation(store, repo)
    typed = [m["content"][0]["text"] for m in store.messages(sid) if m["role"] == "user"
             and m["content"][0].get("type") == "text"]
    app = ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        composer = app.query_one(Composer)
        await pilot.press("up")
        assert composer.text == typed[-1]
        app.chat.focus()
        await pilot.press("escape")  # nothing runs: back to the composer
        assert composer.has_focus


async def test_keys_arriving_together_edit_in_the_order_typed(repo):
    # Seen in tmux (`send-keys x BSpace y`): "hellox" — the binding of Backspace ran after the
    # "y" typed behind it, so it deleted the y. Editing keys now act in the composer's own queue.
    from textual import events

    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        composer = app.query_one(Composer)
        composer.load_text("hello")
        composer.move_cursor(composer.document.end)
        for key, character in (("x", "x"), ("backspace", "\x7f"), ("y", "y"), ("left", None), ("z", "z")):
            event = events.Key(key, character)
            event.set_sender(app)
            app.post_message(event)  # at once, as one read of the terminal delivers them
        await wait_until(pilot, lambda: composer.text == "hellozy", what=f"hellozy, not {composer.text!r}")
