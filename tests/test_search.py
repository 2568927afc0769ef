"""The full-text search index as the store keeps it: what is indexed and found, the query
syntax, filters, and how a store written before the index (schema 4) gets indexed.

``fixtures/store_v4.db`` was made by the schema-4 store (commit f24a7b2, the last before the
index) with ``fixtures/make_store_v4.py``: a session whose tool printed a traceback, a fork that
read quarantine.py, a compaction, a subagent's session, and a session in another directory.
"""

from __future__ import annotations

import datetime
import shutil
import sqlite3
from pathlib import Path

import pytest

from scout_tui.core.bus import Event, MessageAssistant, MessageUser
from scout_tui.core.errors import ScoutError
from scout_tui.store import projection
from scout_tui.store.event_log import SCHEMA_VERSION, Store
from scout_tui.store.search import SearchQuery
from scout_tui.store.search_query import parse_query

V4 = Path(__file__).parent / "fixtures" / "store_v4.db"
REPO = "/home/ana/projects/café-app"


def user(text: str) -> MessageUser:
    return MessageUser({"role": "user", "content": [{"type": "text", "text": text}]})


def answer(*blocks: dict) -> MessageAssistant:
    return MessageAssistant({"role": "assistant", "content": list(blocks)}, {}, "end_turn", "claude-test")


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def output(text: str, call: str = "toolu_1") -> MessageUser:
    return MessageUser({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}]})


def found(store: Store, query: str, **filters) -> list[tuple[str, int, str]]:
    return [(h.session.id, h.seq, h.role) for h in store.search(SearchQuery(query, **filters))]


@pytest.fixture
def v4_copy(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    shutil.copyfile(V4, path)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 4
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "sessions.db") as opened:
        yield opened


def test_the_migration_indexes_a_store_written_before_the_index(v4_copy):
    with Store(v4_copy) as store:
        sessions = {s.title: s for s in store.sessions(include_deleted=True)}
        root = next(s for s in sessions.values() if s.title.startswith("Why does the importer"))
        fork = sessions["Instead, read the files as bytes"]
        child = sessions["Find the callers"]
        assert store.index_backlog() == (0, 12)  # queued by the migration; a search indexes them first
        assert found(store, "UnicodeDecodeError") == [(root.id, 2, "tool_output")]
        assert found(store, "marmoset") == [(fork.id, 6, "tool_output")]
        assert found(store, "pangolin") == [(root.id, 4, "summary")]
        assert found(store, "narwhal") == [(child.id, 1, "answer")]
        assert found(store, '"python -m importer"') == [(root.id, 1, "tool_input")]
        [hit] = store.search(SearchQuery("marmoset"))
        assert hit.root_id == root.id and hit.session.parent == root.id
        assert found(store, "elsewhere", cwd=REPO) == [] and len(found(store, "elsewhere")) == 1
    assert sqlite3.connect(v4_copy).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5


def test_an_old_store_is_indexed_in_batches_and_new_messages_are_found_meanwhile(v4_copy):
    with Store(v4_copy) as store:
        assert store.index_backlog() == (0, 12)
        fork = next(s for s in store.sessions() if s.title == "Instead, read the files as bytes")
        assert store.index_some(5) == (5, 12)
        store.append(fork.id, user("now the axolotl case"))
        assert store.index_some(5) == (10, 13)
        assert store.index_some(5) == (13, 13)
        assert store.index_some(5) == (13, 13)
        assert found(store, "marmoset") == [(fork.id, 6, "tool_output")]
        assert found(store, "axolotl") == [(fork.id, 8, "prompt")]
        assert len(found(store, "pangolin")) == 1  # the summary, indexed by the migration, once
        incremental = index_rows(store.path)
        store.rebuild()
        assert store.index_backlog() == (0, 13)
        assert index_rows(store.path) != incremental
        assert found(store, "axolotl") == [(fork.id, 8, "prompt")]  # a search catches up first
        assert index_rows(store.path) == incremental


