#!/usr/bin/env bash
# The accelerator report (runners/tools/accelerator_report.py) on a GPU machine of the device
# tool, with the kit of ../shared/gpu/README.md (TensorFlow 2.21 for an image with CUDA 13,
# Python 3.12 and PyTorch but no TensorFlow). One command at most 10 minutes; at most 8 files of
# 16 MiB come back from $OUT, no more than 2 folders down.
#
# 1. Here, on the development machine, from the project root (downloads about 620 MB):
#      bash ../shared/gpu/make_kit.sh
#    It writes .gpu-kit/ (ignored by git): tf.part.0 ... tf.part.N (60 MiB each), small.tar.gz
#    (Keras, TensorBoard, CUDA 12's runtime and ptxas, transformers==4.30.2 for the peer) and bin/.
# 2. Through the device tool, one call per part (a call carries at most 64 MiB, the working tree
#    and .gpu-kit/bin included: a 60 MiB part, bin's 1.6 MB and the tree's 3 MB are over it), so
#    cut the first part smaller and carry bin only with it (the stream's checksum is unchanged):
#      cd .gpu-kit && cat tf.part.* > /tmp/s && rm tf.part.* && head -c 58720256 /tmp/s > tf.part.0 \
#        && tail -c +58720257 /tmp/s | split -b 62914560 -d -a 1 --numeric-suffixes=1 - tf.part.
#    then, back to back (the machine goes back after 30 s idle, and the staged parts with it):
#      run(command="bash .gpu-kit/bin/stage.sh", carry=[".gpu-kit/bin", ".gpu-kit/tf.part.0"])
#      run(command="mkdir -p /tmp/gpu-kit && cp .gpu-kit/tf.part.* /tmp/gpu-kit/",
#          carry=[".gpu-kit/tf.part.1"])   ... the same with .gpu-kit/tf.part.2, ..., N
# 3. The last call carries the small part and runs this script (timeout_s=600):
#      run(command="bash runners/tools/gpu_report.sh", carry=[".gpu-kit/bin", ".gpu-kit/small.tar.gz"],
#          timeout_s=600)
#    It stages small.tar.gz, assembles TensorFlow (once per machine), puts the Hugging Face peer
#    on the path (TXL_GPU_HF=1) and runs the report with a budget of 480 s (or the seconds given
#    as its one argument, e.g. `bash runners/tools/gpu_report.sh 360` when less device time is
#    left; `timeout` allows 80 s more); the report is
#    rewritten after each of its parts, and `timeout` ends it before the call's 10 minutes, so
#    what it finished comes back either way: $OUT/report/report.md, report.json,
#    profiles.tar.gz and $OUT/report.log (4 files). Read the card's name in report.md.
# Figures from this kit may depend on it (CUDA 12 library names pointed at CUDA 13's
# libraries, not a user's install): say so next to any figure taken from it.
set -o pipefail
BUDGET=${1:-480}
case $BUDGET in ''|*[!0-9]*) echo "gpu_report.sh: the budget must be whole seconds, e.g. 360" >&2; exit 2;; esac
export TXL_GPU_HF=1
. .gpu-kit/bin/activate.sh || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout $((BUDGET + 80)) python3 runners/tools/accelerator_report.py --out_dir="$OUT/report" \
    --budget_seconds="$BUDGET" 2>&1 | tee "$OUT/report.log"
