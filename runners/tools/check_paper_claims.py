"""Check that docs/paper-claims.md's tables of the synthetic ablation are what the code produces.

  python runners/tools/check_paper_claims.py            # reruns the documented commands (~20 min)
  python runners/tools/check_paper_claims.py --write    # ... and records the new output

The documented commands are run as the doc gives them (`runners/ablation.py --preset=synthetic`,
at the preset's seed, into a fresh --root so nothing is reused; then `runners/recl.py` on its six
models with the doc's two grids of context lengths). Their output is parsed into a record (the
ablation's JSON lines and baselines line, each RECL run's JSON line, the wall times) and the
doc's tables are compared with the tables made from it: any difference is printed as a diff and
the exit code is 1. `--write` replaces docs/paper-claims-synthetic.json and the doc's tables
with the new ones (the prose around them is for a person to re-read), each file atomically and
only once both are made: a failure leaves both as they were.

A marker of a table this tool does not make, a marker without its ```text block and a table
marked twice are refused before anything runs (exit code 1, naming the table): such a table
would be checked by nothing.

Each table of the doc follows a marker line `<!-- table: NAME -->` (NAME: ablation-synthetic,
recl-synthetic-16, recl-synthetic-32). tests/runners/tools/test_paper_claims.py checks, fast, that the
doc's tables are the ones made from the committed record; only this tool checks that the code
still produces the record.
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types
from typing import Dict, List

from txl_tf.storage.atomic_writes import write_text_atomic

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "paper-claims.md")
RECORD = os.path.join(REPO, "docs", "paper-claims-synthetic.json")
ABLATION = ["runners/ablation.py", "--preset=synthetic"]
VARIANTS = ("ours-rec-full", "ours-norec-full", "shaw-rec-full", "vaswani-rec-half",
            "vaswani-norec-half", "alrfou-norec-half")
RECL_GRIDS = {"recl-synthetic-16": "16,32,48,64,80,96,112,128,144,160",
              "recl-synthetic-32": "32,48,64,80,96,112,128,144,160"}
RECL_ARGS = ["--split=valid", "--num_tokens=2000"]
_MARKER = re.compile(r"^<!-- table: ([\w-]+) -->\n```text\n(.*?)\n```", re.M | re.S)
_ANY_MARKER = re.compile(r"<!--\s*table:\s*(\S+?)\s*-->")  # every marker, well formed or not


def parse_ablation(stdout: str) -> dict:
    """{"results": the JSON line of each variant, "baselines": the baselines line's text} of
    `runners/ablation.py`'s output."""
    results = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    results = [r for r in results if isinstance(r, dict) and "variant" in r]
    baselines = [line[len("baselines: "):] for line in stdout.splitlines()
                 if line.startswith("baselines: ")]
    if not results or len(baselines) != 1:
        raise ValueError("no ablation results (JSON lines and one baselines line) in the output")
    return {"results": results, "baselines": baselines[0]}


def parse_recl(stdout: str) -> dict:
    """The JSON of `runners/recl.py`'s `recl {...}` line."""
    lines = [line for line in stdout.splitlines() if line.startswith("recl {")]
    if len(lines) != 1:
        raise ValueError("no `recl {...}` line in the output")
    return json.loads(lines[0][len("recl "):])


def recl_table(recl: dict) -> str:
    """The table `runners/recl.py` prints, made from its JSON line."""
    from txl_tf.inference.relative_effective_context import format_recl_table  # TensorFlow-free
    models = recl["models"]
    table = {float(r): types.SimpleNamespace(
        lengths=[m["recl"][r] for m in models], censored=[m["censored"][r] for m in models])
        for r in models[0]["recl"]}
    return format_recl_table([m["model"] for m in models], table)


def tables(record: dict) -> Dict[str, str]:
    """{marker name: table text} made from a record."""
    from txl_tf.commands.ablation import format_table  # loads TensorFlow
    out = {"ablation-synthetic": format_table(record["ablation"]["results"])
           + f"\nbaselines: {record['ablation']['baselines']}"}
    out.update({name: recl_table(record["recl"][name]) for name in RECL_GRIDS})
    return out


def doc_tables(text: str) -> Dict[str, str]:
    """{marker name: the text block after the marker} of the doc."""
    return {name: block for name, block in _MARKER.findall(text)}


def doc_problems(text: str) -> List[str]:
    """What makes the doc's tables uncheckable, one line each: a marker naming a table this
    tool does not make, a marker not followed by a ```text block, a table marked twice."""
    known = ("ablation-synthetic", *RECL_GRIDS)
    where = os.path.relpath(DOC, REPO)
    names = _ANY_MARKER.findall(text)
    blocks = [name for name, _ in _MARKER.findall(text)]
    out = [f"{where} holds a table this tool does not make: <!-- table: {name} --> (known: "
           f"{', '.join(known)}); remove the marker or rename it."
           for name in dict.fromkeys(names) if name not in known]
    out += [f"{where}: <!-- table: {name} --> is not followed by a ```text block; put the "
            "table right below it." for name in dict.fromkeys(names)
            if name in known and name not in blocks]
    out += [f"{where} marks the table {name} {names.count(name)} times; keep one marker."
            for name in dict.fromkeys(names) if name in known and names.count(name) > 1]
    return out


def differences(expected: Dict[str, str], doc: Dict[str, str]) -> List[str]:
    """Unified diffs (doc -> expected) of every table that differs or is missing, and a line for
    each table of the doc that `expected` does not hold."""
    out = [f"doc: a table that is not made here: {name}" for name in doc if name not in expected]
    for name, table in expected.items():
        if doc.get(name) != table:
            out.extend(difflib.unified_diff((doc.get(name) or "").splitlines(),
                                            table.splitlines(), f"doc: {name}",
                                            f"code: {name}", lineterm=""))
    return out


def _run(args: List[str]) -> tuple:
    """(stdout, wall seconds) of `python args` in the repository; raises on failure."""
    start = time.time()
    proc = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO))
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, round(time.time() - start, 1)


