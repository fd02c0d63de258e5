#!/usr/bin/env bash
# Builds TFLM with its own Makefile for the Cortex-M7 of QEMU's mps2-an500
# (TARGET=cortex_m_generic TARGET_ARCH=cortex-m7+fp, with KERNELS=cmsis_nn
# as OPTIMIZED_KERNEL_DIR, or the reference kernels when KERNELS is empty),
# links main.cc against the library with the Makefile's own compiler flags
# for each model given, runs each on QEMU and prints TFLM's arena_used_bytes.
# hilmem's build is not involved: these figures check it (see README.md).
#
#   firmware/tflm-own-build/run.sh TFLM_CHECKOUT MODEL.tflite...
#
# The checkout needs its third-party downloads (and, for CMSIS-NN, the
# CMSIS and CMSIS-NN ones), numpy and pillow for the Makefile's scripts,
# arm-none-eabi-gcc and qemu-system-arm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tflm="$(cd "$1" && pwd)"
shift
models=()
for model in "$@"; do models+=("$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"); done
kernels="${KERNELS-cmsis_nn}"
make_args=(-f tensorflow/lite/micro/tools/make/Makefile TARGET=cortex_m_generic TARGET_ARCH=cortex-m7+fp
  TARGET_TOOLCHAIN_ROOT="$(dirname "$(command -v arm-none-eabi-gcc)")/")
[ -n "$kernels" ] && make_args+=(OPTIMIZED_KERNEL_DIR="$kernels")
cd "$tflm"
echo "building TFLM's microlite library (${kernels:-reference} kernels)..." >&2
start=$SECONDS
make "${make_args[@]}" -j"$(nproc)" microlite >&2
echo "built in $((SECONDS - start)) s" >&2
variable() { make "${make_args[@]}" "print-$1" 2>/dev/null | sed -n "s/^$1=//p"; }
eval "flags=($(variable CXXFLAGS))"
cxxflags=()
for flag in "${flags[@]}"; do [ "$flag" != -MD ] && cxxflags+=("$flag"); done
eval "includes=($(variable INCLUDES))"
library="$tflm/$(variable MICROLITE_LIB_PATH)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for model in "${models[@]}"; do
  arm-none-eabi-g++ "${cxxflags[@]}" -O2 "${includes[@]}" -DMODEL_FILE="$model" \
    -c "$here/main.cc" -o "$out/main.o"
  arm-none-eabi-g++ "${cxxflags[@]}" "$out/main.o" "$library" -T "$here/link.ld" -nostartfiles \
    --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections -lm -o "$out/firmware.elf"
  printf '%s: ' "$(basename "$model")"
  timeout 120 qemu-system-arm -M mps2-an500 -nographic -semihosting -kernel "$out/firmware.elf"
done
