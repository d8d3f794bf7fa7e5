#!/bin/sh
# The Python interpreter of every py_binary and py_test (bazel/BUILD's py_runtime): the first of
#   1. the active virtualenv, "$VIRTUAL_ENV/bin/python" (.bazelrc passes VIRTUAL_ENV to tests);
#   2. the virtualenv ".venv" at the repository root (the README's set-up, and .ci/run's);
#   3. "python3" on PATH.
# The virtualenv holds requirements.txt (TensorFlow, Keras, absl-py, pytest).
set -u
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  exec "$VIRTUAL_ENV/bin/python" "$@"
fi
# This script is reached through runfiles symlinks; its real path is <repository>/bazel/python3.sh.
root="$(dirname "$(dirname "$(readlink -f "$0")")")"
if [ -x "$root/.venv/bin/python" ]; then
  exec "$root/.venv/bin/python" "$@"
fi
exec python3 "$@"
