"""``bench/gpu.py --tiny`` runs on the CPU (the same script measures full-size models on a GPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the bench needs torch")
pytest.importorskip("diffusers", reason="the bench needs diffusers")

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_bench_runs_tiny_on_the_cpu() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "bench/gpu.py", "--tiny", "--blocks", "7", "--baseline-blocks", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    print(out)
    for kind in ("causal", "action"):
        part = out.split(f"[{kind}]")[1].split("[")[0]
        assert re.search(r"ours: [\d.]+ frames/s, first frame [\d.]+ s, block 1 [\d.]+ ms, block 7 [\d.]+ ms", part)
        frames = re.search(r"KV cache: ([\d.]+) MiB for (\d+) latent frames", part)
        assert frames is not None and float(frames.group(1)) > 0
        assert int(frames.group(2)) == 5  # sink 1 + window 4 latent frames after 7 blocks of 2: bounded
        assert re.search(r"game layer: [\d.]+% of the model's time", part)
        assert re.search(r"bare loop: [\d.]+ frames/s", part)


def test_without_a_gpu_the_full_size_bench_says_so() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the full-size run is the bench itself")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "bench/gpu.py"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 2 and "--tiny" in done.stdout
