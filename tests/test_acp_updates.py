"""The pure mapping from scout-tui's events and stored messages to ACP session updates."""

from __future__ import annotations

from pathlib import Path

from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextContentBlock, TextResourceContents

from scout_tui.frontends.acp_inputs import prompt_text
from scout_tui.frontends.acp_updates import LiveUpdates, diff_contents, stop_reason, tool_kind
from scout_tui.core.bus import MessageDelta, PermissionDecision, ToolEnd, ToolOutput, ToolStart
from scout_tui.core.diffs import unified_diff


def test_an_edit_diff_becomes_one_acp_diff_per_hunk_with_its_old_and_new_text():
    before = "".join(f"line {i}\n" for i in range(30))
    after = before.replace("line 2\n", "line two\n").replace("line 25\n", "")
    [first, second] = diff_contents(unified_diff("f.txt", before, after), {"path": "f.txt"}, Path("/work"))
    assert first.path == "/work/f.txt"
    assert first.old_text == "line 0\nline 1\nline 2\nline 3\nline 4\nline 5\n"
    assert first.new_text == "line 0\nline 1\nline two\nline 3\nline 4\nline 5\n"
    assert "line 25\n" in second.old_text and "line 25\n" not in second.new_text


def test_a_new_files_diff_has_no_old_text():
    [diff] = diff_contents(unified_diff("n.py", "", "x = 1\n", created=True), {"path": "sub/n.py"}, Path("/w"))
    assert (diff.path, diff.old_text, diff.new_text) == ("/w/sub/n.py", None, "x = 1\n")


def test_thinking_streams_as_thought_chunks_and_text_as_message_chunks():
    live = LiveUpdates(Path("/w"))
    [thought] = live.updates(MessageDelta("thinking", "hmm"))
    [said] = live.updates(MessageDelta("text", "hi"))
    assert (thought.session_update, thought.content.text) == ("agent_thought_chunk", "hmm")
    assert (said.session_update, said.content.text) == ("agent_message_chunk", "hi")


def test_a_tool_call_goes_pending_in_progress_once_then_completed():
    live = LiveUpdates(Path("/w"))
    events = [ToolStart("t1", "bash", {"command": "ls"}), PermissionDecision("t1", "bash", "allow", "user"),
              ToolOutput("t1", "a"), ToolOutput("t1", "b"), ToolEnd("t1", "bash", "a\nb", False, 0.1)]
    updates = [u for event in events for u in live.updates(event)]
    assert [u.status for u in updates] == ["pending", "in_progress", "completed"]
    assert updates[0].kind == "execute" and updates[0].title == "bash ls"
    assert updates[-1].content[0].content.text == "a\nb"


def test_stop_reasons_map_to_acps():
    assert [stop_reason(r) for r in ("end_turn", "max_tokens", "refusal", "max_turns", "interrupted", "stopped")] == [
        "end_turn", "max_tokens", "refusal", "max_turn_requests", "cancelled", "cancelled"]
    assert (tool_kind("grep"), tool_kind("mcp__docs__search")) == ("search", "other")


def test_a_prompt_attaches_a_linked_project_file_as_a_mention_and_embeds_resources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    blocks = [TextContentBlock(type="text", text="look at"),
              ResourceContentBlock(type="resource_link", uri=f"file://{tmp_path / 'a.py'}", name="a.py"),
              EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(uri="file:///x/b.md", text="B"))]
    words, notes = prompt_text(blocks, tmp_path)
    assert words == "look at\n\n@a.py\n\nfile:///x/b.md:\n```\nB\n```" and notes == []


def test_a_percent_encoded_file_link_is_a_mention_too(tmp_path):
    (tmp_path / "my notes.md").write_text("x")
    (tmp_path / "b.md").write_text("y")
    link = [ResourceContentBlock(type="resource_link", uri=f"file://{tmp_path}/b%2Emd", name="b"),
            ResourceContentBlock(type="resource_link", uri=f"file://{tmp_path}/my%20notes.md", name="n")]
    words, _ = prompt_text(link, tmp_path)
    assert words == f"@b.md\n\nfile://{tmp_path}/my%20notes.md"  # a mention cannot hold a space: the URI stays


def test_the_editors_mcp_servers_become_server_configs_and_sse_is_left_out_with_a_note():
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

    from scout_tui.frontends.acp_inputs import server_configs

    servers = [McpServerStdio(name="my docs", command="docs-server", args=["--x"], env=[EnvVariable(name="T", value="v")]),
               HttpMcpServer(type="http", name="web", url="http://127.0.0.1:1/mcp",
                             headers=[HttpHeader(name="Authorization", value="Bearer z")]),
               SseMcpServer(type="sse", name="old", url="http://127.0.0.1:2/sse", headers=[])]
    configs, notes = server_configs(servers)
    assert [(c.name, c.transport, c.trusted) for c in configs] == [("my_docs", "stdio", True), ("web", "http", True)]
    assert configs[0].env == {"T": "v"} and configs[1].headers == {"Authorization": "Bearer z"}
    assert len(notes) == 1 and "old" in notes[0] and "sse" in notes[0]


def test_a_session_list_names_a_fork_without_a_prompt_of_its_own_as_the_sessions_pane_does() -> None:
    from scout_tui.frontends.acp_updates import listed
    from scout_tui.store.queries import SessionInfo as StoredSession

    fork = StoredSession(id="b", parent="a", fork_at=2, cwd="/repo", title="calc div fix", created=0, updated=0,
                         message_count=2, input_tokens=0, output_tokens=0, title_inherited=True)
    assert listed(fork).title == "fork of calc div fix"
    assert listed(StoredSession(**{**fork.__dict__, "title_inherited": False})).title == "calc div fix"
    assert listed(StoredSession(**{**fork.__dict__, "title": None, "parent": None})).title is None