def rerun(root: str) -> dict:
    """The record of a fresh run of the documented commands into `root`."""
    stdout, seconds = _run([*ABLATION, f"--root={root}"])
    record = {"command": " ".join(["python", *ABLATION]), "ablation": parse_ablation(stdout),
              "ablation_wall_seconds": seconds, "recl": {}, "recl_wall_seconds": {}}
    dirs = ",".join(os.path.join(root, name) for name in VARIANTS)
    for name, grid in RECL_GRIDS.items():
        stdout, seconds = _run(["runners/recl.py", f"--model_dirs={dirs}",
                                f"--context_lengths={grid}", *RECL_ARGS])
        record["recl"][name] = parse_recl(stdout)
        record["recl_wall_seconds"][name] = seconds
    return record


def write(record: dict, doc_text: str, doc: str = DOC, record_path: str = RECORD) -> None:
    """The record into `record_path` and its tables into `doc`, both made before either file is
    written, each written atomically.

    Raises:
      ValueError: the doc's markers are not checkable (`doc_problems`; nothing is written).
    """
    problems = doc_problems(doc_text)
    if problems:
        raise ValueError(f"{'; '.join(problems)} Nothing was written.")
    made = tables(record)

    def replace(match):
        return f"<!-- table: {match.group(1)} -->\n```text\n{made[match.group(1)]}\n```"
    new_doc = _MARKER.sub(replace, doc_text)
    write_text_atomic(record_path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    write_text_atomic(doc, new_doc)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="record the fresh run and write its tables into the doc")
    args = parser.parse_args(argv)
    with open(DOC) as f:
        doc_text = f.read()
    problems = doc_problems(doc_text)
    if problems:
        print("error: " + " ".join(problems), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="paper-claims-") as root:
        record = rerun(root)
    diffs = differences(tables(record), doc_tables(doc_text))
    print("\n".join(diffs) if diffs else "docs/paper-claims.md: every table is what the code "
          "produces.")
    print(f"ablation {record['ablation_wall_seconds']:.0f} s, recl "
          f"{sum(record['recl_wall_seconds'].values()):.0f} s")
    if args.write:
        write(record, doc_text)
        print(f"wrote {RECORD} and the doc's tables; re-read the prose around them.")
    return 1 if diffs and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
