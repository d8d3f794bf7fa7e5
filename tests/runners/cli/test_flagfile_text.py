"""Flag files as absl reads them (runners/cli/flagfiles.py): a UTF-8 BOM is refused by name, and
`~` in a nested `--flagfile=` is expanded as absl expands it, so the check reads the file absl
will read."""
import pytest
from absl import app

from runners.cli import flagfiles


def test_a_flag_file_with_a_utf8_bom_is_refused_saying_bom(tmp_path):
    path = tmp_path / "bom.flags"
    path.write_bytes(b"\xef\xbb\xbf--tgt_len=8\n")
    with pytest.raises(app.UsageError, match=r"byte order mark \(BOM\); save it as UTF-8 "
                                             r"without BOM") as caught:
        flagfiles.check_flagfiles(["prog", f"--flagfile={path}"])
    assert "\n" not in str(caught.value)


def test_a_nested_bom_file_is_named(tmp_path):
    inner = tmp_path / "inner.flags"
    inner.write_bytes(b"\xef\xbb\xbf--tgt_len=8\n")
    outer = tmp_path / "outer.flags"
    outer.write_text(f"--flagfile={inner}\n")
    with pytest.raises(app.UsageError, match=rf"--flagfile={inner} starts with a UTF-8 byte"):
        flagfiles.check_flagfiles(["prog", f"--flagfile={outer}"])


def test_a_nested_home_path_is_expanded_as_absl_does(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "inner.flags").write_text("--tgt_len=8\n")
    outer = tmp_path / "outer.flags"
    outer.write_text("--flagfile=~/inner.flags\n")
    monkeypatch.setenv("HOME", str(home))
    flagfiles.check_flagfiles(["prog", f"--flagfile={outer}", "--flagfile=~/inner.flags"])
    (home / "inner.flags").unlink()
    with pytest.raises(app.UsageError, match=rf"{home}/inner.flags does not exist \(named in "
                                             rf"{outer}"):
        flagfiles.check_flagfiles(["prog", f"--flagfile={outer}"])
