#!/usr/bin/env bash
# Validates xtrain on a GPU machine, from an unpacked GPU bundle
# (scripts/gpu_bundle.sh; docs/cuda.md, "Validating on a borrowed GPU"):
#
#   mkdir -p /tmp/xb && tar xf xtrain-gpu-bundle.tar.xz -C /tmp/xb && /tmp/xb/scripts/gpu_check.sh
#
#   gpu_check.sh [STEP...]     the steps, in this order (default: all of them)
#     libs       find the CUDA libraries (system, /usr/local/cuda, Python's
#                nvidia-* wheels) and put them on LD_LIBRARY_PATH; always runs
#     query      nvidia-smi, xtrain device_query
#     tests      every GPU test (GPU/*) with XTRAIN_REQUIRE_GPU=1: none may skip
#                for want of a GPU (the two-GPU test skips on one GPU)
#     memcheck   compute-sanitizer --tool memcheck over GPU/CrossDevice*
#     racecheck  compute-sanitizer --tool racecheck over GPU/CrossDevice*
#     replicas   compute-sanitizer --tool memcheck over GPU/ThreadReplicaTraining.*:
#                two data-parallel replicas on GPU 0 (sums overlapping backward),
#                and the same with an out-of-memory forced mid-training (the
#                sums in flight drained, the cache released, the allocation
#                retried); the two-GPU test runs too when two GPUs are visible
#     empty      compute-sanitizer --tool memcheck over GPU/EmptyBatch*: every
#                layer with N = 0 against the CPU, and a net whose Filter
#                selects nothing
#     lenet      LeNet on the bundled Fashion-MNIST, the same solver on the GPU
#                and on the CPU: final test accuracies within 0.003
#     time       xtrain time --gpu=0 on bench/nets/*.prototxt
#     kernels    xtrain time --gpu=0 on bench/kernels/*.prototxt: Normalize at
#                SSD300's conv4_3 (32 x 512 x 38 x 38), Embed at an LSTM
#                language model's (700 words of 10,000, 650 wide); the
#                Normalize and Embed rows' forward/backward ms
#     precision  mixed precision on the GPU (docs/precision.md): LeNet in fp32,
#                fp16 and bf16 (XTRAIN_CHECK_PRECISION_ITERS, default 2,000
#                iterations each), the 16-bit accuracies within 0.01 of fp32's,
#                and xtrain time on the bench nets in each precision
#     summary    only print the summary of the steps run so far
#
# Each step writes its log under $XTRAIN_CHECK_LOGS (default <bundle>/check);
# at the end a one-screen summary (pass/fail per step, key figures, logs) is
# printed and written to <logs>/summary.txt, and, if $OUT is set, to
# $OUT/gpu_check_summary.txt with the logs in $OUT/gpu_check_logs.tar.xz.
# Results accumulate in <logs>: steps run by separate calls (a tool that
# allows 10 minutes a command) add up to one summary.
#
# Time: not measured yet (no GPU where this was written); estimated 15-20
# minutes on 16 cores + an H100 without precision. The limits below let
# `query tests`, `memcheck racecheck`, `replicas empty kernels` and
# `lenet time` each end inside 10 minutes, with a summary, when a step hangs;
# a step that hits its limit fails, saying so.
# Limits (seconds) and sizes: XTRAIN_CHECK_TESTS_TIMEOUT (540),
# XTRAIN_CHECK_SANITIZER_TIMEOUT (270 each), XTRAIN_CHECK_REPLICAS_TIMEOUT (240),
# XTRAIN_CHECK_EMPTY_TIMEOUT (180), XTRAIN_CHECK_LENET_TIMEOUT (420 for
# both runs), XTRAIN_CHECK_TIME_TIMEOUT (60 per net), XTRAIN_CHECK_LENET_ITERS
# (the solver's 10,000), XTRAIN_CHECK_TIME_ITERS (50), XTRAIN_CHECK_TEST_FILTER (GPU/*).
# Exit status: 0 when every step run passed.
set -uo pipefail

BUNDLE=$(cd "$(dirname "$0")/.." && pwd)
LOGS=${XTRAIN_CHECK_LOGS:-$BUNDLE/check}
WORK=$BUNDLE/work
ALL_STEPS="libs query tests memcheck racecheck replicas empty lenet time kernels precision"
mkdir -p "$LOGS" "$WORK"

