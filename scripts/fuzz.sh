#!/usr/bin/env bash
# Fuzzes the host-side file decoders (.npy, .npz, IDX, CSV) with libFuzzer under ASan + UBSan,
# built from ONLY the host decoding sources (src/io; no GPU), each target for a bounded time.
# Seeds are small valid files generated here (tests/fuzz/make_seeds.py); corpora grow in
# build-fuzz/corpus/<target>. Exits non-zero when any target crashes (its input is kept as
# build-fuzz/crash-<target>-*; reproduce with build-fuzz/fuzz_<target> FILE).
# The table target (Parquet / Arrow IPC through Arrow C++, src/io/arrow_points.cpp) joins them
# where scripts/setup.sh unpacked Arrow C++; its seeds are written by Arrow itself.
#   FUZZ_SECONDS=45 (per target)  FUZZ_TARGETS="npy npz idx csv [table]"  FUZZ_DIR=build-fuzz
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-45}
CACHE=${SURFGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/surfgrad}
ARROW_DIR=$(ls -d "$CACHE"/arrow-cpp-* 2>/dev/null | sort | tail -n 1 || true)
TARGETS=${FUZZ_TARGETS:-npy npz idx csv${ARROW_DIR:+ table}}
OUT=${FUZZ_DIR:-build-fuzz}
CXX=${FUZZ_CXX:-clang++-19}

log() { echo "[fuzz] $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# libFuzzer and the sanitizer runtimes come with Debian's clang-19 (bookworm main).
if ! command -v "$CXX" >/dev/null || ! dpkg -s libfuzzer-19-dev >/dev/null 2>&1; then
  log "installing clang-19, libfuzzer-19-dev, zlib1g-dev, python3"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    clang-19 libfuzzer-19-dev libclang-rt-19-dev zlib1g-dev python3 >/dev/null
fi

mkdir -p "$OUT/obj"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc)
# The host decoders only: if one of these ever needs the GPU, the link fails here.
sources=(src/platform/host_resources.cpp src/io/input_limits.cpp src/io/npy_format.cpp src/io/npz_format.cpp
         src/io/idx.cpp src/io/csv.cpp tests/fuzz/fuzz_support.cpp)
start=$SECONDS
objects=()
for s in "${sources[@]}"; do
  o="$OUT/obj/$(basename "${s%.cpp}").o"
  "$CXX" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$s" -o "$o" &
  objects+=("$o")
done
wait
table_link=()
if [[ " $TARGETS " == *" table "* ]]; then
  [ -n "$ARROW_DIR" ] || { log "the table target needs Arrow C++: run scripts/setup.sh"; exit 1; }
  arrow_flags=(-DSURFGRAD_HAS_ARROW=1 -isystem "$ARROW_DIR/include")
  for s in src/io/arrow_table.cpp src/io/arrow_parallel_batches.cpp src/io/arrow_points.cpp src/io/arrow_labels.cpp \
           src/io/table_columns.cpp src/platform/parallel.cpp; do
    o="$OUT/obj/$(basename "${s%.cpp}").o"
    "$CXX" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" "${arrow_flags[@]}" -c "$s" -o "$o" &
    table_link+=("$o")
  done
  wait
  table_link+=("$ARROW_DIR"/lib/libparquet.so.* "$ARROW_DIR"/lib/libarrow.so.* -Wl,-rpath,"$ARROW_DIR/lib")
  "$CXX" -std=c++20 -O1 "${arrow_flags[@]}" -Itests tests/fuzz/make_table_seeds.cpp "$ARROW_DIR"/lib/libparquet.so.* \
    "$ARROW_DIR"/lib/libarrow.so.* -Wl,-rpath,"$ARROW_DIR/lib" -o "$OUT/make_table_seeds"
fi
for t in $TARGETS; do
  extra=()
  [ "$t" = table ] && extra=("${arrow_flags[@]}" "${table_link[@]}")
  "$CXX" "${flags[@]}" "tests/fuzz/fuzz_$t.cpp" "${objects[@]}" "${extra[@]}" -lz -o "$OUT/fuzz_$t" &
done
wait
log "built ${TARGETS// /, } in $((SECONDS - start)) s"

python3 tests/fuzz/make_seeds.py "$OUT/seeds"
if [ -x "$OUT/make_table_seeds" ]; then mkdir -p "$OUT/seeds/table" && "$OUT/make_table_seeds" "$OUT/seeds/table"; fi
failed=()
for t in $TARGETS; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  t0=$SECONDS
  supp=()
  [ "$t" = table ] && supp=(env LSAN_OPTIONS="suppressions=tests/fuzz/lsan_arrow.supp:print_suppressions=0")
  # rss_limit: a decoder that allocates past 2 GiB on a (≤ 64 KiB) input is a finding too.
  if "${supp[@]}" "$OUT/fuzz_$t" "$corpus" "$OUT/seeds/$t" "${dict[@]}" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 \
      -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/crash-$t-" \
      >"$OUT/fuzz_$t.log" 2>&1; then
    status=ok
  else
    status=CRASH
    failed+=("$t")
    tail -40 "$OUT/fuzz_$t.log" >&2
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/fuzz_$t.log" | grep -o '[0-9]*$' || echo "?")
  printf '[fuzz] %-4s %-5s %4d s  %8s runs  corpus %5d files\n' "$t" "$status" $((SECONDS - t0)) "$runs" \
    "$(find "$corpus" -type f | wc -l)"
done
if [ ${#failed[@]} -gt 0 ]; then
  log "FAILED: ${failed[*]} (inputs: $OUT/crash-*; logs: $OUT/fuzz_<target>.log)"
  exit 1
fi
log "all targets clean"
