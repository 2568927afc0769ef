"""Layered config: each layer overrides the one before; errors name the file, line, key or variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.config.layers import Config, data_dir, load_config, user_config_dir
from scout_tui.core.errors import ScoutError


def write_user(text: str) -> Path:
    path = user_config_dir() / "scout.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_set(tmp_home: Path, workdir: Path) -> None:
    config = load_config()
    assert (config.provider, config.model, config.base_url, config.api_key) == ("anthropic", None, None, None)
    assert (config.max_tokens, config.max_turns, config.timeout, config.theme) == (8192, 50, 600.0, "scout-dark")
    assert config.sources == {} and config.extra == {}


def test_user_config_dir_honours_xdg_and_data_dir_honours_scout_home(tmp_home: Path) -> None:
    assert user_config_dir() == tmp_home / ".config" / "scout"
    assert data_dir() == tmp_home / ".scout-data"


def test_each_layer_overrides_the_one_before(tmp_home: Path, workdir: Path) -> None:
    user = write_user('model = "user-model"\nmax_turns = 7\ntheme = "user-theme"\nmax_tokens = 100\ntimeout = 5\n')
    project = workdir / "scout.toml"
    project.write_text('model = "project-model"\nmax_turns = 8\ntheme = "project-theme"\n')
    env = {"SCOUT_MAX_TURNS": "9", "SCOUT_THEME": "env-theme"}
    config = load_config(workdir, flags={"theme": "flag-theme", "model": None}, env=env)

    assert config.max_tokens == 100 and config.timeout == 5.0  # user file only
    assert isinstance(config.timeout, float)
    assert config.model == "project-model"  # project beats user; a None flag is ignored
    assert config.max_turns == 9  # env beats project
    assert config.theme == "flag-theme"  # flag beats env
    assert config.sources == {
        "model": str(project),
        "max_turns": "env SCOUT_MAX_TURNS",
        "theme": "flag --theme",
        "max_tokens": str(user),
        "timeout": str(user),
    }


def test_env_values_are_coerced(tmp_home: Path, workdir: Path) -> None:
    env = {"SCOUT_MAX_TOKENS": "2048", "SCOUT_TIMEOUT": "2.5", "SCOUT_PROVIDER": "openai", "SCOUT_BASE_URL": "http://x"}
    config = load_config(workdir, env=env)
    assert (config.max_tokens, config.timeout, config.provider, config.base_url) == (2048, 2.5, "openai", "http://x")


def test_unknown_tables_are_kept_in_extra_and_merged_key_by_key(tmp_home: Path, workdir: Path) -> None:
    write_user('[compaction]\nstrategy = "shorten_tools"\nkeep = 3\n')
    (workdir / "scout.toml").write_text("[compaction]\nkeep = 5\n")
    config = load_config(workdir, env={})
    assert config.section("compaction") == {"strategy": "shorten_tools", "keep": 5}
    assert config.section("absent") == {}


@pytest.mark.parametrize(
    ("provider", "expected"), [("anthropic", "ant-key"), ("openai", "oai-key"), ("ollama", None)]
)
def test_api_key_falls_back_to_the_providers_variable(tmp_home: Path, workdir: Path, provider: str, expected: str | None) -> None:
    env = {"ANTHROPIC_API_KEY": "ant-key", "OPENAI_API_KEY": "oai-key"}
    config = load_config(workdir, flags={"provider": provider}, env=env)
    assert config.api_key == expected


def test_scout_api_key_beats_the_providers_variable(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, env={"ANTHROPIC_API_KEY": "ant-key", "SCOUT_API_KEY": "scout-key"})
    assert config.api_key == "scout-key"
    assert config.sources["api_key"] == "env SCOUT_API_KEY"


def test_malformed_toml_names_file_and_line(tmp_home: Path, workdir: Path) -> None:
    path = workdir / "scout.toml"
    path.write_text('model = "m"\nmax_turns = 3\nthis is not toml\n')
    with pytest.raises(ScoutError) as caught:
        load_config(workdir, env={})
    assert str(caught.value).startswith(f"{path}:3:")
    assert "invalid TOML" in str(caught.value)


def test_wrong_type_in_a_file_names_file_line_and_key(tmp_home: Path, workdir: Path) -> None:
    path = write_user('model = "m"\n\nmax_tokens = "lots"\n')
    with pytest.raises(ScoutError, match="max_tokens") as caught:
        load_config(workdir, env={})
    assert str(caught.value).startswith(f"{path}:3:")


def test_a_key_under_a_multi_line_string_is_named_on_its_own_line(tmp_home: Path, workdir: Path) -> None:
    # The string's text looks like the key (line 3) and like a [sandbox] table (line 2): neither is one.
    path = write_user('compaction_model = """\n[sandbox]\nmax_tokens = 5\n"""\nmax_tokens = "lots"\n')
    with pytest.raises(ScoutError, match="max_tokens") as caught:
        load_config(workdir, env={})
    assert str(caught.value).startswith(f"{path}:5:")
    write_user("compaction_model = \'\'\'\n[sandbox]\nnetwork = 1\n\'\'\'\n[sandbox]\nnetwork = \"no\"\n")
    with pytest.raises(ScoutError, match=r"scout\.toml:6: sandbox\.network must be true or false"):
        load_config(workdir, env={})


def test_bad_env_int_names_the_variable(tmp_home: Path, workdir: Path) -> None:
    with pytest.raises(ScoutError, match="SCOUT_MAX_TURNS must be a positive integer, got 'many'"):
        load_config(workdir, env={"SCOUT_MAX_TURNS": "many"})


def test_repr_and_errors_hide_the_api_key(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, env={"ANTHROPIC_API_KEY": "sk-secret-123"})
    assert config.api_key == "sk-secret-123"
    assert "sk-secret-123" not in repr(config)
    assert "sk-secret-123" not in repr(config.sources)
    (workdir / "scout.toml").write_text("api_key = 12345\n")
    with pytest.raises(ScoutError) as caught:
        load_config(workdir, env={})
    assert "12345" not in str(caught.value) and "api_key" in str(caught.value)


def test_config_repr_is_a_dataclass_repr_without_the_key() -> None:
    assert "api_key" not in repr(Config(api_key="k"))


def test_context_window_comes_from_env_or_file_else_the_model_id(tmp_home, workdir, monkeypatch):
    from scout_tui.session.runtime import context_window

    assert context_window(load_config(workdir)) == 200_000  # claude-* by default
    assert context_window(load_config(workdir, flags={"provider": "openai", "model": "gpt-4o-mini"})) == 128_000
    (workdir / "scout.toml").write_text("context_window = 30000\n")
    assert context_window(load_config(workdir)) == 30_000
    monkeypatch.setenv("SCOUT_CONTEXT_WINDOW", "16000")
    assert context_window(load_config(workdir)) == 16_000


@pytest.mark.parametrize("written, stored", [("0.5", "0.5"), ('"off"', "off"), ("false", "off"), ("1", "1.0")])
def test_auto_compact_takes_a_share_or_off(tmp_home, workdir, written, stored):
    (workdir / "scout.toml").write_text(f"auto_compact = {written}\n")
    assert load_config(workdir).auto_compact == stored


@pytest.mark.parametrize("written", ["0", "2", '"85%"', "true", "-0.5"])
def test_a_bad_auto_compact_names_the_file_and_line(tmp_home, workdir, written):
    (workdir / "scout.toml").write_text(f'model = "x"\nauto_compact = {written}\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:2: auto_compact must be a number above 0 and at most 1"):
        load_config(workdir)


def test_cache_ttl_and_prompt_cache_key_take_only_their_choices(tmp_home, workdir):
    (workdir / "scout.toml").write_text('cache_ttl = "2h"\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:1: cache_ttl must be one of 5m, 1h"):
        load_config(workdir)
    (workdir / "scout.toml").unlink()
    with pytest.raises(ScoutError, match="SCOUT_PROMPT_CACHE_KEY must be one of auto, on, off"):
        load_config(workdir, env={"SCOUT_PROMPT_CACHE_KEY": "yes"})


# -- names a config file may use: unknown ones are reported, misspelt safety ones stop start-up ----


def test_a_misspelt_permissions_table_stops_loading_so_no_rule_is_dropped(tmp_home, workdir):
    path = workdir / "scout.toml"
    path.write_text('[permission]\ndeny = ["bash:rm *"]\n')
    with pytest.raises(ScoutError) as caught:
        load_config(workdir, env={})
    assert str(caught.value).startswith(f"{path}:1: unknown table [permission]; did you mean 'permissions'?")


@pytest.mark.parametrize(
    ("text", "line", "name", "meant"),
    [
        ('[Permissions]\nallow = ["bash:ls *"]\n', 1, "table [Permissions]", "permissions"),
        ('model = "m"\n\n[sandbx]\nnetwork = false\n', 3, "table [sandbx]", "sandbox"),
        ('model = "m"\npermision_mode = "ask"\n', 2, "key 'permision_mode'", "permission_mode"),
    ],
)
def test_a_misspelt_safety_name_in_the_user_file_stops_loading(tmp_home, workdir, text, line, name, meant):
    path = write_user(text)
    with pytest.raises(ScoutError, match="misspelt safety setting") as caught:
        load_config(workdir, env={})
    assert str(caught.value).startswith(f"{path}:{line}: unknown {name}; did you mean '{meant}'?")


def test_an_unknown_top_level_key_is_a_note_with_file_line_and_suggestion(tmp_home, workdir):
    user = write_user('max_turns = 3\nmax_turn = 5\n')
    (workdir / "scout.toml").write_text('theme = "x"\ntimout = 5\nzzz = 1\n')
    config = load_config(workdir, env={})
    assert config.max_turns == 3
    assert config.notes == [
        f"{user}:2: unknown key 'max_turn' is ignored; did you mean 'max_turns'?",
        f"{workdir / 'scout.toml'}:2: unknown key 'timout' is ignored; did you mean 'timeout'?",
        f"{workdir / 'scout.toml'}:3: unknown key 'zzz' is ignored.",
    ]


def test_an_unknown_table_is_a_note_not_an_error(tmp_home, workdir):
    (workdir / "scout.toml").write_text('model = "m"\n[proxies.local]\nurl = "http://localhost:8080/v1"\n')
    config = load_config(workdir, env={})
    assert config.notes == [f"{workdir / 'scout.toml'}:2: unknown table [proxies] is ignored; did you mean 'providers'?"]


def test_an_unknown_compaction_key_is_a_note_with_its_line(tmp_home, workdir):
    (workdir / "scout.toml").write_text('[compaction]\nepoch_size = 5\nepoch_sise = 6\nbogus = 1\n')
    notes = load_config(workdir, env={}).notes
    assert notes[0] == (f"{workdir / 'scout.toml'}:3: unknown key 'epoch_sise' in [compaction] is ignored unless a "
                        "plugin strategy reads it; did you mean 'epoch_size'?")
    assert notes[1].startswith(f"{workdir / 'scout.toml'}:4: unknown key 'bogus' in [compaction]")
    assert "(known: strategy, " in notes[1]


def test_known_tables_and_plugin_tables_give_no_notes(tmp_home, workdir):
    (workdir / "scout.toml").write_text(
        '[compaction]\nstrategy = "none"\n[permissions]\nallow = []\n[models."m"]\ninput = 1\n'
        '[plugins.notify]\nanything = true\n[sandbox]\nmode = "read-only"\nwritable = ["~/.cache"]\nnetwork = false\n')
    config = load_config(workdir, env={})
    assert config.notes == []
    assert config.section("sandbox") == {"mode": "read-only", "writable": ["~/.cache"], "network": False}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sandbox]\nmod = "off"\n', r"scout\.toml:2: unknown key 'mod' in \[sandbox\]; did you mean 'mode'\?"),
        ('[sandbox]\nnetwrk = false\n', r"scout\.toml:2: unknown key 'netwrk' in \[sandbox\]; did you mean 'network'\?"),
        ('[sandbox]\nmode = "strict"\n', r"scout\.toml:2: sandbox\.mode must be one of workspace-write, read-only, off"),
        ('[sandbox]\nwritable = "/tmp"\n', r"scout\.toml:2: sandbox\.writable must be a list of paths"),
        ('[sandbox]\nwritable = [\n  3,\n]\n', r"scout\.toml:2: sandbox\.writable must be a list of paths"),
        ('[sandbox]\nnetwork = "no"\n', r"scout\.toml:2: sandbox\.network must be true or false, got 'no'"),
        ('sandbox = "off"\n', r"scout\.toml:1: sandbox must be a table"),
        # A safety setting out of its table used to drop its deny rules with a warning.
        ('[perms]\ndeny = ["bash:rm *"]\n', r"scout.toml:1: unknown table \[perms\]; did you mean 'permissions'\? "
                                             "scout-tui stops here"),
        ('deny = ["bash:rm *"]\n', r"scout.toml:1: unknown key 'deny'; did you mean 'permissions'\?"),
        ('[rules]\ndeny = ["bash:rm *"]\n', r"unknown table \[rules\]; did you mean 'permissions'\?"),
        ('[box]\nnetwork = false\n', r"unknown table \[box\]; did you mean 'sandbox'\?"),
    ],
)
def test_a_bad_or_misplaced_safety_setting_stops_loading_with_file_and_line(tmp_home, workdir, text, message):
    (workdir / "scout.toml").write_text(text)
    with pytest.raises(ScoutError, match=message):
        load_config(workdir, env={})


# -- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "+inf", "-inf"])
def test_a_non_finite_number_names_the_file_and_line(tmp_home, workdir, value):
    (workdir / "scout.toml").write_text(f'model = "m"\ntimeout = {value}\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:2: timeout must be a positive number"):
        load_config(workdir, env={})


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e999"])
def test_a_non_finite_env_number_names_the_variable(tmp_home, workdir, value):
    with pytest.raises(ScoutError, match="SCOUT_TIMEOUT must be a positive number"):
        load_config(workdir, env={"SCOUT_TIMEOUT": value})


@pytest.mark.parametrize("text", ["max_turns = 0", "max_tokens = -1", "context_window = 0", "timeout = -0.5",
                                  "context_window = 1e6"])
def test_an_out_of_range_number_names_the_file_and_line(tmp_home, workdir, text):
    (workdir / "scout.toml").write_text(f'model = "m"\n{text}\n')
    with pytest.raises(ScoutError, match=rf"scout\.toml:2: {text.split()[0]} must be a positive"):
        load_config(workdir, env={})


# -- values checked once the run is wired: the strategy, [models."ID"] ------------------------------


def test_an_unknown_strategy_names_the_file_and_line(tmp_home, workdir):
    from scout_tui.session.runtime import compaction_settings

    (workdir / "scout.toml").write_text('model = "m"\n\n[compaction]\nstrategy = "shorten_tool"\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:4: \[compaction\]: unknown prompt strategy 'shorten_tool' "
                                         r"\(known: none, .*\); did you mean 'shorten_tools'\?"):
        compaction_settings(load_config(workdir, env={}), env={})
    with pytest.raises(ScoutError, match="^SCOUT_STRATEGY: unknown prompt strategy 'bogus'"):
        compaction_settings(load_config(workdir, env={}), env={"SCOUT_STRATEGY": "none,bogus"})


def test_an_unknown_models_key_suggests_the_known_one(tmp_home, workdir):
    from scout_tui.config.models import check_models_tables

    (workdir / "scout.toml").write_text('[models."m"]\ncontext_windw = 1000\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:2: unknown key 'context_windw' in \[models\.\"m\"\]; "
                                         r"did you mean 'context_window'\?"):
        check_models_tables(load_config(workdir, env={}))


# -- the front ends: the notes shown at start, the provider's file and line ----------------------


def test_an_unknown_provider_names_the_file_and_line(tmp_home, workdir):
    import asyncio
    import io

    from scout_tui.frontends.headless import run_headless

    (workdir / "scout.toml").write_text('model = "m"\nprovider = "nope"\n')
    config = load_config(workdir, env={})
    with pytest.raises(ScoutError, match=r"scout\.toml:2: unknown provider 'nope'"):
        asyncio.run(run_headless(config, workdir, "hi", stdout=io.StringIO(), stderr=io.StringIO()))
    assert load_config(workdir, env={"SCOUT_PROVIDER": "nope"}).where("provider") == "env SCOUT_PROVIDER"


async def test_the_app_shows_the_config_notes_and_where_the_provider_is_set(tmp_home, workdir):
    from scout_tui.tui.app import ScoutApp
    from scout_tui.widgets.chat_messages import Notice
    from tests.app_helpers import settle

    (workdir / "scout.toml").write_text('max_turn = 5\nprovider = "nope"\n')
    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test"}, env={}), cwd=workdir)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        assert any("unknown key 'max_turn' is ignored; did you mean 'max_turns'?" in n.message
                   for n in app._notifications)
        assert f"{workdir / 'scout.toml'}:2: unknown provider 'nope'" in " ".join(n.text for n in app.query(Notice))


def test_headless_prints_the_config_notes_on_stderr(tmp_home, workdir):
    import asyncio
    import io

    from scout_tui.frontends.headless import run_headless

    (workdir / "scout.toml").write_text('max_turn = 5\nprovider = "nope"\n')
    err = io.StringIO()
    with pytest.raises(ScoutError, match="unknown provider"):
        asyncio.run(run_headless(load_config(workdir, env={}), workdir, "hi", stdout=io.StringIO(), stderr=err))
    assert f"scout-tui: {workdir / 'scout.toml'}:1: unknown key 'max_turn' is ignored" in err.getvalue()


def test_a_deny_rule_naming_a_near_miss_of_a_tool_stops_start_up(tmp_home, workdir):
    from scout_tui.tools.permission_config import policy_from_config

    (workdir / "scout.toml").write_text('[permissions]\ndeny = ["bsh:rm *"]\n')
    with pytest.raises(ScoutError, match=r"scout.toml:2: the deny rule 'bsh:rm \*' names no tool; did you mean 'bash'\?"):
        policy_from_config(load_config(workdir, env={}), workdir)
    (workdir / "scout.toml").write_text('[permissions]\ndeny = ["jira_delete"]\nallow = ["bsh:ls"]\n')
    policy = policy_from_config(load_config(workdir, env={}), workdir)  # a plugin's tool; an allow typo only asks
    assert [r.text for r in policy.deny] == ["jira_delete"]