say() { printf '[gpu_check] %s\n' "$*"; }

# record STEP PASS|FAIL|SKIP "figures" LOG
record() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >"$LOGS/$1.result"
  say "$1: $2 - $3"
}

# run_logged LOG TIMEOUT COMMAND...: the command's exit status (124: timed out).
run_logged() {
  local log=$1 limit=$2
  shift 2
  printf '$ %s\n' "$*" >>"$log"
  timeout --kill-after=30 "$limit" "$@" >>"$log" 2>&1
}

# --- libs: the CUDA libraries this machine provides -----------------------------
NEEDED_SONAMES="libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2"

wheel_dirs() {
  # Python's nvidia-* wheels (nvidia-cudnn-cu13, nvidia-nccl-cu13, nvidia-cublas, ...).
  for python in python3 /opt/*/.venv/bin/python3; do
    command -v "$python" >/dev/null 2>&1 || continue
    "$python" - 2>/dev/null <<'EOF'
import importlib.util
spec = importlib.util.find_spec("nvidia")
for path in (spec.submodule_search_locations if spec else []):
    print(path)
EOF
  done
  ls -d /opt/*/.venv/lib/python3*/site-packages/nvidia /usr/local/lib/python3*/dist-packages/nvidia \
    /usr/lib/python3/dist-packages/nvidia 2>/dev/null
}

# find_library SONAME: "system PATH" when the loader finds it by itself (its
# cache, its default folders), "extra PATH" when its folder must go on
# LD_LIBRARY_PATH; nothing when it is nowhere. Only folders of CUDA's own
# libraries go on LD_LIBRARY_PATH, which the loader searches before the
# bundle's RUNPATH: a system folder there would hide the bundle's libraries.
find_library() {
  local soname=$1 dir found
  found=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk -v n="$soname" '$1 == n && /x86-64/ { print $NF; exit }')
  [ -n "$found" ] && { echo "system $found"; return; }
  for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64; do
    [ -e "$dir/$soname" ] && { echo "system $dir/$soname"; return; }
  done
  for dir in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    /usr/local/cuda/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -e "$dir/$soname" ] && { echo "extra $dir/$soname"; return; }
  done
  for dir in $(wheel_dirs | sort -u); do
    found=$(find "$dir" -maxdepth 3 -name "$soname" 2>/dev/null | head -1)
    [ -n "$found" ] && { echo "extra $found"; return; }
  done
}

origin_of() {  # where a library comes from, in a few words
  case $1 in
    *site-packages* | *dist-packages*) echo "(pip wheel)" ;;
    *) dirname "$1" ;;
  esac
}

