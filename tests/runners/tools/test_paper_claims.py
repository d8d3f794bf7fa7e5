"""docs/paper-claims.md's tables of the synthetic ablation are the ones made from the recorded
run next to it (docs/paper-claims-synthetic.json), by the code that prints them
(`txl_tf.commands.ablation.format_table`,
`txl_tf.inference.relative_effective_context.format_recl_table`).

What this covers: a hand edit of a table, or of the record, that makes the two disagree; and
the tool's parsers reading the runners' output format. What it does not: whether the code still
produces the recorded run (that takes ~20 minutes:
`python runners/tools/check_paper_claims.py`), nor the prose that quotes the tables."""
import json

import pytest

from runners.tools import check_paper_claims as claims


@pytest.fixture(scope="module")
def record():
    with open(claims.RECORD) as f:
        return json.load(f)


def test_every_table_of_the_doc_is_made_from_the_record(record):
    with open(claims.DOC) as f:
        doc = claims.doc_tables(f.read())
    made = claims.tables(record)
    assert set(made) <= set(doc), f"markers missing in the doc: {set(made) - set(doc)}"
    assert claims.differences(made, doc) == []
    with open(claims.DOC) as f:
        assert claims.doc_problems(f.read()) == []


def test_the_record_is_a_run_of_the_documented_command(record):
    assert record["command"] == "python runners/ablation.py --preset=synthetic"
    assert [r["variant"] for r in record["ablation"]["results"]] == list(claims.VARIANTS)
    for name, grid in claims.RECL_GRIDS.items():
        assert record["recl"][name]["context_lengths"] == [int(c) for c in grid.split(",")]
        assert [m["model"] for m in record["recl"][name]["models"]] == list(claims.VARIANTS)


def test_a_changed_number_is_found(record):
    with open(claims.DOC) as f:
        text = f.read()
    edited = text.replace("| 1.153/3.166 @256 |", "| 0.977/2.656 @256 |", 1)
    assert edited != text
    diffs = claims.differences(claims.tables(record), claims.doc_tables(edited))
    assert any(line.startswith("-ours-rec-full") and "0.977/2.656" in line for line in diffs)


def test_the_parsers_read_what_the_runners_print(record):
    """Output in the runners' format (the JSON lines, progress and table lines around them) is
    read back into the record."""
    ablation = record["ablation"]
    stdout = "\n".join(["ablation: 6 variants x 10000 steps into runs/x; ...",
                        *[json.dumps(r) for r in ablation["results"]],
                        claims.tables(record)["ablation-synthetic"],
                        "TensorBoard: tensorboard --logdir runs/x"])
    assert claims.parse_ablation(stdout) == ablation
    recl = record["recl"]["recl-synthetic-32"]
    assert claims.parse_recl("windows [===] 20000/20000\nmodel  r=0.1\nrecl "
                             + json.dumps(recl)) == recl
    with pytest.raises(ValueError):
        claims.parse_ablation("no results\n")


def _doc_with_unknown_table(text: str) -> str:
    return text + "\n<!-- table: made-by-nobody -->\n```text\nx | 1\n```\n"


# Markers the check could not check: (edit of the doc's text, what the one line names).
UNCHECKABLE = {
    "unknown, with its block": (_doc_with_unknown_table, "made-by-nobody"),
    "unknown, without a block": (lambda t: t + "\n<!-- table: made-by-nobody -->\n\n| x |\n",
                                 "made-by-nobody"),
    "unknown, spaced": (lambda t: t + "\n<!--  table:  made-by-nobody  -->\n", "made-by-nobody"),
    "known, without a block": (lambda t: t.replace("<!-- table: recl-synthetic-16 -->\n```text",
                                                   "<!-- table: recl-synthetic-16 -->\n\n```text"),
                               "recl-synthetic-16"),
    "known, twice": (lambda t: t + "\n<!-- table: ablation-synthetic -->\n```text\nx\n```\n",
                     "ablation-synthetic"),
}


@pytest.mark.parametrize("case", sorted(UNCHECKABLE))
def test_an_uncheckable_marker_is_named(case):
    edit, name = UNCHECKABLE[case]
    with open(claims.DOC) as f:
        text = f.read()
    edited = edit(text)
    assert edited != text
    problems = claims.doc_problems(edited)
    assert len(problems) == 1 and name in problems[0], problems


def test_a_table_the_tool_does_not_make_is_named(record, tmp_path, monkeypatch, capsys):
    """The check fails before it runs anything (it would otherwise pass such a doc), naming
    the table."""
    with open(claims.DOC) as f:
        text = _doc_with_unknown_table(f.read())
    doc = claims.doc_tables(text)
    assert any("made-by-nobody" in line for line in claims.differences(claims.tables(record), doc))
    path = tmp_path / "paper-claims.md"
    path.write_text(text)
    monkeypatch.setattr(claims, "DOC", str(path))
    monkeypatch.setattr(claims, "rerun", lambda root: pytest.fail("ran the commands"))
    assert claims.main(["--write"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "made-by-nobody" in err and len(err.splitlines()) == 1
    assert path.read_text() == text


@pytest.mark.parametrize("failure", ["unknown table", "table made late"])
def test_write_leaves_both_files_as_they_were_when_it_fails(record, tmp_path, monkeypatch,
                                                           failure):
    with open(claims.DOC) as f:
        text = f.read()
    doc, saved = tmp_path / "paper-claims.md", tmp_path / "record.json"
    saved.write_text("{}\n")
    if failure == "unknown table":
        text, expected = _doc_with_unknown_table(text), ValueError
    else:
        def broken(_):
            raise RuntimeError("tables failed")
        monkeypatch.setattr(claims, "tables", broken)
        expected = RuntimeError
    doc.write_text(text)
    with pytest.raises(expected):
        claims.write(record, text, doc=str(doc), record_path=str(saved))
    assert doc.read_text() == text and saved.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paper-claims.md", "record.json"]


def test_write_replaces_the_tables_and_the_record(record, tmp_path):
    with open(claims.DOC) as f:
        text = f.read()
    edited = text.replace("| 1.153/3.166 @256 |", "| 0.977/2.656 @256 |", 1)
    doc, saved = tmp_path / "paper-claims.md", tmp_path / "record.json"
    claims.write(record, edited, doc=str(doc), record_path=str(saved))
    assert doc.read_text() == text
    assert json.loads(saved.read_text()) == record
