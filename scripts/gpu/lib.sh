# The start every GPU script shares (sourced): output into $OUT (or ./gpu-out) with the whole log
# teed into $OUT/LOG, the bundle of bundle.sh (.devbundle/, carried) unpacked into a fresh WORK, and
# $T the trainsim executable in it.
#   source scripts/gpu/lib.sh; gpu_run_start LOG WORK
gpu_run_start() {
  OUT=${OUT:-$PWD/gpu-out}
  mkdir -p "$OUT"
  exec > >(tee "$OUT/$1") 2>&1
  work=$2
  rm -rf "$work" && mkdir -p "$work"
  tar -C "$work" -xJf .devbundle/bundle.tar.xz
  T=$work/trainsim/bin/trainsim
  export PYTHONUNBUFFERED=1
}