# cxx_abi LIBRARY: the newest GLIBCXX version a libstdc++ provides.
cxx_abi() { grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$1" 2>/dev/null | sort -uV | tail -1; }

step_libs() {
  local log=$LOGS/libs.log soname path missing="" figures="" dirs="" ours theirs system_cxx
  : >"$log"
  # The bundle carries GCC 12's C++ runtime. A newer libstdc++ here (which
  # CUDA libraries from newer wheels may need) is used instead: the newer
  # one serves both.
  system_cxx=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null |
    awk '$1 == "libstdc++.so.6" && /x86-64/ { print $NF; exit }')
  if [ -n "$system_cxx" ] && [ -f "$BUNDLE/lib/libstdc++.so.6" ]; then
    ours=$(cxx_abi "$BUNDLE/lib/libstdc++.so.6")
    theirs=$(cxx_abi "$system_cxx")
    if [ -n "$theirs" ] && [ "$(printf '%s\n%s\n' "$ours" "$theirs" | sort -V | tail -1)" != "$ours" ]; then
      mkdir -p "$BUNDLE/lib/unused"
      mv "$BUNDLE/lib/libstdc++.so.6" "$BUNDLE/lib/libgcc_s.so.1" "$BUNDLE/lib/unused/"
      echo "C++ runtime: this machine's ($system_cxx, $theirs) is newer than the bundle's ($ours): using it" >>"$log"
    fi
  fi
  for soname in $NEEDED_SONAMES; do
    read -r how path <<<"$(find_library "$soname")"
    if [ -z "$path" ]; then
      missing="$missing $soname"
      echo "$soname: not found" >>"$log"
      continue
    fi
    echo "$soname => $path ($how)" >>"$log"
    if [ "$how" = extra ]; then
      case ":$dirs:" in *":$(dirname "$path"):"*) ;; *) dirs=$dirs:$(dirname "$path") ;; esac
    fi
    case $soname in
      libcudnn.so.9 | libnccl.so.2 | libcublas.so.13) figures="$figures ${soname%%.so*} $(origin_of "$path");" ;;
    esac
  done
  [ -n "$dirs" ] && export LD_LIBRARY_PATH=${dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  {
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "$ ldd bin/xtrain_tests"
    ldd "$BUNDLE/bin/xtrain_tests" 2>&1
  } >>"$log"
  local unresolved glibc needs
  unresolved=$(ldd "$BUNDLE/bin/xtrain_tests" "$BUNDLE/bin/xtrain" 2>&1 | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
  # The bundle was built against a glibc of its own (BUNDLE.txt): an older one
  # here fails every program with "version `GLIBC_2.xx' not found".
  glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
  needs=$(sed -n 's/^needs: *glibc >= \([0-9.]*\).*/\1/p' "$BUNDLE/BUNDLE.txt" 2>/dev/null)
  echo "glibc $glibc here; the bundle needs >= $needs" >>"$log"
  if [ -n "$glibc" ] && [ -n "$needs" ] && [ "$(printf '%s\n%s\n' "$needs" "$glibc" | sort -V | head -1)" != "$needs" ]; then
    record libs FAIL "glibc $glibc here, the bundle needs >= $needs (build it on an older system)" "$log"
    return 1
  fi
  if [ -n "$missing" ] || [ -n "$unresolved" ]; then
    record libs FAIL "not found:${missing}${unresolved:+ $unresolved}" "$log"
    return 1
  fi
  record libs PASS "glibc $glibc;${figures%;}" "$log"
}

# --- query ----------------------------------------------------------------------
step_query() {
  local log=$LOGS/query.log name capability
  : >"$log"
  command -v nvidia-smi >/dev/null && run_logged "$log" 60 nvidia-smi
  if ! run_logged "$log" 120 "$BUNDLE/bin/xtrain" device_query; then
    record query FAIL "$(grep -m1 'error' "$log" | cut -c1-120)" "$log"
    return 1
  fi
  name=$(sed -n 's/^Name: *//p' "$log" | head -1)
  capability=$(sed -n 's/^Compute capability: *//p' "$log" | head -1)
  record query PASS "$name, compute capability $capability" "$log"
}

# --- tests ----------------------------------------------------------------------
# gtest_figures LOG: "N passed, N failed, N skipped" and what failed or crashed.
gtest_figures() {
  local log=$1 passed failed skipped names last
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  if [ -z "$passed$failed" ]; then
    last=$(sed -n 's/^\[ RUN      \] //p' "$log" | tail -1)
    echo "ended early (crash or timeout) in ${last:-start-up}"
    return
  fi
  # The list at the end: "[  FAILED  ] GPU/Suite.Name[, where GetParam() = ...]".
  names=$(sed -n 's/^\[  FAILED  \] \([A-Za-z][^ ,]*\)\(, where .*\)\{0,1\}$/\1/p' "$log" | head -3 | tr '\n' ' ')
  echo "${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped${names:+ (first failed: ${names% })}"
}

gpu_tests() {  # gpu_tests LOG TIMEOUT [WRAPPER...] -- FILTER
  local log=$1 limit=$2
  shift 2
  local wrapper=()
  while [ "$1" != -- ]; do wrapper+=("$1"); shift; done
  shift
  (cd "$WORK" && run_logged "$log" "$limit" env XTRAIN_REQUIRE_GPU=1 XTRAIN_SOURCE_DIR="$BUNDLE/source" \
    XTRAIN_TOOLS_DIR="$BUNDLE/bin" XTRAIN_FASHION_MNIST_DIR="$BUNDLE/data/fashion-mnist" \
    OMP_WAIT_POLICY=passive "${wrapper[@]}" "$BUNDLE/bin/xtrain_tests" --gtest_filter="$1" \
    --gtest_output="xml:$log.xml")
}

step_tests() {
  local log=$LOGS/tests.log status
  : >"$log"
  gpu_tests "$log" "${XTRAIN_CHECK_TESTS_TIMEOUT:-540}" -- "${XTRAIN_CHECK_TEST_FILTER:-GPU/*}"
  status=$?
  record tests "$([ $status -eq 0 ] && echo PASS || echo FAIL)" \
    "$(gtest_figures "$log")$([ $status -eq 124 ] && echo ', timed out')" "$log"
  return $status
}

# --- compute-sanitizer over the cross-device layer tests -----------------------------
sanitizer() {
  command -v compute-sanitizer 2>/dev/null && return
  local candidate
  for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -x "$candidate" ] && { echo "$candidate"; return; }
  done
}

