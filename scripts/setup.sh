#!/usr/bin/env bash
# One-time set-up on a fresh machine: system library for open3d, a venv, the package + dev tools.
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# open3d needs libusb-1.0 at import time (Debian/Ubuntu package libusb-1.0-0).
if ! ldconfig -p 2>/dev/null | grep -q "libusb-1.0.so.0"; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO="sudo"
  if command -v apt-get >/dev/null; then
    echo "setup: installing Debian's libusb-1.0-0 (open3d needs it)"
    $SUDO apt-get install -y -qq libusb-1.0-0 >/dev/null 2>&1 || {
      $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq libusb-1.0-0 >/dev/null; }
  else
    echo "setup: please install libusb-1.0 (needed by open3d) with your package manager" >&2
  fi
fi

# `setup.sh --test`: also Debian's chromium, which the HTML-report test drives headless
# (the test is skipped, saying so, where chromium is missing).
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO="sudo"
  echo "setup: installing Debian's chromium (the HTML report test renders pages with it)"
  $SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || {
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq chromium >/dev/null; } ||
    echo "setup: chromium not installed; the HTML report test will be skipped" >&2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating the venv .venv ($("$PY" --version))"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import eqa_runner, litellm, open3d, hydra" >/dev/null 2>&1 \
   || [ constraints.txt -nt .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "setup: installing eqa_runner and its dependencies into .venv (hydra, litellm, open3d," \
       "numpy, ... pinned by constraints.txt; a few minutes the first time, quiet)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e ".[dev]"
  touch .venv/.installed
fi
# the benchmark plugins in plugins/ (separate distributions; their tests run with the suite)
for plugin in plugins/*/; do
  name=$(basename "$plugin" | tr - _)
  if ! .venv/bin/python -c "import $name" >/dev/null 2>&1 || [ "$plugin/pyproject.toml" -nt .venv/.installed ]; then
    echo "setup: installing the plugin $plugin"
    .venv/bin/python -m pip install -q --no-deps -e "$plugin"
  fi
done
echo "setup: ok ($(.venv/bin/python --version))"
