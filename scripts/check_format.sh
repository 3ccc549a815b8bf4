#!/usr/bin/env bash
# Checks every C++ file under src/ include/ tests/ bench/ against .clang-format (CI), or with
# --fix formats them in place. Uses Debian's clang-format-19 (installed when missing): one pinned
# major version, because clang-format's output changes between versions.
# Usage: scripts/check_format.sh [--fix] [FILE...]   (no FILE: the whole tree)
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
files=()
for arg in "$@"; do
  case $arg in
    --fix) fix=1 ;;
    -*) echo "usage: $0 [--fix] [FILE...]" >&2; exit 2 ;;
    *) files+=("$arg") ;;
  esac
done

log() { echo "[format] $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

clang_format=clang-format-19
if ! command -v $clang_format >/dev/null; then
  command -v apt-get >/dev/null || { log "install clang-format 19 (Debian: clang-format-19)"; exit 1; }
  log "installing clang-format-19 from Debian"
  # Lock::Timeout: wait for another apt run (e.g. scripts/setup.sh) instead of failing.
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends clang-format-19 >/dev/null
fi

if [ ${#files[@]} -eq 0 ]; then
  # Tracked and new (not ignored) files, so build folders and generated sources never count.
  if git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard -- src include tests bench python web/src |
                         grep -E '\.(cpp|hpp|h|cc)$')
  else  # a tree without git (an unpacked archive)
    mapfile -t files < <(find src include tests bench python web/src -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
                         -o -name '*.cc' \) 2>/dev/null | sort)
  fi
fi
[ ${#files[@]} -gt 0 ] || { log "no C++ files"; exit 0; }

if [ $fix = 1 ]; then
  $clang_format -i --style=file "${files[@]}"
  log "formatted ${#files[@]} files"
  exit 0
fi

# One clang-format run over all files; --dry-run reports each offending place as
# "FILE:LINE:COL: error: code should be clang-formatted".
report=$($clang_format --dry-run -Werror --style=file "${files[@]}" 2>&1) && status=0 || status=$?
if [ $status != 0 ]; then
  mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error' <<<"$report" | cut -d: -f1 | sort -u)
  [ ${#bad[@]} -gt 0 ] || { echo "$report" >&2; exit $status; }  # clang-format itself failed
  [ "${FORMAT_VERBOSE:-0}" = 1 ] && echo "$report" >&2
  printf '  %s\n' "${bad[@]}" >&2
  log "${#bad[@]} of ${#files[@]} files differ from .clang-format (details: FORMAT_VERBOSE=1 $0; fix: $0 --fix)"
  exit 1
fi
log "${#files[@]} files formatted as .clang-format says"