step_sanitizer() {  # step_sanitizer STEP memcheck|racecheck FILTER LIMIT
  local step=$1 tool=$2 filter=$3 limit=$4 log=$LOGS/$1.log san status errors
  : >"$log"
  san=$(sanitizer)
  if [ -z "$san" ]; then
    record "$step" FAIL "compute-sanitizer not found" "$log"
    return 1
  fi
  gpu_tests "$log" "$limit" "$san" --tool "$tool" --error-exitcode 99 \
    --print-limit 50 -- "$filter"
  status=$?
  errors=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
  record "$step" "$([ $status -eq 0 ] && echo PASS || echo FAIL)" \
    "${errors:-no sanitizer summary}; $(gtest_figures "$log")$([ $status -eq 124 ] && echo ', timed out')" "$log"
  return $status
}

# --- LeNet on the GPU and on the CPU ----------------------------------------------
last_accuracy() { grep -o 'accuracy = [0-9.e+-]*' "$1" | tail -1 | cut -d' ' -f3; }

step_lenet() {
  local log=$LOGS/lenet.log data=$WORK/data/fashion_mnist device run start status=0
  local flags=()
  local deadline=$((SECONDS + ${XTRAIN_CHECK_LENET_TIMEOUT:-420}))
  : >"$log"
  rm -rf "$data" && mkdir -p "$data"
  for split in train t10k; do
    run_logged "$log" 120 "$BUNDLE/bin/convert_mnist_data" "$BUNDLE/data/fashion-mnist/$split-images-idx3-ubyte.gz" \
      "$BUNDLE/data/fashion-mnist/$split-labels-idx1-ubyte.gz" \
      "$data/$([ $split = train ] && echo train || echo test)_lmdb" || status=1
  done
  declare -A accuracy took
  for device in gpu cpu; do
    run=$WORK/lenet-$device
    rm -rf "$run" && mkdir -p "$run/snapshots"
    ln -s "$BUNDLE/source/models" "$run/models"
    ln -s "$WORK/data" "$run/data"
    flags=(${XTRAIN_CHECK_LENET_ITERS:+--max_iter=$XTRAIN_CHECK_LENET_ITERS})
    [ $device = gpu ] && flags+=(--gpu=0)
    start=$SECONDS
    (cd "$run" && run_logged "$LOGS/lenet_$device.log" $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)) \
      "$BUNDLE/bin/xtrain" train --solver=models/lenet/lenet_solver.prototxt "${flags[@]}") || status=1
    took[$device]=$((SECONDS - start))
    accuracy[$device]=$(last_accuracy "$LOGS/lenet_$device.log")
    echo "$device: accuracy ${accuracy[$device]:-none} in ${took[$device]} s (log: lenet_$device.log)" >>"$log"
  done
  local verdict
  verdict=$(awk -v g="${accuracy[gpu]:-}" -v c="${accuracy[cpu]:-}" 'BEGIN {
    if (g == "" || c == "") { print "FAIL no final accuracy"; exit }
    d = g - c; if (d < 0) d = -d
    ok = d <= 0.003 && g > 0.7 && c > 0.7
    printf "%s |GPU - CPU| = %.4f %s 0.003", ok ? "PASS" : "FAIL", d, d <= 0.003 ? "<=" : ">" }')
  [ $status -eq 0 ] || verdict="FAIL ${verdict#* } (a command failed)"
  record lenet "${verdict%% *}" "GPU ${accuracy[gpu]:-?} in ${took[gpu]} s, CPU ${accuracy[cpu]:-?} in ${took[cpu]} s, ${verdict#* }" \
    "$log, $LOGS/lenet_gpu.log, $LOGS/lenet_cpu.log"
  [ "${verdict%% *}" = PASS ]
}

