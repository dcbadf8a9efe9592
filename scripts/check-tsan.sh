#!/usr/bin/env bash
#===- scripts/check-tsan.sh - ThreadSanitizer on the threaded CPU code -----===#
#
# Builds the threaded configurations of the integration tests with
# `mha-aot --sanitize=thread` (the generated code, the C wrapper and the .npy
# runner instrumented for TSan; LLVM's Archer OpenMP tool linked, so that TSan
# sees libomp's fork, barriers and join) and runs each executable at 2 and 4
# threads. Any TSan report, a result off the numpy reference, or results that
# differ bitwise between runs fails the script. docs/Reliability.md says why
# it is built this way and what it found.
#
# Each configuration is built twice: through the registered pipeline
# (`cpu`, schedule(dynamic)), and through the same pipeline without
# `mha-dynamic-schedule-openmp` (schedule(static)). TSan reports a race only
# between accesses that two threads really made: with a dynamic schedule, a
# thread that arrives first may run every iteration that shares a buffer
# (often so on a loaded 2-core host), while a static schedule always hands
# consecutive blocks of iterations to different threads.
#
# Two controls run last and must find races: the layer of issue 25 lowered
# without `mha-privatize-peeled-loops` (the key-block buffer shared by the
# iterations of the parallel loop, which that pass fixed), and the correct
# executable with Archer turned off (libomp's synchronization unseen).
#
# Takes about 100 s on a loaded 2-core host (each configuration is compiled
# twice, 2-30 s each; the instrumented runs take under a second);
# TSAN_CONFIGS="causal e128 q32 q24", issue 25's shapes, about 20 s.
#
# Environment:
#   BUILD_DIR  build with bin/mha-aot and bin/mha-run (default: build; built
#              first with scripts/setup.sh unless MHA_AOT is set)
#   MHA_AOT, MHA_RUN  prebuilt tools to use instead (nothing is built)
#   WORK_DIR   where cases, executables and logs go (default: build-tsan)
#   THREADS    thread counts (default: "2 4"); the first one is checked
#              against the reference, the others bitwise against it
#   TSAN_CONFIGS  names of the configurations to run (default: all; the first,
#              issue 25's layer, always runs: the controls use it)
#
#===----------------------------------------------------------------------===#
set -euo pipefail
MHA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
WORK_DIR=${WORK_DIR:-$MHA_ROOT/build-tsan}
THREADS=${THREADS:-"2 4"}
# LLVM's TSan runtime, and Archer (libomp-22-dev).
TSAN_PACKAGES=(libclang-rt-22-dev libomp-22-dev)

if [ -z "${MHA_AOT:-}" ]; then
  EXTRA_PACKAGES="${TSAN_PACKAGES[*]} ${EXTRA_PACKAGES:-}"
  source "$MHA_ROOT/scripts/setup.sh"   # installs, configures, builds
  MHA_AOT=$BUILD_DIR/bin/mha-aot
  MHA_RUN=${MHA_RUN:-$BUILD_DIR/bin/mha-run}
else
  MHA_RUN=${MHA_RUN:-$(dirname "$MHA_AOT")/mha-run}
  for p in "${TSAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
    echo "==> Installing $p"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends "$p" >/dev/null
  done
fi
"$MHA_AOT" --help | grep -q -- "--sanitize" || {
  echo "error: $MHA_AOT has no --sanitize=thread; rebuild it" >&2; exit 1; }

# The executables default to this, but Archer looks for it in the environment
# only (and warns where it is missing).
export TSAN_OPTIONS="ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
unset OMP_TOOL_LIBRARIES ARCHER_OPTIONS OMP_NUM_THREADS
check_mha=$MHA_ROOT/test/Integration/reference/check_mha.py
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR"
t_start=$SECONDS
failures=()

