#!/usr/bin/env bash
# Installs what sinkscope needs to build and test, from Debian's packages. Idempotent: it only calls
# apt-get when a package is missing. Usage: scripts/setup.sh [--sanitizers] [--browser]
# --sanitizers: clang 14 with its sanitizer runtimes and OpenMP (scripts/sanitize.sh, scripts/fuzz.sh);
# --browser: headless chromium, chromedriver and selenium (the `view_browser` test; scripts/test.sh).
set -euo pipefail
packages=(cmake g++ make pkg-config libeigen3-dev libxtensor-dev libboost-math-dev catch2 librapidcheck-dev
          nlohmann-json3-dev libcli11-dev libspectra-dev libpcre2-dev libdnnl-dev python3 python3-venv)
for flag in "$@"; do
  case $flag in
    --sanitizers) packages+=(clang-14 libclang-rt-14-dev libomp-14-dev) ;;
    --browser) packages+=(chromium chromium-driver python3-selenium) ;;
    *) echo "setup.sh: unknown option $flag (--sanitizers, --browser)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
