#!/usr/bin/env bash
# Packs a built trainsim (the executable, libtrainsim_tracer.so, libtrainsim_emulate_gpu.so) with the
# shared libraries it needs (SimGrid, Open MPI and its components, Protobuf, fmt, ...) into one
# folder that runs on a machine without those Debian packages: the lent GPU machines, which have
# CUDA, NCCL and PyTorch but nothing can be installed there (scripts/gpu/device_check.sh).
#
#   scripts/gpu/bundle.sh BUILD_DIR OUT_DIR     # OUT_DIR/bundle.tar.xz
#
# The C and C++ runtimes are left out: the target's own (newer) ones serve. Every carried object gets
# a RUNPATH to the bundle's lib/, so nothing else needs LD_LIBRARY_PATH, and the traced program
# (python) inherits no library path of ours. Open MPI's components are found through
# OMPI_MCA_mca_base_component_path (device_check.sh sets it).
set -euo pipefail
build=${1:?usage: bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bundle.sh BUILD_DIR OUT_DIR}
command -v patchelf >/dev/null || apt-get install -y patchelf >/dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/trainsim/bin" "$stage/trainsim/lib" "$stage/trainsim/cupti"
cp "$build/sim/cli/trainsim" "$build/sim/cli/libtrainsim_emulate_gpu.so" "$build/tracer/libtrainsim_tracer.so" \
  "$stage/trainsim/bin/"
ompi=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cp -r "$ompi" "$stage/trainsim/openmpi3"
cp -r /usr/share/openmpi "$stage/trainsim/openmpi-help"

skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libutil\.so|libcuda|libcudart|libnccl|libcupti)'
closure() {  # the non-runtime libraries that $@ load
  for f in "$@"; do ldd "$f" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r name path; do [[ $name =~ $skip ]] || echo "$path"; done | sort -u
}
comps=$(ls "$ompi"/mca_{ess,pmix,pml,btl,bml,coll,osc,rcache,mpool,allocator,schizo,state,errmgr,routed,rml,oob,grpcomm,odls,plm,rmaps,ras,iof,filem,dfs,reachable,regx,rtc,shmem,pstat,patcher,sec,compress,hook,op,vprotocol,topo,sharedfp,fs,fbtl,fcoll,io,crs,prtereachable}_*.so 2>/dev/null || true)
for lib in $(closure "$build/sim/cli/trainsim" $comps /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so); do
  cp -L "$lib" "$stage/trainsim/lib/"
done
cp -L /usr/local/cuda/lib/libcupti.so.13 "$stage/trainsim/cupti/"
cp -r /usr/lib/x86_64-linux-gnu/pmix2 "$stage/trainsim/pmix2"

patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$stage/trainsim/bin/trainsim"
patchelf --set-rpath '/usr/local/cuda/lib:/usr/local/cuda/lib64:$ORIGIN/../cupti' "$stage/trainsim/bin/libtrainsim_tracer.so"
for f in "$stage"/trainsim/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for f in "$stage"/trainsim/openmpi3/*.so "$stage"/trainsim/pmix2/lib/pmix/*.so; do
  patchelf --set-rpath "\$ORIGIN/$(realpath --relative-to="$(dirname "$f")" "$stage/trainsim/lib")" "$f" 2>/dev/null || true
done
mkdir -p "$out"
tar -C "$stage" -cJf "$out/bundle.tar.xz" trainsim
du -h "$out/bundle.tar.xz"
