#!/usr/bin/env bash
# Installs the Debian packages tessel builds and tests with, when missing (README.md,
# "Dependencies", says what each is for; CMakeLists.txt names the one it misses).
# Extra package names on the command line are installed too (scripts/fuzz.sh).
set -euo pipefail
packages=(cmake ninja-build g++ nlohmann-json3-dev libgtest-dev libopenblas-dev libblis-dev libxsmm-dev
          python3-matplotlib libblas-test libblas3 python3-venv python3-dev python3-numpy "$@")
missing=()
for p in "${packages[@]}"; do
  # Installed, not merely known (a removed package keeps "deinstall ok config-files").
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps.sh: run as root, or install sudo" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
