#!/bin/bash
# The byte-identity snapshot a refactor is checked against (issue 31): every file `scons board=all`
# makes of the example firmware (plans, C, linker scripts, reports, objects, ELFs; not .sconsign)
# and `arena-tool run --build-dir` of three MLPerf Tiny models (AD01 fp32, KWS fp32, VWW int8 QDQ)
# on mps2_an386 and mps2_an500, built from commit REV of this repository at one fixed path (the
# outputs name no path of the clone, but a run's --build-dir is fixed too), with a cache of its own.
#
#   bench/snapshot.sh REV OUT      # then: diff OUT_BEFORE/sha256.txt OUT_AFTER/sha256.txt
#
# .arena_manifest.json and .arena_summary.json hold the inputs' times and the package's digest:
# they differ between any two commits. Needs arm-none-eabi-gcc, qemu-system-arm, ../shared's models.
set -u
REV=${1:?usage: bench/snapshot.sh REV OUT}; OUT=${2:?usage: bench/snapshot.sh REV OUT}
REPO=$(cd "$(dirname "$0")/.." && pwd)
MODELS=${ARENA_SHARED:-$REPO/../shared}/models/mlperf_tiny
W=/tmp/arena-snapshot
rm -rf "$W" "$OUT"; mkdir -p "$W/tree" "$OUT/run"
OUT=$(cd "$OUT" && pwd)
git -C "$REPO" archive "$REV" | tar -x -C "$W/tree"
cd "$W/tree" || exit 2
export PYTHONPATH=$W/tree ARENA_CACHE_DIR=$W/cache
nice -n 10 python3 -m SCons -Q board=all -j2 > "$OUT/scons.log" 2>&1; echo "scons exit $?" >> "$OUT/scons.log"
mkdir -p "$OUT/scons" && (cd build && find . -type f ! -name '.sconsign*' -exec cp --parents {} "$OUT/scons/" \;)
for m in anomaly_detection__ad01_fp32_tflite2onnx keyword_spotting__kws_ref_model_float32_tflite2onnx \
         visual_wake_words__vww_96_float_tflite2onnx_int8; do
  for b in mps2_an386 mps2_an500; do
    d=$W/run/${m%%__*}_$b
    mkdir -p "$d"
    nice -n 10 python3 -m arena_tool run "$MODELS/$m.onnx" --board $b --build-dir "$d" --json "$d/run.json" \
      > "$d/run.log" 2>&1
    echo "run exit $?" >> "$d/run.log"
    cp -r "$d" "$OUT/run/"
  done
done
cd "$OUT" && find . -type f ! -name sha256.txt | sort | xargs sha256sum > sha256.txt
