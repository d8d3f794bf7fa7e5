"""Run a multi-worker txl-tf job on this machine: one `runners/train.py` process per worker.

    python runners/tools/launch_local_cluster.py --num_workers=2 -- --model_dir=runs/mw [train flags]

starts `num_workers` processes of `runners/train.py --strategy=multi_worker_mirrored [flags]`,
each with a `TF_CONFIG` that names every worker at 127.0.0.1:<free port> and its own task index,
prefixes their output with `[worker i]`, and waits. As a cluster scheduler would, it stops the
whole job (SIGKILL to every other worker) as soon as one worker fails, and exits with the first
non-zero return code; rerunning the same command then resumes from the last checkpoint.

It is the way to try `--strategy=multi_worker_mirrored` without a cluster, and what the
multi-worker tests use (`start_workers`, `wait_workers`, `kill_workers`). On real machines, set
`TF_CONFIG` on each host yourself (README, section "Scale out").
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(REPO, "runners", "train.py")


def free_ports(n: int) -> List[int]:
    """`n` distinct TCP ports that are free on 127.0.0.1 right now."""
    sockets, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def tf_configs(num_workers: int, ports: Optional[Sequence[int]] = None) -> List[str]:
    """The TF_CONFIG JSON of each worker of a local cluster (worker 0 is the chief)."""
    ports = list(ports or free_ports(num_workers))
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
            for i in range(num_workers)]


def start_workers(train_flags: Sequence[str], num_workers: int = 2, cwd: Optional[str] = None,
                  env: Optional[dict] = None, log_dir: Optional[str] = None,
                  command: Optional[Sequence[str]] = None,
                  pipe_output: bool = False) -> List[subprocess.Popen]:
    """Start the workers; returns their processes (worker i at index i).

    Args:
      train_flags: flags of runners/train.py (`--strategy=multi_worker_mirrored` is added).
      num_workers: cluster size.
      cwd, env: working directory and base environment of the workers.
      log_dir: if given, worker i's stdout and stderr go to `log_dir/worker-<i>.log`.
      command: the program to run instead of `python runners/train.py` (e.g. a test script).
      pipe_output: stdout and stderr of each worker as one text pipe (`Popen.stdout`);
        otherwise (and without log_dir) they are inherited.
    """
    base_env = dict(os.environ if env is None else env)
    base_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    base_env["PYTHONPATH"] = REPO + (os.pathsep + base_env["PYTHONPATH"]
                                     if base_env.get("PYTHONPATH") else "")
    program = list(command or [sys.executable, TRAIN])
    args = list(train_flags)
    if command is None and not any(a.startswith("--strategy=") for a in args):
        args.append("--strategy=multi_worker_mirrored")
    processes = []
    try:
        for i, config in enumerate(tf_configs(num_workers)):
            processes.append(_start_worker(program + args, cwd, dict(base_env, TF_CONFIG=config),
                                           log_dir and os.path.join(log_dir, f"worker-{i}.log"),
                                           pipe_output))
    except BaseException:
        kill_workers(processes)
        raise
    return processes


def _start_worker(argv, cwd, env, log_path, pipe_output) -> subprocess.Popen:
    if pipe_output:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
    if not log_path:
        return subprocess.Popen(argv, cwd=cwd, env=env)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "ab") as out:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def kill_workers(processes: Sequence[subprocess.Popen]) -> None:
    """SIGKILL every process that is still running and reap it."""
    for p in processes:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def wait_workers(processes: Sequence[subprocess.Popen], timeout: Optional[float] = None) -> int:
    """Wait for every worker; if one fails (or `timeout` seconds pass), kill the others.

    Returns 0 when all succeeded, else the first non-zero return code (-9 for a kill, 124 for a
    timeout).
    """
    deadline = None if timeout is None else time.time() + timeout
    try:
        while True:
            codes = [p.poll() for p in processes]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                return failed[0]
            if all(c == 0 for c in codes):
                return 0
            if deadline is not None and time.time() > deadline:
                return 124
            time.sleep(0.1)
    finally:
        kill_workers(processes)


def _parse(argv: Sequence[str]):
    """(num_workers, train.py flags), or an exit code for --help and bad flags."""
    num_workers, args = 2, list(argv)
    if "--" in args:
        own, train_flags = args[:args.index("--")], args[args.index("--") + 1:]
    else:
        own = [a for a in args if a.startswith("--num_workers")]
        train_flags = [a for a in args if not a.startswith("--num_workers")]
    for a in own:
        if a.startswith("--num_workers="):
            num_workers = int(a.split("=", 1)[1])
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            print(f"launch_local_cluster: unknown flag {a!r} (its own flag is --num_workers=N; "
                  "the flags of train.py follow --)", file=sys.stderr)
            return 2
    if num_workers < 1:
        print("launch_local_cluster: --num_workers must be >= 1", file=sys.stderr)
        return 2
    return num_workers, train_flags


def _prefix_output(processes) -> List[threading.Thread]:
    """Copies each worker's output to stdout, each line prefixed with `[worker i] `."""
    def pump(stream, prefix):
        for line in stream:
            sys.stdout.write(prefix + line)
            sys.stdout.flush()

    threads = [threading.Thread(target=pump, args=(p.stdout, f"[worker {i}] "), daemon=True)
               for i, p in enumerate(processes)]
    for t in threads:
        t.start()
    return threads


def _main(argv: Sequence[str]) -> int:
    parsed = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    num_workers, train_flags = parsed
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    processes, threads = [], []
    try:
        processes = start_workers(train_flags, num_workers, env=env, pipe_output=True)
        threads = _prefix_output(processes)
        code = wait_workers(processes)
    except KeyboardInterrupt:
        kill_workers(processes)
        code = 130
    for t in threads:
        t.join(timeout=5)
    if code:
        print(f"launch_local_cluster: a worker exited with {code}; every worker was stopped. "
              "Run the same command again to resume from the last checkpoint.", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
