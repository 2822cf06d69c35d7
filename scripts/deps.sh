#!/usr/bin/env bash
# Installs the Debian packages tessel builds and tests with, when missing.
set -euo pipefail
packages=(cmake ninja-build g++ libgtest-dev libopenblas-dev libblis-dev python3-matplotlib "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
