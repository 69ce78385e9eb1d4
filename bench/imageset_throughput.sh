#!/usr/bin/env bash
# Throughput of convert_imageset (raw and --encoded) and compute_mean (on
# both databases) over COUNT colour SIZE x SIZE JPEGs, median of RUNS runs.
#   bench/imageset_throughput.sh [RUNS] [COUNT] [SIZE]
# The JPEGs are generated once into $IMAGESET_BENCH_DIR (default
# /tmp/xtrain_imageset_bench) by bench/make_colour_jpegs.cpp; the LMDBs go
# there too (the raw one is COUNT * 3 * SIZE^2 bytes: ~2 GB by default).
# THREADS (default: all cores) is passed to both tools as --threads.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
COUNT="${2:-10000}"
SIZE="${3:-256}"
BIN="$(cd "${XTRAIN_BUILD_DIR:-build}/bin" && pwd)"
WORK="${IMAGESET_BENCH_DIR:-/tmp/xtrain_imageset_bench}"
IMAGES="$WORK/images_${COUNT}_${SIZE}"
THREADS="${THREADS:-0}"

if [ ! -f "$IMAGES/list.txt" ]; then
  mkdir -p "$IMAGES"
  g++ -O2 -std=c++17 bench/make_colour_jpegs.cpp -o "$WORK/make_colour_jpegs" \
    $(pkg-config --cflags --libs opencv4)
  "$WORK/make_colour_jpegs" "$IMAGES" "$COUNT" "$SIZE"
fi
echo "images: $IMAGES ($(du -sh "$IMAGES" | cut -f1)), threads: $THREADS (0 = all $(nproc) cores)"

# Runs one command; prints "<images per wall second> <CPU seconds>" (the
# machine is shared: CPU time shows our cost when other work slows the wall).
measure() {
  python3 - "$COUNT" "$@" <<'PY'
import resource, subprocess, sys, time
count, command = int(sys.argv[1]), sys.argv[2:]
start = time.monotonic()
subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{count / wall:.1f} {usage.ru_utime + usage.ru_stime:.2f}")
PY
}
# Median of "rate cpu" pairs, one per argument.
median() {
  printf '%s\n' "$@" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
print(f"{statistics.median(r[0] for r in rows):.1f} images/s (CPU {statistics.median(r[1] for r in rows):.2f} s)")'
}

raw=(); encoded=(); mean_raw=(); mean_encoded=()
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/raw_lmdb" "$WORK/encoded_lmdb"
  sync
  raw+=("$(measure "$BIN/convert_imageset" --threads="$THREADS" "$IMAGES/" "$IMAGES/list.txt" "$WORK/raw_lmdb")")
  encoded+=("$(measure "$BIN/convert_imageset" --threads="$THREADS" --encoded "$IMAGES/" "$IMAGES/list.txt" "$WORK/encoded_lmdb")")
  mean_raw+=("$(measure "$BIN/compute_mean" --threads="$THREADS" "$WORK/raw_lmdb" "$WORK/raw_mean.binaryproto")")
  mean_encoded+=("$(measure "$BIN/compute_mean" --threads="$THREADS" "$WORK/encoded_lmdb" "$WORK/encoded_mean.binaryproto")")
  echo "run $run (images/s, CPU s): convert raw ${raw[-1]}; convert --encoded ${encoded[-1]};" \
    "compute_mean raw ${mean_raw[-1]}; compute_mean encoded ${mean_encoded[-1]}"
done
echo "DB sizes: raw $(du -sh "$WORK/raw_lmdb" | cut -f1), encoded $(du -sh "$WORK/encoded_lmdb" | cut -f1)"
echo "median of $RUNS runs:"
echo "  convert_imageset            $(median "${raw[@]}")"
echo "  convert_imageset --encoded  $(median "${encoded[@]}")"
echo "  compute_mean (raw DB)       $(median "${mean_raw[@]}")"
echo "  compute_mean (encoded DB)   $(median "${mean_encoded[@]}")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