# --- xtrain time on the bench nets -------------------------------------------------------
step_time() {
  local log=$LOGS/time.log net name figures="" failed=0 ms
  : >"$log"
  for net in "$BUNDLE"/source/bench/nets/*.prototxt; do
    name=$(basename "$net" .prototxt)
    if run_logged "$LOGS/time_$name.log" "${XTRAIN_CHECK_TIME_TIMEOUT:-60}" "$BUNDLE/bin/xtrain" time --model="$net" --gpu=0 \
      --iterations="${XTRAIN_CHECK_TIME_ITERS:-50}"; then
      ms=$(grep -o 'forward-backward [0-9.]* ms per iteration ([^)]*)' "$LOGS/time_$name.log" | tail -1)
      echo "$name: $ms" >>"$log"
      figures="$figures $name $(echo "$ms" | awk '{ print $2 }') ms;"
    else
      failed=1
      echo "$name: FAILED, see time_$name.log" >>"$log"
      figures="$figures $name FAILED;"
    fi
  done
  record time "$([ $failed -eq 0 ] && echo PASS || echo FAIL)" "fwd+bwd${figures%;}" "$log"
  return $failed
}

# --- Normalize and Embed at SSD and LSTM sizes ---------------------------------------------
step_kernels() {
  local log=$LOGS/kernels.log net name rows figures="" failed=0
  : >"$log"
  for net in "$BUNDLE"/source/bench/kernels/*.prototxt; do
    name=$(basename "$net" .prototxt)
    if run_logged "$LOGS/kernels_$name.log" "${XTRAIN_CHECK_TIME_TIMEOUT:-60}" "$BUNDLE/bin/xtrain" time --model="$net" \
      --gpu=0 --iterations="${XTRAIN_CHECK_TIME_ITERS:-50}"; then
      # xtrain time's table: layer, type, precision, forward ms, backward ms, share.
      rows=$(awk '$2 == "Normalize" || $2 == "Embed" { printf "%s %s/%s ms; ", $1, $4, $5 }' "$LOGS/kernels_$name.log")
      echo "$name: ${rows:-no Normalize or Embed row}" >>"$log"
      [ -n "$rows" ] || failed=1
      figures="$figures${rows:-$name no rows; }"
    else
      failed=1
      echo "$name: FAILED, see kernels_$name.log" >>"$log"
      figures="$figures$name FAILED; "
    fi
  done
  record kernels "$([ $failed -eq 0 ] && echo PASS || echo FAIL)" "fwd/bwd ${figures%; }" "$log"
  return $failed
}

# --- mixed precision: LeNet in each precision, xtrain time in each --------------------
step_precision() {
  local log=$LOGS/precision.log data=$WORK/data/fashion_mnist run precision net name ms status=0
  local deadline=$((SECONDS + ${XTRAIN_CHECK_PRECISION_TIMEOUT:-540}))
  local figures=""
  : >"$log"
  if [ ! -d "$data/train_lmdb" ]; then
    mkdir -p "$data"
    for split in train t10k; do
      run_logged "$log" 120 "$BUNDLE/bin/convert_mnist_data" "$BUNDLE/data/fashion-mnist/$split-images-idx3-ubyte.gz" \
        "$BUNDLE/data/fashion-mnist/$split-labels-idx1-ubyte.gz" \
        "$data/$([ $split = train ] && echo train || echo test)_lmdb" || status=1
    done
  fi
  declare -A accuracy
  for precision in fp32 fp16 bf16; do
    run=$WORK/precision-$precision
    rm -rf "$run" && mkdir -p "$run/snapshots"
    ln -s "$BUNDLE/source/models" "$run/models"
    ln -s "$WORK/data" "$run/data"
    (cd "$run" && run_logged "$LOGS/precision_lenet_$precision.log" $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)) \
      "$BUNDLE/bin/xtrain" train --solver=models/lenet/lenet_solver.prototxt --gpu=0 --precision=$precision \
      --max_iter="${XTRAIN_CHECK_PRECISION_ITERS:-2000}") || status=1
    accuracy[$precision]=$(last_accuracy "$LOGS/precision_lenet_$precision.log")
    echo "LeNet $precision: accuracy ${accuracy[$precision]:-none}" >>"$log"
    figures="$figures LeNet $precision ${accuracy[$precision]:-?};"
  done
  for precision in fp16 bf16; do
    awk -v a="${accuracy[$precision]:-}" -v b="${accuracy[fp32]:-}" 'BEGIN {
      if (a == "" || b == "") exit 1; d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 && a > 0.7) }' || status=1
  done
  for net in "$BUNDLE"/source/bench/nets/*.prototxt; do
    name=$(basename "$net" .prototxt)
    for precision in fp32 fp16 bf16; do
      if run_logged "$LOGS/precision_time_${name}_$precision.log" "${XTRAIN_CHECK_TIME_TIMEOUT:-60}" "$BUNDLE/bin/xtrain" time \
        --model="$net" --gpu=0 --precision=$precision --iterations="${XTRAIN_CHECK_TIME_ITERS:-50}"; then
        ms=$(grep -o 'forward-backward [0-9.]* ms' "$LOGS/precision_time_${name}_$precision.log" | tail -1 | awk '{ print $2 }')
      else
        ms=FAILED status=1
      fi
      echo "$name $precision: $ms ms" >>"$log"
      figures="$figures $name $precision $ms;"
    done
  done
  record precision "$([ $status -eq 0 ] && echo PASS || echo FAIL)" "${figures%;}" "$log"
  return $status
}

# --- summary -----------------------------------------------------------------------
summary() {
  local file=$LOGS/summary.txt step passed=0 failed=0
  {
    echo "xtrain GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), bundle: $(sed -n 's/^source: *//p' "$BUNDLE/BUNDLE.txt" 2>/dev/null)"
    printf '%-10s %-5s %s\n' step result "figures (log)"
    for step in $ALL_STEPS; do
      if [ -f "$LOGS/$step.result" ]; then
        IFS=$'\t' read -r _ result figures logs <"$LOGS/$step.result"
        printf '%-10s %-5s %s\n%17s(%s)\n' "$step" "$result" "$figures" "" "${logs//$BUNDLE\//}"
        [ "$result" = PASS ] && passed=$((passed + 1)) || failed=$((failed + 1))
      else
        printf '%-10s %-5s\n' "$step" "-"
      fi
    done
    echo "overall: $([ $failed -eq 0 ] && echo PASS || echo FAIL) ($passed passed, $failed failed" \
      "of the steps run; logs in $LOGS)"
  } >"$file"
  cat "$file"
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    cp "$file" "$OUT/gpu_check_summary.txt"
    tar -C "$LOGS" -cf - . | xz -6 >"$OUT/gpu_check_logs.tar.xz"
  fi
  [ $failed -eq 0 ]
}

