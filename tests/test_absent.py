"""What a missing piece means on each platform (tests/absent.py): GitHub's macOS and Windows
jobs run under CI=true, where a skip must stay a skip for the Linux-only pieces, while on Linux
the same absence fails the run."""

from __future__ import annotations

import sys

import pytest

from tests.absent import corpora_absent, linux_piece_absent, postgres_off_linux


def test_postgres_skips_off_linux_even_if_installed_unless_told_which(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WEAVER_PG_BIN", raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(pytest.skip.Exception, match="this is darwin: set WEAVER_PG_BIN"):
        postgres_off_linux()
    monkeypatch.setenv("WEAVER_PG_BIN", "/opt/homebrew/opt/postgresql@16/bin")
    postgres_off_linux()
    monkeypatch.delenv("WEAVER_PG_BIN")
    monkeypatch.setattr(sys, "platform", "linux")
    postgres_off_linux()


def test_a_linux_piece_skips_elsewhere_but_fails_on_linux_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(pytest.skip.Exception, match=r"Linux-only piece .*this is win32"):
        linux_piece_absent("no chromium")
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true: no chromium"):
        linux_piece_absent("no chromium")


def test_the_corpora_skip_under_ci_only_where_declared_optional(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("WEAVER_CORPORA_OPTIONAL", "true")
    with pytest.raises(pytest.skip.Exception, match="no corpora"):
        corpora_absent("no corpora")
    monkeypatch.delenv("WEAVER_CORPORA_OPTIONAL")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true"):
        corpora_absent("no corpora")
