"""Ranking on the corpora: the note named for a query comes in the first five (recall@5 of the
set in `tests.benchmarks.ranking`), and CJK text is found wherever it stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import chinese
from tests.benchmarks.ranking import RECALL_TARGET, measure_recall
from tests.corpora import require_corpora
from tests.helpers import write_files
from weaver.cache import fts
from weaver.cache.read import read_snapshot
from weaver.config import Settings
from weaver.runtime.app import open_app

pytestmark = pytest.mark.both_backends


def test_notes_named_for_the_query_rank_in_the_top_five(tmp_path: Path, db_url: str | None) -> None:
    result = measure_recall(tmp_path, require_corpora(), db_url)
    assert result.recall >= RECALL_TARGET, result.misses


CJK_NOTES = {
    "plugins.md": "# 插件\n社区插件可以扩展功能。\n",
    "running.md": "这个插件很好用，安装插件以后重启。\n",  # no space around the word
    "mixed.md": "Obsidian的插件system和标签功能。\n",
    "tags.md": "---\ntitle: 标签\n---\n使用标签整理笔记。\n",
    "kana.md": "プラグインをインストールする。\n",
    "none.md": "插 and 件 apart are not the word.\n",
}


def cjk_search(tmp_path: Path, query: str, db_url: str | None) -> list[tuple[str, str]]:
    root = write_files(tmp_path / "vault", CJK_NOTES)
    app = open_app(Settings(vault=root, database_url=db_url))
    try:
        app.indexer.reconcile()
        expression = fts.fts_query(query)
        assert expression is not None
        with read_snapshot(app.db) as conn:
            return [(h.path, h.snippet) for h in fts.search(conn, expression, 20, 0).hits]
    finally:
        app.close()


def test_chinese_words_are_found_wherever_they_stand(tmp_path: Path, db_url: str | None) -> None:
    hits = dict(cjk_search(tmp_path, "插件", db_url))
    assert set(hits) == {"plugins.md", "running.md", "mixed.md"}
    assert "<mark>插件</mark>很好用，安装<mark>插件</mark>" in hits["running.md"]
    if db_url is None:  # FTS5 picks its best window; PostgreSQL starts at the first hit
        assert (
            hits["running.md"] == "这个<mark>插件</mark>很好用，安装<mark>插件</mark>以后重启。\n"
        )
    assert "<mark>插件</mark>system" in hits["mixed.md"]


def test_a_cjk_title_ranks_first_and_kana_is_found(tmp_path: Path, db_url: str | None) -> None:
    assert [path for path, _ in cjk_search(tmp_path, "标签", db_url)] == ["tags.md", "mixed.md"]
    assert [path for path, _ in cjk_search(tmp_path / "k", "インストール", db_url)] == ["kana.md"]
    assert [path for path, _ in cjk_search(tmp_path / "p", "插件 system", db_url)] == ["mixed.md"]


QUESTION_NOTES = {
    "sync.md": "# 同步\n如何在手机上同步笔记：打开设置，登录同步服务。\n",
    "phone.md": "我的手机很旧了。\n",
    "bread.md": "我的菜谱：如何做面包。\n",
    "weather.md": "今天天气很好。\n",
}


def test_a_question_without_spaces_is_split_into_words_and_ranked(
    tmp_path: Path, db_url: str | None
) -> None:
    """如何同步我的手机 ("how do I sync my phone"): no note holds the whole run; the note
    holding most of its words (如何, 同步, 手机) comes first, one holding none is not found."""
    root = write_files(tmp_path / "vault", QUESTION_NOTES)
    app = open_app(Settings(vault=root, database_url=db_url))
    try:
        app.indexer.reconcile()
        expression = fts.fts_query("如何同步我的手机")
        assert expression is not None
        with read_snapshot(app.db) as conn:
            page = fts.search(conn, expression, 20, 0)
    finally:
        app.close()
    paths = [hit.path for hit in page.hits]
    assert paths[0] == "sync.md"
    assert set(paths) == {"sync.md", "phone.md", "bread.md"} and page.total == 3
    assert "<mark>同步</mark>" in page.hits[0].snippet


def test_matches_are_counted_as_a_search_counts_them(tmp_path: Path, db_url: str | None) -> None:
    """What hybrid search says `total` is when its keyword list holds more than it read."""
    files = {
        f"{folder}/{n}.md": f"# Day {n}\nThe heron came back.\n"
        for n in range(7)
        for folder in ("a", "b")
    }
    root = write_files(tmp_path / "vault", files)
    app = open_app(Settings(vault=root, database_url=db_url))
    try:
        app.indexer.reconcile()
        expression = fts.fts_query("heron")
        assert expression is not None
        with read_snapshot(app.db) as conn:
            assert fts.count_matches(conn, expression) == 14
            assert fts.count_matches(conn, expression, directory="a") == 7
            assert fts.count_matches(conn, expression, directory="a", tag="none") == 0
    finally:
        app.close()


# Questions of the bench's Chinese set that share a few words with their note but not its
# wording, each answered among notes that hold some of its words too (手机 is in four notes).
SHARING_WORDS = ("手机同步.md", "密码管理.md", "洗衣机有异味.md", "信用卡还款.md")


def test_chinese_paraphrases_rank_their_note_first_by_the_words_they_share(
    tmp_path: Path, db_url: str | None
) -> None:
    """As one phrase a question finds nothing; split into its words, its note comes first,
    ahead of the other notes that hold some of them."""
    questions = {p.path: p.query for p in chinese.write_vault(tmp_path / "vault")}
    app = open_app(Settings(vault=tmp_path / "vault", database_url=db_url))
    try:
        app.indexer.reconcile()
        with read_snapshot(app.db) as conn:
            for path in SHARING_WORDS:
                as_phrase = fts.fts_query(f'"{questions[path]}"')
                as_words = fts.fts_query(questions[path])
                assert as_phrase is not None and as_words is not None
                assert fts.search(conn, as_phrase, 20, 0).total == 0, path
                page = fts.search(conn, as_words, 20, 0)
                assert [h.path for h in page.hits][:1] == [path] and page.total >= 2, path
    finally:
        app.close()
