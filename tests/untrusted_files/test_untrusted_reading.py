"""untrusted_files.reading and .schema: the one opener of files from elsewhere, its bounds, and
JSON of any shape against a schema (hypothesis: random values, one clear line or the value)."""
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from untrusted_files import UntrustedFileError, reading, schema

FAST = settings(max_examples=60, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def tree(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret.json").write_text('{"level": "word"}')
    return inside, outside


def test_a_link_inside_is_read_and_a_link_out_is_refused(tree):
    inside, outside = tree
    (inside / "real.json").write_text('{"a": 1}')
    (inside / "alias.json").symlink_to(inside / "real.json")
    (inside / "out.json").symlink_to(outside / "secret.json")
    assert reading.read_json(inside / "alias.json", inside=inside) == {"a": 1}
    with pytest.raises(UntrustedFileError, match="leads outside"):
        reading.read_json(inside / "out.json", inside=inside)
    # a user's own path (inside=None) follows links
    assert reading.read_json(inside / "out.json") == {"level": "word"}


@pytest.mark.parametrize("make, words", [
    (lambda p: os.mkfifo(p), "named pipe"),
    (lambda p: p.mkdir(), "a directory"),
])
def test_not_a_regular_file_is_refused_without_blocking(tree, make, words):
    inside, _ = tree
    make(inside / "f.json")
    start = time.monotonic()
    with pytest.raises(UntrustedFileError, match=words):
        reading.read_json(inside / "f.json", inside=inside)
    assert time.monotonic() - start < 5


def test_a_huge_sparse_file_is_refused_before_reading(tree):
    inside, _ = tree
    path = inside / "vocab.txt"
    with open(path, "wb") as f:
        f.truncate(8 * 2**30)
    start = time.monotonic()
    with pytest.raises(UntrustedFileError, match="larger than the 256 MiB"):
        reading.read_text(path, inside=inside, max_bytes=reading.MAX_VOCAB_BYTES)
    assert time.monotonic() - start < 2  # fstat, not a read of 8 GB


def test_the_bound_is_exact(tree):
    inside, _ = tree
    path = inside / "x.txt"
    path.write_bytes(b"a" * 100)
    assert reading.read_text(path, inside=inside, max_bytes=100) == "a" * 100
    with pytest.raises(UntrustedFileError, match=r"larger than the 100 bytes such a file may be \(101 bytes\)"):
        path.write_bytes(b"a" * 101)
        reading.read_text(path, inside=inside, max_bytes=100)


def test_deep_nesting_is_one_line_not_a_recursion_error(tree):
    inside, _ = tree
    path = inside / "record_info-valid.json"
    depth = 100_000
    path.write_text("[" * depth + "]" * depth)
    with pytest.raises(UntrustedFileError, match="more than 32 deep") as error:
        reading.read_json(path, inside=inside)
    assert "\n" not in str(error.value)
    # brackets inside strings do not count
    path.write_text(json.dumps({"s": "[" * 1000}))
    assert reading.read_json(path, inside=inside) == {"s": "[" * 1000}


def test_invalid_utf8_and_a_byte_order_mark_are_named(tree):
    inside, _ = tree
    path = inside / "c.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(UntrustedFileError, match=r"not UTF-8 text \(byte 0xff at offset 7\)"):
        reading.read_json(path, inside=inside)
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    with pytest.raises(UntrustedFileError, match="byte order mark"):
        reading.read_json(path, inside=inside)


def test_copy_file_refuses_a_link_out_and_writes_nothing(tree):
    inside, outside = tree
    (inside / "vocab.txt").symlink_to(outside / "secret.json")
    target = inside / "copy.tmp"
    with pytest.raises(UntrustedFileError, match="leads outside"):
        reading.copy_file(inside / "vocab.txt", target, inside=inside, max_bytes=100)
    assert not target.exists()


# -- JSON of random shapes against a schema ----------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
INFO_KEYS = st.sampled_from(sorted(schema.CORPUS_INFO_FIELDS))


@FAST
@given(value=st.dictionaries(INFO_KEYS, JSON, max_size=6))
def test_corpus_info_of_any_shape_is_accepted_only_when_it_fits(value):
    """Every corpus-info.json of random fields is either accepted, each declared field then
    of its declared type, or refused in one line naming a field."""
    text = json.dumps(value)
    try:
        parsed = reading.parse_json(text, "corpus-info.json")
        schema.check(parsed, schema.MODEL_INFO_SCHEMA, "corpus-info.json")
    except UntrustedFileError as error:
        message = str(error)
        assert "\n" not in message and message.startswith("corpus-info.json")
        return
    assert "level" in parsed and parsed["level"] in ("byte", "char", "word")
    if "vocab_size" in parsed:
        assert type(parsed["vocab_size"]) is int and 1 <= parsed["vocab_size"] < 2**31
    for key in ("specials", "option_flags"):
        assert all(isinstance(s, str) for s in parsed.get(key, []))


@FAST
@given(value=JSON, depth=st.integers(0, 60))
def test_any_json_nesting_is_parsed_or_refused_by_depth(value, depth):
    text = "[" * depth + json.dumps(value) + "]" * depth
    try:
        parsed = reading.parse_json(text, "x.json")
    except UntrustedFileError as error:
        assert "deep" in str(error)
        assert reading.nesting_depth(text) > reading.MAX_JSON_DEPTH
        return
    assert reading.nesting_depth(text) <= reading.MAX_JSON_DEPTH
    for _ in range(depth):
        parsed = parsed[0]
    assert parsed == value


@FAST
@given(value=st.integers() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=4))
def test_int_ranges_refuse_bools_and_values_outside(value):
    spec = schema.Int(1, 10)
    ok = spec.problem(value, "n") is None
    assert ok == (type(value) is int and 1 <= value <= 10)
