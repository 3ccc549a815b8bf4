# Sourced by GPU-machine scripts that run a pack made by `bench/dawn_matmul_gpu.sh --pack`:
#   . bench/gpu_pack_env.sh PACK WORK
# Unpacks PACK into WORK (once), then sets what the binaries need to find their libraries and a
# Vulkan driver: LD_LIBRARY_PATH (the pack's lib/, the Vulkan loader from the pack's .deb where
# the system lacks one), libglvnd from .gl where the NVIDIA ICD needs it, VK_DRIVER_FILES (the GPU
# machine's NVIDIA ICD), SURFGRAD_DAWN_LIBRARY; and `bin` (the pack's bin/). The same steps as
# bench/dawn_matmul_gpu.sh's, which could source this file too.
_pack=$1 _work=$2
[ -x "$_work/bin/surfgrad" ] || xz -dc "$_pack" | tar -C "$_work" -xf -
export LD_LIBRARY_PATH="$_work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  _deb=$(ls "$_work"/vulkan/libvulkan1_*.deb 2>/dev/null | head -1 || true)
  if [ -n "$_deb" ]; then
    dpkg-deb -x "$_deb" "$_work/vulkan/root"
    export LD_LIBRARY_PATH="$_work/vulkan/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
  else
    echo "[gpu_pack_env] no libvulkan.so.1 and no loader package in the pack: no Vulkan adapter" >&2
  fi
fi
if [ -d .gl ] && ! ldconfig -p 2>/dev/null | grep -q 'libGLdispatch\.so\.0 '; then
  for _f in .gl/*.deb; do dpkg -x "$_f" /; done; ldconfig
fi
_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$_icd" ] && [ -z "${VK_DRIVER_FILES:-}" ] && export VK_DRIVER_FILES=$_icd
export SURFGRAD_DAWN_LIBRARY="$_work/lib/libwebgpu_dawn.so"
bin=$_work/bin
unset _pack _work _deb _f _icd