def test_a_search_finds_what_was_appended_since_the_last_one(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("the first walrus"))
    assert found(store, "walrus") == [(sid, 0, "prompt")]
    store.append(sid, answer(text("a second walrus")))
    assert sorted(found(store, "walrus")) == [(sid, 0, "prompt"), (sid, 1, "answer")]
    assert store.index_backlog() == (2, 2)


def index_rows(path: Path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute("SELECT d.session_id, d.seq, d.role, d.created, t.body FROM search_docs d"
                                 " JOIN search_text t ON t.rowid = d.id").fetchall())
    finally:
        db.close()


def test_every_kind_of_document_is_indexed_under_its_role(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("rename load_table"))
    store.append(sid, MessageAssistant({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "the ocelot module is big"},
        {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"pattern": "load_table", "path": "src/ibex"}},
    ]}, {}, "tool_use", "claude-test"))
    store.append(sid, output("src/ibex/db.py:3: def load_table(name):"))
    assert found(store, "ocelot") == [(sid, 1, "answer")]
    assert sorted(found(store, "ibex")) == [(sid, 1, "tool_input"), (sid, 2, "tool_output")]
    assert sorted(r for _, _, r in found(store, "load_table")) == ["prompt", "tool_input", "tool_output"]
    assert [r for _, _, r in found(store, "load_table role:prompt")] == ["prompt"]
    assert sorted(r for _, _, r in found(store, "load_table role:tool")) == ["tool_input", "tool_output"]
    assert [r for _, _, r in found(store, "load_table", roles=("tool_output",))] == ["tool_output"]
    assert sorted(r for _, _, r in found(store, "load_table -role:prompt")) == ["tool_input", "tool_output"]


def test_phrases_prefixes_or_and_exclusions(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("the parser drops trailing commas"))
    store.append(sid, answer(text("the lexer keeps them")))
    assert found(store, '"trailing commas"') == [(sid, 0, "prompt")]
    assert found(store, '"commas trailing"') == []
    assert found(store, "pars*") == [(sid, 0, "prompt")]
    assert found(store, "the_lex*") == [(sid, 1, "answer")]
    assert sorted(found(store, "parser OR lexer")) == [(sid, 0, "prompt"), (sid, 1, "answer")]
    assert found(store, "the -commas") == [(sid, 1, "answer")]
    assert found(store, 'the -"trailing commas"') == [(sid, 1, "answer")]
    with pytest.raises(ScoutError, match="a search needs a word to find"):
        store.search(SearchQuery("-commas"))
    assert found(store, "") == [] and found(store, "role:prompt") == []


def test_text_that_looks_like_fts_syntax_is_searched_for_not_run(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user('call NEAR(a b) with key:value and "quotes" * AND OR NOT'))
    for query in ("NEAR(a", "key:value", "AND", "NOT", '"quotes', "*", "(", "^x"):
        assert [h.seq for h in store.search(SearchQuery(query))] in ([0], []), query
    assert found(store, "key:value") == [(sid, 0, "prompt")]
    assert found(store, "NOT") == [(sid, 0, "prompt")]


def test_snippets_mark_the_matched_words(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("why does\nparse_config   fail on Windows?"))
    [hit] = store.search(SearchQuery("parse_config"))
    assert hit.snippet == (("why does ", False), ("parse_config", True), (" fail on Windows?", False))
    assert hit.snippet_text == "why does parse_config fail on Windows?"


