"""Retrieval before and after a change, in one run: the store of a git revision against the working tree's.

    PYTHONPATH=. python3 bench/retrieval_before.py [--rev 156c846] [--size 100000] [--queries 40]

Loads ``game/cast/retrieval.py`` and ``game/cast/ann.py`` as they were at ``--rev`` (``git show``,
into a temporary folder, imported under other names) and ranks the bench's real corpus
(``bench/retrieval_corpus.py``, MiniLM vectors from its cache) with both: each store's exact scan
and its default path, CPU ms p50/p95 (``time.process_time``; BLAS and faiss on one thread) and
recall@10 against the working tree's exact scan, on the three query sets of ``bench/memory.py``
(A: talk lines, B: the first probes, C: probes from ``UNSEEN`` on). Also whether the two exact
scans return the same memories (the score must not have changed). The old revision's default
path may need faiss (the ``ann`` extra).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def old_module(rev: str, folder: Path) -> types.ModuleType:
    """``game.cast.retrieval`` at ``rev``, its ``from game.cast import ann`` pointed at ``ann`` of the same rev."""
    for name in ("retrieval", "ann"):
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:game/cast/{name}.py"], check=True,
                              capture_output=True, text=True).stdout
        if name == "retrieval":
            text = text.replace("from game.cast import ann\n", "import old_ann as ann\n")
        (folder / f"old_{name}.py").write_text(text, encoding="utf-8")
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("old_retrieval", folder / "old_retrieval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_retrieval"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    from bench.memory import UNSEEN
    from bench.retrieval_corpus import embedded, player_lines, real_corpus
    from game.cast import retrieval as new

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="156c846", help="the revision to compare with (default: this session's start)")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args(argv)
    if importlib.util.find_spec("faiss") is not None:
        import faiss

        faiss.omp_set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        old = old_module(args.rev, Path(tmp))
        texts, kinds, turns, imp = real_corpus(args.size)
        talk, probes = player_lines()
        asked = {"A": talk[: args.queries], "B": probes[: args.queries], "C": probes[UNSEEN:UNSEEN + args.queries]}
        vecs = embedded(texts, quiet=True)
        stores: dict[str, Any] = {}
        for label, module in (("before", old), ("after", new)):
            store = module.EpisodicStore(dim=vecs.shape[1])
            store.extend(texts, kinds, turns, imp, vecs)
            t0 = time.process_time()
            store.build_index()
            print(f"{label} ({args.rev if label == 'before' else 'working tree'}): index built in "
                  f"{time.process_time() - t0:.1f} s CPU")
            stores[label] = store
        now = int(turns.max()) + 1
        print(f"{args.size:,} memories, load average {os.getloadavg()[0]:.1f}; CPU ms p50/p95, recall@10 against the "
              "working tree's exact scan")
        for name, lines in asked.items():
            qs = embedded(lines, quiet=True)
            times: dict[str, list[float]] = {}
            recall: dict[str, list[float]] = {}
            same = 0
            for q, text in zip(qs, lines, strict=True):
                got = {}
                for label, store in stores.items():
                    for exact in (True, False):
                        key = f"{label} {'exact scan' if exact else 'default path'}"
                        t0 = time.process_time()
                        ids = [s.index for s in store.top(q, now, 10, query_text=text, exact=exact)]
                        times.setdefault(key, []).append((time.process_time() - t0) * 1000)
                        got[key] = ids
                truth = set(got["after exact scan"])
                same += got["after exact scan"] == got["before exact scan"]
                for key, ids in got.items():
                    recall.setdefault(key, []).append(len(truth & set(ids)) / 10)
            print(f"  {name} ({len(lines)} queries): exact scans equal {same}/{len(lines)}")
            for key in times:
                print(f"    {key:<22} {statistics.median(times[key]):7.2f} {np.percentile(times[key], 95):7.2f} ms  "
                      f"recall {statistics.mean(recall[key]):.3f}")


if __name__ == "__main__":
    main()