# --- main --------------------------------------------------------------------------
steps=${*:-$ALL_STEPS}
for step in $steps; do
  case " $ALL_STEPS summary " in *" $step "*) ;; *) echo "gpu_check.sh: unknown step '$step' (steps: $ALL_STEPS summary)" >&2; exit 2 ;; esac
done
case " $steps " in *" libs "*) ;; *) steps="libs $steps" ;; esac  # the environment, always
for step in $steps; do
  [ "$step" = summary ] && continue
  say "$step: running"
  case $step in
    libs) step_libs ;;
    query) step_query ;;
    tests) step_tests ;;
    memcheck | racecheck) step_sanitizer "$step" "$step" "GPU/CrossDevice*" "${XTRAIN_CHECK_SANITIZER_TIMEOUT:-270}" ;;
    replicas) step_sanitizer replicas memcheck "GPU/ThreadReplicaTraining.*" "${XTRAIN_CHECK_REPLICAS_TIMEOUT:-240}" ;;
    empty) step_sanitizer empty memcheck "GPU/EmptyBatch*" "${XTRAIN_CHECK_EMPTY_TIMEOUT:-180}" ;;
    lenet) step_lenet ;;
    time) step_time ;;
    kernels) step_kernels ;;
    precision) step_precision ;;
  esac
done
summary
