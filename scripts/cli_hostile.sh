#!/usr/bin/env bash
# The `surfgrad` program on a corpus of hostile invocations, meant for the ASan + UBSan build
# (scripts/sanitize.sh runs it on build-asan/surfgrad): bad options, bad files made here at run
# time, devices and FIFOs as outputs, write errors (standard output, SURFGRAD_PROFILE,
# SURFGRAD_DUMP_WGSL), a failing demo. Each case checks the exit status and a phrase of the
# message; every run must be free of sanitizer reports, and /dev/null and /dev/full must still
# be character devices afterwards. Tiny sizes throughout: the stage has its own time budget.
#   scripts/cli_hostile.sh [BINARY]   (default build-asan/surfgrad)
#   CLI_HOSTILE_BUDGET=180 (seconds for the whole corpus; over it, the stage fails)
set -uo pipefail
cd "$(dirname "$0")/.."

bin=$(realpath "${1:-build-asan/surfgrad}")
budget=${CLI_HOSTILE_BUDGET:-180}
[ -x "$bin" ] || { echo "[cli-hostile] no $bin: build the surfgrad_cli target first" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export S="$bin" W="$work"

# ---- bad files, made here ----
python3 - "$work" <<'PY'
import io, struct, sys, zipfile
w = sys.argv[1]
def npy(shape, descr, data):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d, " % d for d in shape))
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data
pts = [(i % 7) * 1.0 + 0.1 * (i % 3) for i in range(60 * 3)]
good = npy((60, 3), "<f4", struct.pack("<180f", *pts))
open(w + "/pts.npy", "wb").write(good)
open(w + "/pts.csv", "w").write("a,b,c\n" + "".join("%d,%d,%d\n" % (i % 7, (i * 13) % 11, i % 5) for i in range(60)))
open(w + "/same.csv", "w").write("a,b\n" + "1,2\n" * 30)
open(w + "/nan.csv", "w").write("a,b\n1,2\nnan,3\n4,5\n")
open(w + "/empty.csv", "w").write("")
open(w + "/emb1.csv", "w").write("x\n" + "1\n" * 60)
open(w + "/lab_ok.csv", "w").write("l\n" + "".join("%d\n" % (i % 3) for i in range(60)))
open(w + "/lab_neg.csv", "w").write("l\n" + "-1\n" * 60)
open(w + "/lab_few.csv", "w").write("l\n1\n2\n")
open(w + "/trunc.npy", "wb").write(good[:20])
open(w + "/huge.npy", "wb").write(npy((1 << 40, 1 << 30), "<f4", b"\0" * 16))
open(w + "/badtype.npy", "wb").write(npy((2, 2), "<c16", b"\0" * 64))
open(w + "/junk.idx", "wb").write(bytes([0, 0, 0x08, 9]) + b"\xff" * 40)
open(w + "/junk.gz", "wb").write(b"\x1f\x8b\x08\x00" + b"\x00" * 30)
open(w + "/pts.parquet", "wb").write(b"PAR1" + b"\x01" * 64 + b"PAR1")
open(w + "/pts.h5", "wb").write(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
open(w + "/pts.txt", "w").write("1,2,3\n4,5,6\n")
z = io.BytesIO()
with zipfile.ZipFile(z, "w") as f:
    f.writestr("points.npy", good)
open(w + "/pts.npz", "wb").write(z.getvalue())
z = io.BytesIO()
with zipfile.ZipFile(z, "w") as f:
    f.writestr("a.npy", good); f.writestr("b.npy", good)
open(w + "/two.npz", "wb").write(z.getvalue())
open(w + "/badzip.npz", "wb").write(b"PK\x03\x04" + b"\xff" * 60)
PY
mkdir "$work/folder"
mkfifo "$work/fifo"

cases=0
failed=0
start=$SECONDS
devices_ok() { [ -c /dev/null ] && [ -c /dev/full ]; }
# expect STATUS PHRASE 'shell command ($S is the binary, $W the scratch folder)'
expect() {
  local want=$1 phrase=$2 cmd=$3 out status
  cases=$((cases + 1))
  out=$(timeout 120 bash -c "$cmd" 2>&1)
  status=$?
  local why=""
  [ "$status" = "$want" ] || why="exit $status, expected $want"
  [ -z "$phrase" ] || grep -qF -- "$phrase" <<<"$out" || why="${why:+$why; }no '$phrase' in the output"
  if grep -qE "ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|SUMMARY: (Address|UndefinedBehavior)" <<<"$out"; then
    why="${why:+$why; }a sanitizer report"
  fi
  devices_ok || why="${why:+$why; }/dev/null or /dev/full is no longer a character device"
  if [ -n "$why" ]; then
    failed=$((failed + 1))
    echo "[cli-hostile] FAIL: $cmd"
    echo "  $why"
    tail -20 <<<"$out" | sed 's/^/  | /'
  fi
}

# ---- options ----
expect 2 "--points" '"$S" map --points -5'
expect 2 "--iterations" '"$S" map --iterations 0'
expect 2 "--method" '"$S" map --method pca'
expect 2 "--perplexity" '"$S" map --points 100 --perplexity 40'
expect 2 "no-such-command" '"$S" no-such-command'
expect 2 "--batch" '"$S" demo mnist --data . --batch 0'
expect 2 "--lr" '"$S" demo tile-mlp --lr -1'
expect 1 "" '"$S" map --points 30000000 -o "$W/big"'
# ---- input files ----
expect 1 "cannot open" '"$S" map "$W/missing.npy" -o "$W/o"'
expect 1 "" '"$S" map "$W/folder" -o "$W/o"'
expect 1 "identical" '"$S" map "$W/same.csv" -o "$W/o" --perplexity 5'
expect 1 "NaN" '"$S" map "$W/nan.csv" -o "$W/o"'
expect 1 "" '"$S" map "$W/empty.csv" -o "$W/o"'
expect 1 "" '"$S" map "$W/trunc.npy" -o "$W/o"'
expect 1 "" '"$S" map "$W/huge.npy" -o "$W/o"'
expect 1 "" '"$S" map "$W/badtype.npy" -o "$W/o"'
expect 1 "" '"$S" map "$W/junk.idx" -o "$W/o"'
expect 1 "" '"$S" map "$W/junk.gz" -o "$W/o"'
expect 1 "" '"$S" map "$W/badzip.npz" -o "$W/o"'
expect 1 "a Parquet file" '"$S" map "$W/pts.parquet" -o "$W/o"'
expect 1 "an HDF5 file" '"$S" eval "$W/pts.npy" --input "$W/pts.h5"'
expect 1 "rename it to .csv" '"$S" map "$W/pts.txt" -o "$W/o"'
expect 1 "2 arrays" '"$S" map "$W/two.npz" -o "$W/o"'
expect 1 "2 arrays" '"$S" eval "$W/pts.npy" --input "$W/pts.npy" --labels "$W/two.npz"'
expect 1 "labels must be integers" '"$S" eval "$W/pts.npy" --input "$W/pts.csv" --labels "$W/lab_neg.csv"'
expect 1 "one label per point" '"$S" eval "$W/pts.npy" --input "$W/pts.csv" --labels "$W/lab_few.csv"'
expect 1 "2 (or more) columns" '"$S" eval "$W/emb1.csv" --input "$W/pts.csv"'
expect 1 "overwrite the input" '"$S" map "$W/pts.csv" -o "$W/pts" --perplexity 5'
# ---- outputs ----
expect 0 "" '"$S" map "$W/pts.npz" -o "$W/ok" --perplexity 5 --iterations 20 && test -f "$W/ok.png"'
expect 0 "10-NN accuracy" '"$S" eval "$W/ok.npy" --input "$W/pts.npz" --labels "$W/lab_ok.csv"'
expect 1 "is a character device" '"$S" map "$W/pts.csv" -o /dev/full --perplexity 5 --iterations 20'
expect 1 "is a character device" '"$S" map "$W/pts.csv" -o /dev/null --perplexity 5 --iterations 20'
expect 1 "standard output cannot hold" '"$S" map "$W/pts.csv" -o - --perplexity 5 --iterations 20'
expect 1 "" '"$S" map "$W/pts.csv" -o "$W/folder/" --perplexity 5'
expect 1 "does not exist" '"$S" map "$W/pts.csv" -o "$W/nowhere/o" --perplexity 5'
knn='"$S" bench knn --points 200 --dims 8 --methods exact --recall-sample 50 --reps 1'
expect 0 "" "$knn --json /dev/null"
expect 1 "'/dev/full': cannot write" "$knn --json /dev/full"
expect 0 '"bench": "knn"' "$knn --json -"
expect 0 "" "(cat \"\$W/fifo\" > \"\$W/from_fifo\" &) ; $knn --json \"\$W/fifo\" && test -p \"\$W/fifo\""
expect 0 "" "$knn --json \"\$W/$(printf 'j%.0s' {1..249}).json\""
expect 1 "more than the" '"$S" map "$W/pts.csv" -o "$W/'"$(printf 'n%.0s' {1..253})"'" --perplexity 5'
# A full disk: an 8 KiB tmpfs in a user namespace (where the system allows one); it must be left
# empty (exit 99 otherwise), checked before the namespace ends.
mkdir "$work/small"
if unshare -rm true 2>/dev/null; then
  expect 1 "full.png': cannot write (No space left" 'unshare -rm sh -c '"'"'mount -t tmpfs -o size=8k tmpfs "$W/small" && "$S" map "$W/pts.csv" -o "$W/small/full" --perplexity 5 --iterations 20; s=$?; [ -z "$(ls -A "$W/small")" ] || s=99; exit $s'"'"''
fi
# ---- write errors ----
expect 1 "cannot write to standard output" '"$S" eval "$W/ok.npy" --input "$W/pts.npz" 2>&1 >/dev/full'
expect 1 "cannot write to standard output" '"$S" --help 2>&1 >/dev/full'
expect 1 "SURFGRAD_DUMP_WGSL" 'SURFGRAD_DUMP_WGSL="$W/pts.csv" "$S" demo tensors'
if "$bin" info 2>/dev/null | grep -q "timestamp-query  yes"; then
  expect 1 "SURFGRAD_PROFILE='/dev/full'" 'SURFGRAD_PROFILE=/dev/full "$S" demo tensors'
fi
# ---- demos ----
expect 1 "the loss did not fall" '"$S" demo tile-mlp --side 16 --steps 50 --lr 10 --out "$W/t.png"'
expect 1 "'/dev/full': cannot write" '"$S" demo tile-mlp --side 16 --steps 20 --out /dev/full'
expect 1 "below the 99% target" '"$S" demo moons --steps 1 --out "$W/m.png"'
expect 1 "'/dev/full': cannot write" '"$S" demo moons --steps 5 --out /dev/full'
expect 1 "" '"$S" bench coop --dump "$W/pts.csv"'

leftovers=$(find "$work" -name '.sg*' | wc -l)
if [ "$leftovers" != 0 ]; then
  failed=$((failed + 1))
  echo "[cli-hostile] FAIL: $leftovers staging files left behind in $work"
fi
took=$((SECONDS - start))
echo "[cli-hostile] $cases cases, $failed failed, in $took s (budget $budget s)"
if [ "$took" -gt "$budget" ]; then
  echo "[cli-hostile] FAIL: over the time budget; keep the corpus's sizes tiny"
  exit 1
fi
[ "$failed" = 0 ]
