"""The one progress bar of tf_records: units and rate, in place on a terminal, lines in a log."""
import io

from tf_records.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_whole_lines_and_the_final_state():
    log = io.StringIO()
    bar = Progress("download x.zip", total=3_000_000, stream=log)
    for done in (1_000_000, 2_000_000, 3_000_000):
        bar.update(done)
    bar.close()
    lines = log.getvalue().split("\n")
    assert "\r" not in log.getvalue() and lines[-1] == ""
    assert len(lines) == 2  # the finished state once; intermediate ones within 10 s are skipped
    assert lines[0].startswith("download x.zip  3.0/3.0 MB  [" + "#" * 30 + "]  ")
    assert lines[0].endswith(" MB/s")


def test_a_terminal_is_redrawn_in_place_and_an_unknown_total_shows_the_count():
    tty = Terminal()
    bar = Progress("records train", unit="k records", scale=1e3, stream=tty)
    bar.update(1500)
    bar.close()
    text = tty.getvalue()
    assert text.startswith("\rrecords train  1.5 k records  ") and text.endswith(" k records/s\n")
    assert text.count("\r") == 1


def test_disabled_draws_nothing():
    out = Terminal()
    bar = Progress("x", total=10, stream=out, enabled=False)
    bar.update(10)
    bar.close()
    assert out.getvalue() == ""
