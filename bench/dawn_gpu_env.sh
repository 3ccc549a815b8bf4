# Sourced by the GPU-machine benchmarks that run a pack made by `bench/dawn_matmul_gpu.sh --pack`
# (dawn_matmul_gpu.sh, knn_sgmat_gpu.sh): unpacks $pack into $work (once), puts the pack's
# libraries, a Vulkan loader and the NVIDIA ICD where wgpu-native and Dawn find them, and sets
# SURFGRAD_DAWN_LIBRARY and $bin (the pack's binaries). Needs $pack, $work and a log function.
[ -x "$work/bin/surfgrad" ] || xz -dc "$pack" | tar -C "$work" -xf -
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The Vulkan loader, where the system lacks one (wgpu-native and Dawn both open libvulkan.so.1).
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  deb=$(ls "$work"/vulkan/libvulkan1_*.deb 2>/dev/null | head -1 || true)
  if [ -n "$deb" ]; then
    dpkg-deb -x "$deb" "$work/vulkan/root"
    export LD_LIBRARY_PATH="$work/vulkan/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
    log "Vulkan loader from $(basename "$deb")"
  else
    log "no libvulkan.so.1 and no loader package in the pack: no Vulkan adapter"
  fi
fi
# The NVIDIA ICD (libGLX_nvidia) needs libglvnd, which the GPU machine lacks: carry .gl (the
# device README's loader .debs) and it is unpacked here; without it Vulkan finds no driver.
if [ -d .gl ] && ! ldconfig -p 2>/dev/null | grep -q 'libGLdispatch\.so\.0 '; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# The GPU machine's NVIDIA ICD is not where the loader looks by default (device README).
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && [ -z "${VK_DRIVER_FILES:-}" ] && export VK_DRIVER_FILES=$icd
export SURFGRAD_DAWN_LIBRARY="$work/lib/libwebgpu_dawn.so"
bin=$work/bin