# name|pipeline|extra mha-aot arguments|check_mha.py arguments and keys
CONFIGS=(
  # issue 25: the race the peeled loops' shared buffers had.
  "cross|cpu||b=1 sq=100 sk=300 eq=64 h=4 cross=1"
  "causal|cpu||b=1 sq=100 eq=64 h=4 causal=1"
  "e128|cpu||b=1 sq=100 sk=300 eq=128 h=2 cross=1"
  "q32|cpu{q-tile-size=32}||b=1 sq=40 sk=3000 eq=64 h=4 cross=1"
  "q24|cpu{q-tile-size=24}||b=1 sq=40 sk=3000 eq=64 h=4 cross=1"
  # test/Integration/CPU: BERT-base, odd sizes, GQA/MQA, masks, bias, causal,
  # dynamic shapes, odd head dims, AVX2 register tiles, panel reduction, bf16.
  "bert|cpu||b=1 sq=128 eq=768 h=12 bias=1"
  "gqa-avx2|cpu|--target-cpu=haswell|b=2 sq=37 sk=45 h=8 hkv=2 causal=1 mask=bool mask_shape=2,1,37,45 bias=1"
  "tiles-causal-dyn|cpu||b=2 sq=150 sk=200 eq=128 h=2 dynamic=b,sq,sk causal=1 mask=bool mask_shape=2,1,1,200"
  "tiles-gqa-dyn|cpu||b=1 sq=200 eq=128 h=4 hkv=2 dynamic=sq mask=float mask_shape=1,4,200,200 bias=1"
  "tiles-mask-dyn|cpu||b=2 sq=130 sk=150 eq=128 h=2 mask=bool mask_shape=2,1,1,150 mask_dynamic=1 causal=1"
  "kc-dyn|cpu{panel-reduction-tile=96}||b=2 sq=77 sk=300 eq=320 ek=200 h=4 hkv=2 bias=1 mask=bool dynamic=sk"
  "d80|cpu||b=1 sq=130 eq=160 h=2 dk=80 dv=80 causal=1"
  "small-mqa|cpu{q-tile-size=16 kv-tile-size=8}||b=1 sq=33 sk=40 eq=24 h=6 hkv=1 dv=5 eo=7 mask=float"
  "bf16|cpu||--atol=2e-2 --rtol=3e-2 dtype=bf16 b=1 sq=128 eq=128 h=2 bias=1 causal=1"
  # The key split of decoding: chunks of one head's keys in parallel
  # iterations, each writing its slice of the partial states.
  "split-mqa|cpu||core=1 b=1 h=8 hkv=1 sq=1 sk=3000 dk=64 causal=1"
  "split-gqa|cpu||core=1 b=2 h=4 hkv=2 sq=2 sk=700 dk=32 kv_splits=5 causal=1"
  # The layer on KV caches with rotary: its projections tiled on threads,
  # its attention split by the keys (B=1, one key/value head), the caches
  # written in place; three results.
  "layer-cache|cpu||b=1 h=8 hkv=1 sq=1 sk=1 eq=256 kv_cache=3000 causal=1 rotary=half"
  "layer-cache-gqa|cpu||b=2 h=4 hkv=2 sq=5 sk=5 eq=64 kv_cache=300 rotary=interleaved bias=1"
)

# The arguments of @main in the order check_mha.py documents (the layer's,
# with its caches and rotary tables).
inputs_of() {
  local n
  for n in query key value q k v w_q w_k w_v w_o b_q b_k b_v b_o mask \
           cache_lengths k_cache v_cache cos sin; do
    [ -f "$1/$n.npy" ] && printf '%s\n' "$1/$n.npy"
  done
}

# The pipeline as text, with every option, for the given target arguments.
pipeline_text() { # case pipeline target-args...
  local case=$1 pipeline=$2; shift 2
  "$MHA_RUN" "$case" "--pipeline=$pipeline" "$@" --dump-pass-pipeline \
    2>/dev/null || true
}

without_pass() { # text pass
  local text
  text=$(sed -E "s/(^|[(,])$2(\{[^}]*\})?,/\1/" <<<"$1")
  if [ "$text" = "$1" ]; then
    echo "error: no '$2' in the pipeline" >&2; return 1
  fi
  printf '%s' "$text"
}

reports() { grep -c "WARNING: ThreadSanitizer" "$1" || true; }

# The first TSan report in log $1: accesses, their innermost frames, summary.
first_report() {
  sed -n '/WARNING: ThreadSanitizer/,/SUMMARY/p' "$1" |
    grep -E "^(\[[^]]*\] )?  ([A-Z]|  #0 )|SUMMARY" | head -n 6 |
    sed 's/^/         /' || true
}

