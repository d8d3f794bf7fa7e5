"""tests/support/english_text.py, the real English text of the own-text tests: the same text on
every call, at most `max_bytes`, each distinct document once, unreadable files skipped."""
import english_text


def test_the_text_is_deterministic_capped_and_real_english():
    text = english_text.english_text(max_bytes=300_000)
    assert text == english_text.english_text(max_bytes=300_000)
    size = len(text.encode("utf-8"))
    assert 250_000 < size <= 300_000 and text.endswith("\n")
    words = text.split()
    for common in ("the", "of", "and", "to", "is"):
        assert words.count(common) > 200, common  # English prose, not code or data


def test_missing_unreadable_and_repeated_documents_are_skipped(tmp_path, monkeypatch):
    licence = "Permission is hereby granted, free of charge, to any person. " * 10
    for name in ("a", "b"):  # the same licence in two packages
        (tmp_path / name).mkdir()
        (tmp_path / name / "LICENSE").write_text(licence)
    (tmp_path / "a" / "README.md").write_text("A package that reads text files. " * 10)
    (tmp_path / "b" / "METADATA").write_bytes(b"\xff\xfe not UTF-8 " * 30)
    (tmp_path / "b" / "notes.md").symlink_to(tmp_path / "gone.md")  # a dangling link
    monkeypatch.setattr(english_text, "_package_dirs", lambda: [str(tmp_path)])
    monkeypatch.setattr(english_text, "stdlib_documents", lambda: [])
    documents = english_text.package_documents()
    assert [p for p, _ in documents] == [str(tmp_path / "a" / "LICENSE"),
                                        str(tmp_path / "a" / "README.md"),
                                        str(tmp_path / "b" / "LICENSE")]
    text = english_text.english_text()
    assert text.count("Permission is hereby granted") == 10  # the licence once
    assert "reads text files" in text and "not UTF-8" not in text
