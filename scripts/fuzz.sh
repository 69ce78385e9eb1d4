#!/usr/bin/env bash
# Fuzzes every parser a user's file reaches (fuzz/*_fuzzer.cpp) with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target (default: all) for
#                                           SECONDS (default 60) of its time
#
# Builds build-fuzz/ (or $XTRAIN_FUZZ_BUILD_DIR) first: clang, CPU only, the
# whole library instrumented. Targets run one after another, one process at a
# time; two fuzz.sh may run at once on one build folder (on two cores), and
# take turns at building it. The corpus grows in build-fuzz/corpus/<target>
# from run to run (seeded from fuzz/seeds/, models/, tests/fixtures/ and fuzz/seed_writer);
# a finding's input is kept in build-fuzz/findings/<target>/.
#
# Per target it prints the CPU seconds the run used (user + system, measured
# by /usr/bin/time, not wall time), the inputs executed, whether there was a
# finding, and the CPU-hours the target has run since its last finding (the
# runs are added up in build-fuzz/fuzz-cpu.tsv). Exits 1 if any target had a
# finding (a crash, a sanitizer report, an exception other than
# xtrain::Error, an internal error, a leak, a timeout or running out of
# memory).
#
# XTRAIN_FUZZ_SEED fixes libFuzzer's random seed (scripts/test.sh sets 1, so
# that CI on the same tree mutates the same way and a CI finding can be
# replayed); unset, each run explores differently.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-60}"
shift || true
[[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] ||
  { echo "fuzz.sh: SECONDS must be a whole number, got '$SECONDS_PER_TARGET'" >&2; exit 2; }
# Absolute: the targets work in a scratch directory of their own.
BUILD_DIR="$(realpath -m "${XTRAIN_FUZZ_BUILD_DIR:-build-fuzz}")"
SOURCE_DIR="$PWD"
JOBS="${XTRAIN_JOBS:-$(nproc)}"

for tool in clang clang++ /usr/bin/time; do
  command -v "$tool" >/dev/null || {
    echo "fuzz.sh: '$tool' is missing; scripts/install_deps.sh installs it (clang, libclang-rt-14-dev, libomp-14-dev, time)" >&2
    exit 2
  }
done

# --- build ------------------------------------------------------------------
# Two fuzz.sh at once on one build folder (a target each, to use two cores)
# take turns at building and writing the seeds: run together, one removed
# the seed folder while the other wrote into it.
mkdir -p "$BUILD_DIR"
exec 9>"$BUILD_DIR/setup.lock"
flock 9
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DXTRAIN_BUILD_FUZZERS=ON -DXTRAIN_USE_CUDA=OFF -DXTRAIN_BUILD_TESTS=OFF \
    -DXTRAIN_BUILD_TOOLS=OFF >/dev/null
fi
if ! cmake --build "$BUILD_DIR" -j "$JOBS" >"$BUILD_DIR/build.log" 2>&1; then
  tail -n 40 "$BUILD_DIR/build.log" >&2
  echo "fuzz.sh: the fuzzing build failed (all of it: $BUILD_DIR/build.log)" >&2
  exit 2
fi

ALL_TARGETS=()
for source in fuzz/*_fuzzer.cpp; do
  name="$(basename "$source" .cpp)"
  ALL_TARGETS+=("${name%_fuzzer}")
done
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

# --- seeds ------------------------------------------------------------------
SEEDS="$BUILD_DIR/seeds"
# (Again whenever seed_writer was rebuilt: it may write new seeds.)
if [ ! -f "$SEEDS/.complete" ] || [ "$BUILD_DIR/bin/seed_writer" -nt "$SEEDS/.complete" ]; then
  rm -rf "$SEEDS"
  mkdir -p "$SEEDS"/{net_prototxt,solver_prototxt,training_log}
  "$BUILD_DIR/bin/seed_writer" "$SEEDS"
  # The model zoo's solvers, its small nets and the test fixtures. (The
  # ImageNet nets would cost seconds an input, filling tens of millions of
  # weights; GoogLeNet and ResNet-50 are also over max_len.)
  for file in models/*/*solver*.prototxt tests/fixtures/*/*solver*.prototxt; do
    cp "$file" "$SEEDS/solver_prototxt/$(echo "$file" | tr / _)"
  done
  for file in models/{lenet,cifar10_quick,cifar10_full,fashion_mnist_autoencoder,squeezenet}/*.prototxt \
    tests/fixtures/*/*.prototxt; do
    case "$file" in
      *solver*) ;;
      *) cp "$file" "$SEEDS/net_prototxt/$(echo "$file" | tr / _)" ;;
    esac
  done
  cp tests/fixtures/caffe_lenet_train.log "$SEEDS/training_log/"
  fuzz/make_dictionaries.sh "$BUILD_DIR" >/dev/null
  touch "$SEEDS/.complete"
fi
flock -u 9

# The longest input each target makes (the seeds fit), and its dictionary.
max_len() {
  case "$1" in
    net_prototxt) echo 16384 ;;
    solverstate | hdf5_snapshot | hdf5_data | training_log) echo 32768 ;;
    idx | mean_file) echo 2048 ;;
    lmdb) echo 65536 ;;
    *) echo 8192 ;;
  esac
}
dictionary() {
  case "$1" in
    net_prototxt | solver_prototxt) echo "-dict=$BUILD_DIR/prototxt.dict" ;;
    training_log) echo "-dict=$SOURCE_DIR/fuzz/training_log.dict" ;;
    metrics_jsonl) echo "-dict=$SOURCE_DIR/fuzz/metrics_jsonl.dict" ;;
  esac
}