def test_filters_by_project_date_and_deleted_sessions(store, tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    a, b = store.create_session(here), store.create_session(there)
    store.append(a, user("the wombat test"))
    store.append(b, user("the wombat docs"))
    assert found(store, "wombat", cwd=str(here.resolve())) == [(a, 0, "prompt")]
    assert len(found(store, "wombat")) == 2
    today = datetime.date.today()
    tomorrow = today + datetime.timedelta(days=1)
    assert len(found(store, f"wombat after:{today.isoformat()}")) == 2
    assert found(store, f"wombat after:{tomorrow.isoformat()}") == []
    assert found(store, f"wombat before:{today.isoformat()}") == []
    assert found(store, "wombat", since=datetime.datetime.now().timestamp() + 3600) == []
    store.delete(b)
    assert found(store, "wombat") == [(a, 0, "prompt")]
    with pytest.raises(ScoutError, match="YYYY-MM-DD"):
        store.search(SearchQuery("wombat after:yesterday"))
    with pytest.raises(ScoutError, match="'2026-11-31' is not a date"):  # the right shape, no such day
        store.search(SearchQuery("wombat after:2026-11-31"))
    with pytest.raises(ScoutError, match="unknown role 'tools'"):
        store.search(SearchQuery("wombat role:tools"))


def test_a_forks_shared_messages_are_found_once_in_the_branch_that_wrote_them(store, tmp_path):
    root = store.create_session(tmp_path)
    store.append(root, user("the gecko bug"))
    store.append(root, answer(text("fixed")))
    one, two = store.fork(root, 2), store.fork(root, 2)
    store.append(one.id, user("gecko again, other way"))
    hits = found(store, "gecko")
    assert sorted(hits) == sorted([(root, 0, "prompt"), (one.id, 2, "prompt")])
    assert two.id not in {sid for sid, _, _ in hits}


def test_odd_text_is_indexed_undamaged_or_replaced(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("bytes \udcff then lemur"))  # a tool printed bytes that were not UTF-8
    long = "start tapir " + "filler " * 10_000 + "Traceback: KeyError capybara"
    store.append(sid, output(long, "toolu_2"))
    store.append(sid, MessageUser({"role": "user", "content": [text("[Request interrupted by user]")]}))
    assert found(store, "lemur") == [(sid, 0, "tool_output")]
    assert found(store, "tapir") == found(store, "capybara") == [(sid, 1, "tool_output")]  # both ends of a long output
    assert found(store, "interrupted") == []  # a turn marker, which no one wrote


def test_a_summary_is_found_where_it_was_made(store, tmp_path):
    sid = store.create_session(tmp_path)
    for n in range(4):
        store.append(sid, user(f"step {n}") if n % 2 == 0 else answer(text("ok")))
    store.append(sid, Event.of("session.compacted", {"at": 2, "count": 4, "summary": "the okapi plan",
                                                     "model": "m", "tokens_before": 9, "tokens_after": 1}))
    assert found(store, "okapi") == [(sid, 4, "summary")]


def test_a_common_word_ranks_only_its_newest_matches(store, tmp_path, monkeypatch):
    from scout_tui.store import search

    sid = store.create_session(tmp_path)
    store.append(sid, user("heron"))  # the best bm25 of all (shortest), but the oldest
    for n in range(3):
        store.append(sid, answer(text(f"a heron and {n} more words here")) if n % 2 == 0 else user(f"heron {n} again"))
    assert found(store, "heron")[0] == (sid, 0, "prompt")
    monkeypatch.setattr(search, "RANK_WINDOW", 2)
    assert sorted(seq for _, seq, _ in found(store, "heron")) == [2, 3]


def test_a_prefix_of_fewer_than_three_letters_is_a_whole_word(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("x marks the spot, eagle"))
    assert found(store, "x*") == [(sid, 0, "prompt")]
    assert found(store, "ea*") == [] and found(store, "eag*") == [(sid, 0, "prompt")]


def test_a_prefix_counts_the_letters_of_its_last_word(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, user("parse_config and parse_c"))
    assert parse_query("parse_c*").match == '"parse_c"'  # "c" alone would merge every c-word
    assert parse_query("parse_con*").match == '"parse_con"*'
    assert found(store, "parse_con*") == [(sid, 0, "prompt")]


def test_a_flag_is_searched_for_not_left_out(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("git commit --no-verify -m wip"))
    store.append(sid, user("never skip the hooks"))
    assert found(store, "--no-verify") == [(sid, 0, "tool_output")]
    assert found(store, "hooks -verify") == [(sid, 1, "prompt")]


def test_a_negative_number_is_searched_for_not_left_out(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("make: *** [all] Error 1\nprocess exited with code -1"))
    assert found(store, "exited with code -1") == [(sid, 0, "tool_output")]
    assert found(store, "exited -make") == []


def test_and_and_not_between_words_are_operators(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("E   KeyError: 'user_id'\nTypeError: fetch_user() missing 1 required positional argument"))
    store.append(sid, answer(text("The KeyError comes first.")))
    assert sorted(found(store, "KeyError AND TypeError")) == [(sid, 0, "tool_output")]
    assert found(store, "KeyError NOT TypeError") == [(sid, 1, "answer")]
    assert found(store, "comes NOT") == [] and found(store, "NOT") == []  # a word where it is not between two


def test_a_cjk_word_is_found_at_the_start_of_a_run_of_cjk_text(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("日本語のテキストを検索する。東京都の天気は晴れです。\n"
                             "中文搜索测试：数据库连接失败"))
    store.append(sid, user("日本語で説明して"))
    assert sorted(found(store, "日本語")) == [(sid, 0, "tool_output"), (sid, 1, "prompt")]
    assert found(store, "東京都") == found(store, "数据库") == [(sid, 0, "tool_output")]
    assert found(store, '"日本語"') == []  # a phrase is the whole run
    assert found(store, "天気") == []  # in the middle of a run: not a word to FTS5's tokenizer


def test_a_deleted_sessions_messages_that_a_live_fork_shares_are_found_in_that_fork(store, tmp_path):
    root = store.create_session(tmp_path)
    store.append(root, user("why does lookup fail?"))
    store.append(root, output("E   KeyError: 'user_id'"))
    store.append(root, answer(text("the emu column is missing")))
    fork = store.fork(root, 2)
    store.append(fork.id, user("try the other table"))
    store.delete(root)
    [hit] = store.search(SearchQuery("KeyError: 'user_id'"))
    assert (hit.session.id, hit.root_id, hit.seq, hit.role) == (fork.id, root, 1, "tool_output")
    assert [m["role"] for m in store.messages(fork.id)][1] == "user"  # the fork shows it as its message 2
    assert found(store, "emu") == []  # after the fork point: only the deleted session had it
    store.delete(fork.id)
    assert found(store, "KeyError") == [] and found(store, "lookup") == []


def test_colour_codes_in_a_tools_output_do_not_hide_its_words(store, tmp_path):
    sid = store.create_session(tmp_path)
    store.append(sid, output("\x1b[31mERROR\x1b[0m: \x1b[1mtest_lookup\x1b[0m failed\x1b]0;title\x07"))
    [hit] = store.search(SearchQuery("ERROR test_lookup"))
    assert (hit.seq, hit.role) == (0, "tool_output")
    assert "\x1b" not in hit.snippet_text and "\x07" not in hit.snippet_text
    store.append(sid, output("binary \x02 bytes then panicked"))  # \x02 and \x03 mark the matches in a snippet
    [hit] = store.search(SearchQuery("panicked"))
    assert [t for t, is_match in hit.snippet if is_match] == ["panicked"]
    assert found(store, "then\x00 \x1b[1mpanicked") == [(sid, 1, "tool_output")]  # a query is read the same way


def test_a_search_while_another_process_holds_the_write_lock_searches_what_is_indexed(tmp_path, monkeypatch):
    monkeypatch.setattr(projection, "BUSY_TIMEOUT_MS", 50)
    with Store(tmp_path / "sessions.db") as store:
        sid = store.create_session(tmp_path)
        store.append(sid, user("the first walrus"))
        assert found(store, "walrus") == [(sid, 0, "prompt")]
        store.append(sid, user("a second walrus"))
        writer = sqlite3.connect(tmp_path / "sessions.db", isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # as a long write in another process
        try:
            assert found(store, "walrus") == [(sid, 0, "prompt")]
        finally:
            writer.execute("COMMIT")
            writer.close()
        assert sorted(found(store, "walrus")) == [(sid, 0, "prompt"), (sid, 1, "prompt")]
