"""`python runners/train.py --flagfile=runners/enwik8.flags` on this CPU, as a user without a TPU
runs it: the recipe's own 277M-parameter model on a stand-in enwik8 archive. Within 60 s of its
header it prints how long a step and the run would take here, and that the recipe targets a
TPU; the test reads the output as it streams and kills the run there (a signal would stop it
only after its first loop of 1,000 steps).
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(REPO, "runners", "train.py")
RECIPE = os.path.join(REPO, "runners", "enwik8.flags")
ESTIMATE_WITHIN = 60.0


def stand_in_enwik8(path):
    """A zip with a member named enwik8: XML-ish text, 420 kB (valid and test need 64 streams
    of 769 bytes each)."""
    lines = [f"<page><title>Article {i}</title> text of [[link {i % 17}]] and {{{{cite}}}} "
             f"number {i * 7919 % 1000}</page>" for i in range(5000)]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("enwik8", "\n".join(lines).encode())


def stream_lines(proc, lines: queue.Queue):
    """Puts (arrival time, line) of the process's stdout into `lines`, then None."""
    for line in proc.stdout:
        lines.put((time.monotonic(), line.rstrip("\n")))
    lines.put(None)


def test_enwik8_recipe_says_how_long_it_would_take_here(tmp_path):
    stand_in_enwik8(tmp_path / "enwik8.zip")
    proc = subprocess.Popen(
        [sys.executable, TRAIN, f"--flagfile={RECIPE}", "--raw_path=enwik8.zip",
         "--noverify_checksum", "--eval_bytes=60000", "--data_dir=data", "--model_dir=model"],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1"))
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=stream_lines, args=(proc, lines), daemon=True).start()
    seen, header_at, estimate = [], None, None
    try:
        deadline = time.monotonic() + 900  # data, records and the 277M-parameter model first
        while estimate is None:
            item = lines.get(timeout=max(deadline - time.monotonic(), 1))
            assert item is not None, "\n".join(seen[-30:])
            at, line = item
            seen.append(line)
            if line.startswith("txl-tf training:"):
                header_at = at
                deadline = min(deadline, at + ESTIMATE_WITHIN)
            elif line.startswith("duration estimate:"):
                estimate = (at, line)
    finally:  # how a run stops on a signal is not what this test checks
        proc.kill()
        proc.wait()
    assert header_at is not None, "\n".join(seen)
    assert "277,060,645 parameters" in [s for s in seen if s.startswith("txl-tf training:")][0]
    at, line = estimate
    assert at - header_at < ESTIMATE_WITHIN, (at - header_at, line)
    per_step = float(re.search(r"at least ([\d.,e+]+) s per step here", line).group(1)
                     .replace(",", ""))
    assert per_step > 1.0, line  # a step of 64 x 768 tokens of this model: seconds on a CPU
    assert re.search(r"at least [\d.]+ (days|years) for 400,000 steps", line), line
    assert line.endswith("the recipe targets a TPU with 32 cores (2 hosts x 16), "
                         "see docs/training.md"), line
