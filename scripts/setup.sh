#!/usr/bin/env bash
# Installs the Debian packages kiln builds with — only the missing ones (apt-get update only then;
# sudo only when not root) — and checks for the CUDA toolkit, which kiln needs for its headers
# (libcuda and NVRTC are dlopen'd at run time).
#   ./scripts/setup.sh                      build dependencies
#   ./scripts/setup.sh --with-python-tests  and python3, pytest, venv and wheel: python/tests run
#                                           against `pip install -e python/` in a throwaway venv
set -euo pipefail

packages=(cmake make g++ libsqlite3-dev nlohmann-json3-dev libgtest-dev libdlpack-dev libssl-dev
          libcli11-dev libfmt-dev)
for arg in "$@"; do
  case "$arg" in
    --with-python-tests) packages+=(python3 python3-pytest python3-venv python3-wheel) ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all Debian packages present"
fi

cuda_home=${KILN_CUDA_HOME:-/usr/local/cuda}
if [[ ! -f "$cuda_home/include/cuda.h" || ! -f "$cuda_home/include/nvrtc.h" ]]; then
  echo "setup.sh: no CUDA toolkit at $cuda_home (cuda.h, nvrtc.h); install CUDA 13 from" \
       "NVIDIA's Debian repository, or set KILN_CUDA_HOME" >&2
  exit 1
fi
echo "setup.sh: CUDA toolkit at $cuda_home"
