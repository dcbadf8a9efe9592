#!/usr/bin/env bash
#===- scripts/setup.sh - install what is missing, configure, build ---------===#
#
# Sourced by quickstart.sh and check.sh; idempotent and quick when everything
# is already there. Environment:
#   BUILD_DIR   build directory (default: build)
#   CMAKE_ARGS  extra arguments for the first configure
#
#===----------------------------------------------------------------------===#
set -euo pipefail

MHA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$MHA_ROOT/build}
LLVM_PREFIX=/usr/lib/llvm-22

# Debian 12 packages the build and the tests need; callers may add more in
# EXTRA_PACKAGES before sourcing this file. libvulkan-dev builds the Vulkan
# runtime; mesa-vulkan-drivers brings lavapipe, a Vulkan device on the CPU
# that the GPU tests run on where there is no GPU; spirv-tools' spirv-val
# validates the SPIR-V the Vulkan pipeline emits.
PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
          libomp-22-dev cmake ninja-build python3 python3-numpy
          libvulkan-dev mesa-vulkan-drivers spirv-tools ${EXTRA_PACKAGES:-})

step() { printf '\n==> %s\n' "$*"; }

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    step "Packages: all present"
    return
  fi
  step "Installing missing packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "error: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
      exit 1
    }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

configure_and_build() {
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    step "Configuring in $BUILD_DIR"
    local t0=$SECONDS
    mkdir -p "$BUILD_DIR"
    cmake -G Ninja -S "$MHA_ROOT" -B "$BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DLLVM_USE_LINKER=lld \
      -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=$LLVM_PREFIX/bin/lit \
      ${CMAKE_ARGS:-} >"$BUILD_DIR/configure.log" 2>&1 || {
        cat "$BUILD_DIR/configure.log" >&2; exit 1; }
    echo "    configured in $((SECONDS - t0)) s"
  fi
  step "Building"
  local t0=$SECONDS
  ninja -C "$BUILD_DIR" | tail -n 1
  echo "    built in $((SECONDS - t0)) s"
}

export PATH=$LLVM_PREFIX/bin:$PATH
install_missing
configure_and_build
