"""`worldloom --version` prints the installed version; --record without --headless is refused in
plain English, and --help says it needs --headless."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from game.cli import main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"worldloom {version('worldloom')}"


def test_record_without_headless_says_it_needs_headless(mini_path: object,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", str(mini_path), "--record", "x.mp4"]) == 2
    assert "--record works with --headless only (add --headless, or drop it" in capsys.readouterr().err
    assert main(["play", str(mini_path), "--record", "x.mp4", "--inputs", "p.txt"]) == 2
    assert "--inputs, --record work with --headless only (add --headless, or drop them" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "to this .mp4 (needs --headless)" in help_text
