"""Scripts written without spaces: their runs read as pairs of neighbouring characters."""

from __future__ import annotations

import pytest

from mdrag.text import unspaced


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("如何创建存档", ["如何", "何创", "创建", "建存", "存档"]),  # Chinese
        ("ファイルの圧縮", ["ファ", "ァイ", "イル", "ルの", "の圧", "圧縮"]),  # Japanese
        ("サーバー", ["サー", "ーバ", "バー"]),  # ー belongs to no script, and is in the word
        ("파일을 삭제", ["파일", "일을", "삭제"]),  # Korean: each spaced word's pairs
        ("ไฟล์นี้", ["ไฟ", "ฟล์", "ล์นี้"]),  # Thai: a sign stays on its consonant
        ("tar命令的用法", ["tar", "命令", "令的", "的用", "用法"]),  # beside other text
        ("档", ["档"]),  # a lone character stays as it is
        ("how do I restore pg_restore", ["how", "do", "I", "restore", "pg_restore"]),  # unchanged
        ("☕️ 世界️", ["☕️", "世界", "️"]),  # an emoji's variation selector is no part of a word
    ],
)
def test_a_run_is_read_as_its_pairs_of_neighbouring_characters(text, words):
    assert unspaced.spaced(text).split() == words


def test_other_text_is_left_exactly_as_it_was():
    text = "Get-ChildItem -Recurse | naïve İstanbul हिन्दी x² ①\n  tabs\tand spaces "
    assert unspaced.spaced(text) == text
    assert not unspaced.holds(text) and unspaced.holds("tar 命令")
