#!/usr/bin/env bash
# A headless Chromium for a machine without a package manager or network (the GPU machine, whose
# Ubuntu 24.04 glibc is newer than Debian 12's): Debian's chromium-headless-shell and the files it
# needs from chromium-common, with every shared library it links except glibc's own, as an xz
# tarball split into parts that fit one device call's carry (.carry/chrome1, .carry/chrome2).
# web/bench/gpu_browser_run.sh unpacks and uses it.
#   bash scripts/make_chromium_bundle.sh [PART_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
part_bytes=${1:-40M}
version=$(apt-cache policy chromium | awk '/Candidate/ {print $2}')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "chromium-headless-shell=$version" "chromium-common=$version" >/dev/null)
mkdir -p "$work/root" "$work/bundle/chromium/locales" "$work/bundle/lib"
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
c=$work/root/usr/lib/chromium
cp "$c"/chromium-headless-shell "$c"/headless_*.pak "$c"/icudtl.dat "$c"/v8_context_snapshot.bin \
   "$c"/snapshot_blob.bin "$c"/libvulkan.so.1 "$c"/libEGL.so "$c"/libGLESv2.so "$c"/libvk_swiftshader.so \
   "$c"/vk_swiftshader_icd.json "$work/bundle/chromium/"
cp "$c"/locales/en-US.pak "$work/bundle/chromium/locales/"
# Its libraries as this machine resolves them (chromium's dependencies are installed here by
# scripts/setup_web.sh), glibc's excepted: the target's own glibc loads them.
ldd "$c/chromium-headless-shell" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | ld-linux-x86-64.so.2 | libresolv.so.2) ;;
    *) cp -L "$lib" "$work/bundle/lib/" ;;
  esac
done
mkdir -p .carry/chrome1 .carry/chrome2
rm -f .carry/chrome1/part.* .carry/chrome2/part.*
tar -C "$work/bundle" -cf - chromium lib | xz -9 -T0 | split -b "$part_bytes" - "$work/part."
mv "$work/part.aa" .carry/chrome1/
mv "$work"/part.a[b-z] .carry/chrome2/
echo "chromium-headless-shell $version: $(du -ch .carry/chrome1/part.* .carry/chrome2/part.* | tail -1 | cut -f1) in .carry/chrome1, .carry/chrome2"