# Allocations over 256 MiB fail (malloc returns null) instead of succeeding:
# a blob that big ends in the library's "out of host memory" error, as on a
# machine short of memory, rather than in libFuzzer's out-of-memory report;
# the seeds need far less. A `new` that big still is a finding.
export ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=256:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$SOURCE_DIR/fuzz/lsan_suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# Our OpenMP loops on one thread: one fuzzing process uses one core.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

# libFuzzer's memory limit runs a thread that watches the RSS. The HDF5
# targets read in a forked child (core/hdf5_crash_isolation.hpp), and a fork
# while that thread holds ASan's allocator lock leaves the child waiting on it
# for ever (seen in CI's run of 2026-12-07): those targets run without the
# thread, so with one thread at the fork.
rss_limit() {
  case "$1" in
    hdf5_data | hdf5_snapshot) echo "-rss_limit_mb=0" ;;
    *) echo "-rss_limit_mb=3072" ;;
  esac
}

LEDGER="$BUILD_DIR/fuzz-cpu.tsv"
[ -f "$LEDGER" ] || printf 'date\ttarget\tcpu_seconds\texecutions\tfinding\n' >"$LEDGER"
findings=0
printf '%-16s %9s %12s %9s  %s\n' target cpu_s executions clean_cpu_h result
for target in "${TARGETS[@]}"; do
  binary="$BUILD_DIR/bin/${target}_fuzzer"
  [ -x "$binary" ] || { echo "fuzz.sh: no target '$target' (have: ${ALL_TARGETS[*]})" >&2; exit 2; }
  corpus="$BUILD_DIR/corpus/$target"
  artifacts="$BUILD_DIR/findings/$target"
  logs="$BUILD_DIR/logs"
  mkdir -p "$corpus" "$artifacts" "$logs" "$SEEDS/$target"
  log="$logs/$target.log"
  seed_dirs=("$SEEDS/$target")
  [ -d "fuzz/seeds/$target" ] && seed_dirs+=("$SOURCE_DIR/fuzz/seeds/$target")
  status=0
  # shellcheck disable=SC2046  # dictionary: one word or none
  /usr/bin/time -f '%U %S' -o "$logs/$target.time" \
    "$binary" -max_total_time="$SECONDS_PER_TARGET" -max_len="$(max_len "$target")" \
    -timeout=30 "$(rss_limit "$target")" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    ${XTRAIN_FUZZ_SEED:+-seed="$XTRAIN_FUZZ_SEED"} $(dictionary "$target") "$corpus" "${seed_dirs[@]}" >"$log" 2>&1 || status=$?
  cpu="$(awk 'END { printf "%.1f", $1 + $2 }' "$logs/$target.time")"
  executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  executions="${executions:-0}"
  saved="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
  # libFuzzer's -timeout counts wall time: at nice 19 beside busy builds a
  # run can get a few CPU-seconds in 1000 s, and an input needing a fraction
  # of a second passes 30 s of wall time. A timeout (exit 70) is a finding
  # only if the input, run again alone, also needs more than 30 s of CPU
  # time (ulimit -t); otherwise it is set aside as starved-*. A replay that
  # waits without using CPU (a deadlock) is ended after 120 s of wall time,
  # a finding.
  if [ "$status" -eq 70 ] && [ -f "$saved" ]; then
    replay=0
    (ulimit -t 30 && timeout -k 5 120 /usr/bin/time -f '%U %S' -o "$logs/$target.replay.time" \
      "$binary" -timeout=0 "$(rss_limit "$target")" -runs=1 "$saved") \
      >"$logs/$target.replay.log" 2>&1 || replay=$?
    if [ "$replay" -eq 0 ]; then
      replay_cpu="$(awk 'END { printf "%.1f", $1 + $2 }' "$logs/$target.replay.time")"
      mv "$saved" "$artifacts/starved-$(basename "$saved")"
      echo "fuzz.sh: $target: a wall-clock timeout under load; the input alone ran in" \
        "$replay_cpu CPU-seconds: not a finding (kept as $artifacts/starved-$(basename "$saved"))" >&2
      status=0
    fi
  fi
  # The HDF5 targets read each file first in a child process, whose crash the
  # library turns into an error and the run survives: a crash inside HDF5
  # or a library it calls (not instrumented) is expected there, but a
  # sanitizer report from our code (linked into the target) is a finding all
  # the same (the hdf5_data children once ran out of memory allocating what
  # a damaged header claimed, and the run ended with exit 0). Which is which
  # goes by the first frame past the sanitizer's interceptors
  # (fuzz_child_reports.awk): HDF5 overflowing inside memcpy is HDF5's.
  ours="$(awk -f "$SOURCE_DIR/scripts/fuzz_child_reports.awk" "$log" | grep '^ours ' | head -1 || true)"
  if [ "$status" -eq 0 ] && [ -n "$ours" ]; then
    status=1
    saved="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | head -1)"
    echo "fuzz.sh: $target: a child process reported, from our code: ${ours#ours }" >&2
  fi
  if [ "$status" -eq 0 ]; then
    result="no finding"
  else
    findings=$((findings + 1))
    result="FINDING (exit $status): ${saved:-see $log}; log: $log"
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$cpu" "$executions" \
    "$([ "$status" -eq 0 ] && echo no || echo yes)" >>"$LEDGER"
  # CPU-hours since the target's last finding (all of them if it never had one).
  total="$(awk -F'\t' -v t="$target" '$2 == t { s = ($5 == "yes") ? 0 : s + $3 }
    END { printf "%.2f", s / 3600 }' "$LEDGER")"
  printf '%-16s %9s %12s %9s  %s\n' "$target" "$cpu" "$executions" "$total" "$result"
done
if [ "$findings" -gt 0 ]; then
  echo "fuzz.sh: $findings target(s) had a finding; reproduce with $BUILD_DIR/bin/<target>_fuzzer <file>" >&2
  exit 1
fi
