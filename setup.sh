#!/usr/bin/env bash
# Installs what worldloom needs on a fresh Debian/Ubuntu machine (idempotent).
#   system: espeak-ng (TTS), xvfb (a screen for window tests), sox, ffmpeg,
#           a CJK-capable font (fonts-droid-fallback), graphviz (story maps)
#   python: this package and its test tools, editable.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES="espeak-ng xvfb sox ffmpeg fonts-droid-fallback fonts-dejavu-core graphviz"
missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing system packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check -e ".[dev]"
echo "setup: done"