# The results of the case in $1 after the first (expected-1.npy, ...: the
# updated caches), as the suffixes of their files: -1 -2 ...
extra_results() {
  local f
  for f in "$1"/expected-*.npy; do
    [ -f "$f" ] && f=${f##*expected} && printf '%s\n' "${f%.npy}"
  done
}

# Runs executable $1 at $2 threads on inputs of $3 into $4 (and its other
# results into $4 with their suffixes); the log is $4.log.
run() {
  local exe=$1 threads=$2 dir=$3 out=$4 suffix
  local -a ins outs=(-o "$out")
  mapfile -t ins < <(inputs_of "$dir")
  for suffix in $(extra_results "$dir"); do
    outs+=(-o "${out%.npy}$suffix.npy")
  done
  local rc=0
  "$exe" --threads "$threads" "${ins[@]}" "${outs[@]}" >"$out.log" 2>&1 || rc=$?
  return $rc
}

# Fails the label unless the run was clean and bitwise equal to $first.
check_run() { # label exe threads dir out first
  local label=$1 rc=0
  run "$2" "$3" "$4" "$5" || rc=$?
  local n; n=$(reports "$5.log")
  if [ "$rc" -ne 0 ] || [ "$n" -ne 0 ]; then
    echo "    FAIL $label: exit $rc, $n TSan report(s) in $5.log; the first:"
    first_report "$5.log"
    failures+=("$name $label"); return
  fi
  local suffix
  for suffix in "" $(extra_results "$4"); do
    if ! cmp -s "${5%.npy}$suffix.npy" "${6%.npy}$suffix.npy"; then
      echo "    FAIL $label: result differs bitwise from ${6%.npy}$suffix.npy"
      failures+=("$name $label"); return
    fi
  done
  echo "    ok   $label"
}

first_threads=${THREADS%% *}
for entry in "${CONFIGS[@]}"; do
  IFS='|' read -r name pipeline aot_args keys <<<"$entry"
  if [ -n "${TSAN_CONFIGS:-}" ] && [ "$entry" != "${CONFIGS[0]}" ]; then
    case " $TSAN_CONFIGS " in *" $name "*) ;; *) continue ;; esac
  fi
  dir=$WORK_DIR/$name
  echo "==> $name: --pipeline=$pipeline $aot_args $keys"
  t0=$SECONDS
  aot_extra=(); [ -n "$aot_args" ] && aot_extra=("--mha-run-arg=$aot_args")
  # The registered pipeline: check_mha.py generates the case, builds it and
  # runs it at the first thread count against the numpy reference.
  log=$dir/check_mha.log; mkdir -p "$dir"
  # shellcheck disable=SC2086  # keys are words
  if ! "$PYTHON" "$check_mha" --mha-run "$MHA_RUN" --mha-aot "$MHA_AOT" \
      --workdir "$dir" --pipeline "$pipeline" --mha-run-arg=--sanitize=thread \
      "${aot_extra[@]}" --aot-run-arg=--threads \
      "--aot-run-arg=$first_threads" $keys >"$log" 2>&1 ||
      [ "$(reports "$log")" -ne 0 ]; then
    echo "    FAIL dynamic threads=$first_threads: $(reports "$log") TSan" \
         "report(s); $log:"
    if [ "$(reports "$log")" -ne 0 ]; then first_report "$log"
    else tail -n 20 "$log"; fi
    failures+=("$name dynamic threads=$first_threads")
    continue
  fi
  echo "    ok   dynamic threads=$first_threads (result vs reference: $(
    grep -oE "max abs error [^:]*: OK" "$log" | head -n 1))"
  exe=$dir/aot-${pipeline%%\{*}/layer
  first=$exe-result.npy
  for t in ${THREADS#"$first_threads"}; do
    check_run "dynamic threads=$t" "$exe" "$t" "$dir" "$dir/dynamic-t$t.npy" "$first"
  done
  # The same pipeline with a static schedule.
  # shellcheck disable=SC2086
  text=$(without_pass "$(pipeline_text "$dir/case.mlir" "$pipeline" $aot_args)" \
         mha-dynamic-schedule-openmp)
  # shellcheck disable=SC2086
  if ! "$MHA_AOT" "$dir/case.mlir" --sanitize=thread $aot_args \
      "--pipeline=$text" -o "$dir/static/layer" >"$dir/static.log" 2>&1; then
    echo "    FAIL static: mha-aot failed: $dir/static.log"
    failures+=("$name static build"); continue
  fi
  for t in $THREADS; do
    check_run "static threads=$t" "$dir/static/layer" "$t" "$dir" \
      "$dir/static-t$t.npy" "$first"
  done
  echo "    ($((SECONDS - t0)) s)"
done

# The controls, on the first configuration (issue 25's layer).
expect_race() { # label log
  local n; n=$(reports "$2")
  if [ "$n" -eq 0 ]; then
    echo "    FAIL $1: no TSan report ($2)"; failures+=("control: $1")
  else
    echo "    ok   $1: $n reports; the first:"
    first_report "$2"
  fi
}
IFS='|' read -r name pipeline _ _ <<<"${CONFIGS[0]}"
dir=$WORK_DIR/$name
echo "==> Controls on $name (each must report a race)"
text=$(without_pass "$(pipeline_text "$dir/case.mlir" "$pipeline")" \
       mha-dynamic-schedule-openmp)
text=$(without_pass "$text" mha-privatize-peeled-loops)
"$MHA_AOT" "$dir/case.mlir" --sanitize=thread "--pipeline=$text" \
  -o "$dir/unprivatized/layer" >"$dir/unprivatized.log" 2>&1
run "$dir/unprivatized/layer" "$first_threads" "$dir" "$dir/unprivatized.npy" || true
expect_race "static schedule without mha-privatize-peeled-loops" "$dir/unprivatized.npy.log"
ARCHER_OPTIONS=enable=0 run "$dir/static/layer" "$first_threads" "$dir" \
  "$dir/no-archer.npy" || true
expect_race "ARCHER_OPTIONS=enable=0 (Archer off)" "$dir/no-archer.npy.log"

echo
echo "check-tsan: configurations ${TSAN_CONFIGS:-(all ${#CONFIGS[@]})} at threads $THREADS," \
     "$((SECONDS - t_start)) s"
if [ ${#failures[@]} -ne 0 ]; then
  printf 'FAILED: %s\n' "${failures[@]}"
  exit 1
fi
echo "no TSan report; results equal the reference and bitwise across runs"
