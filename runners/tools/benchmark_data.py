"""Data pipeline speed: building records from a 100 MB byte corpus (MB/s) and reading them (tokens/s).

  python runners/tools/benchmark_data.py [--megabytes=100] [--tgt_len=512] [--per_replica_batch=22]

Wall-clock figures depend on other load on the machine; the JSON also gives process CPU seconds
and the 1-minute load average. The corpus is the built-in one (Python standard library source bytes) repeated to --megabytes,
written as a text file and prepared as ``--dataset=text --level=byte`` (so the figure includes
reading the file, the vocabulary, the token cache, the records and their checksums). Prints one
JSON line.
"""
from runners import cli

cli.quiet_start()

from runners.tools.benchmarks import data_speed  # noqa: E402  (the measurements)

if __name__ == "__main__":
    cli.run(data_speed.main)
