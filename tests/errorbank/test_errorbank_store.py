"""The error bank's store (survives SIGKILL mid-write), calibrate, export, stats and the CLI."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from rich.console import Console

from game.errorbank import Case, ErrorBankError, ErrorStore, Sample, Thresholds
from game.errorbank.calibrate import best_threshold, calibrate
from game.errorbank.cli import add_parser
from game.errorbank.export import export
from game.errorbank.metrics import thumbnail
from game.errorbank.scenarios import make_request
from game.world.protocol import Scene

ROOT = Path(__file__).parents[2]

WRITER = """
import sys
import numpy as np
from game.errorbank.metrics import thumbnail
from game.errorbank.store import Case, ErrorStore
store = ErrorStore(sys.argv[1])
frame = np.random.default_rng(0).integers(0, 256, (54, 96, 3), dtype=np.uint8)
png = thumbnail(frame)
i = 0
while True:
    i += 1
    cid = store.add(Case(kind="drift", session="k", frame=i, request={"seq": i, "prompt": "p" * 2000},
                         bad_png=png, fixed_png=png, metrics={"key": "drift", "score": 0.5}, note="n" * 500,
                         correction="reanchor+reset_history+regenerate", worked=True))
    print(cid, flush=True)
"""


def case(i: int, **kw: object) -> Case:
    req = make_request(i, Scene("clearing"), min_frames=4).to_json()
    base: dict[str, object] = {"kind": "drift", "session": "s1", "story": "zero_mark", "scene": "clearing",
                               "frame": i * 12, "frame_time": i * 0.5, "request": req, "correction": "reanchor"}
    base.update(kw)
    return Case(**base)  # type: ignore[arg-type]


def test_cases_round_trip(tmp_path: Path) -> None:
    png = thumbnail(np.full((108, 192, 3), 90, np.uint8))
    with ErrorStore(tmp_path / "e.db") as store:
        cid = store.add(case(1, bad_png=png, fixed_png=png, metrics={"key": "drift", "score": 0.4}, worked=True))
        store.add_sample(Sample("s1", 12, 0.5, "drift", 0.1, 0.27, False))
    with ErrorStore(tmp_path / "e.db") as store:
        got = store.get(cid)
        assert got.request["seq"] == 1 and got.metrics == {"key": "drift", "score": 0.4} and got.worked is True
        assert Image.open(io.BytesIO(got.bad_png or b"")).size == (96, 54)
        assert store.samples()[0].score == 0.1
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.label(cid, "good")
        assert store.get(cid).label == "good"
        with pytest.raises(ErrorBankError):
            store.label(cid, "maybe")  # type: ignore[arg-type]
        with pytest.raises(ErrorBankError):
            store.get(999)


def test_the_store_survives_a_kill_mid_write(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    committed = 0
    for line in proc.stdout:
        committed = int(line)
        if committed >= 60:
            break
    proc.send_signal(signal.SIGKILL)  # mid-write: it is inside its next add()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with ErrorStore(db) as store:
        cases = store.cases()
    assert len(cases) >= committed  # everything committed before the kill is there
    assert [c.id for c in cases] == list(range(1, len(cases) + 1))
    for c in cases:  # and complete
        assert c.request["seq"] == c.frame and len(c.request["prompt"]) == 2000 and len(c.note) == 500
        assert Image.open(io.BytesIO(c.bad_png or b"")).size == (96, 54) and c.fixed_png == c.bad_png
        assert c.worked is True and c.metrics["score"] == 0.5


def test_calibrate_maximises_f1_and_writes_thresholds_next_to_the_db(tmp_path: Path) -> None:
    scores = [(0.3, False), (0.35, False), (0.5, True), (0.6, True)]
    assert best_threshold(scores, 0.27, True)[0] == pytest.approx(0.425)
    with ErrorStore(tmp_path / "bank.db") as store:
        for score, label in [(0.32, "good"), (0.36, "good"), (0.45, "bad"), (0.5, "bad"), (0.7, "bad")]:
            store.add(case(1, metrics={"key": "drift", "score": score}, label=label))
        for score in (0.004, 0.003, 0.002):  # three false "black" alarms on a dark scene
            store.add(case(1, kind="frame.black", metrics={"key": "black", "score": score}, label="good"))
        store.add(case(1, kind="story.missing", metrics={"key": "story", "score": 1.0}, label="bad"))
        results, path = calibrate(store)
        assert path == tmp_path / "bank.thresholds.json"
        new = {r.key: r.new for r in results}
        assert 0.36 <= new["drift"] < 0.45 and new["black"] < 0.002 and "story" not in new
        loaded = store.thresholds()
        assert loaded.get("drift") == new["drift"] and loaded.get("drift.fog") == new["drift"]
        assert loaded.get("drift.rain") == Thresholds().get("drift.rain")
        data = json.loads(path.read_text())
        assert data["notes"]["drift"]["rule"] == "max F1"


def _rows(store: ErrorStore) -> None:
    png_bad = thumbnail(np.zeros((54, 96, 3), np.uint8))
    png_ok = thumbnail(np.full((54, 96, 3), 120, np.uint8))
    store.add(case(1, bad_png=png_bad, fixed_png=png_ok, worked=True, metrics={"key": "drift", "score": 0.4}))
    store.add(case(2, bad_png=png_bad, fixed_png=png_ok, worked=False))  # correction failed: not a pair
    store.add(case(3, bad_png=png_bad, fixed_png=png_ok, worked=True, label="good"))  # false alarm: not a pair
    store.add(case(4, kind="reply.persona", character="creature",
                   request={"prompt": [{"role": "user", "content": "hi"}]}, bad_reply="As an AI, I cannot.",
                   fixed_reply="*tilts its head*", worked=True, correction="authored_line"))


def test_export_pairs_jsonl_and_files(tmp_path: Path) -> None:
    with ErrorStore(tmp_path / "e.db") as store:
        _rows(store)
        path, n = export(store, tmp_path / "out" / "pairs.jsonl")
        assert n == 2
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        assert {r["modality"] for r in rows} == {"image", "text"}
        assert all(set(r) == set(rows[0]) for r in rows)
        text = next(r for r in rows if r["modality"] == "text")
        assert text["chosen"] == "*tilts its head*" and text["rejected"] == "As an AI, I cannot."
        image = next(r for r in rows if r["modality"] == "image")
        assert image["chosen"].startswith("data:image/png;base64,") and image["prompt"].startswith("painterly")
        path2, _ = export(store, tmp_path / "out" / "p2.jsonl", images="files")
        row = json.loads(path2.read_text().splitlines()[0])
        assert (path2.parent / row["chosen"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        _, n_cases = export(store, tmp_path / "out" / "cases.jsonl", layout="cases")
        assert n_cases == 4


def test_export_loads_with_datasets(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    with ErrorStore(tmp_path / "e.db") as store:
        _rows(store)
        path, _ = export(store, tmp_path / "pairs.jsonl")
    ds = datasets.load_dataset("json", data_files=str(path), split="train")
    assert ds.num_rows == 2 and {"prompt", "chosen", "rejected"} <= set(ds.column_names)


def test_parquet_needs_pyarrow(tmp_path: Path) -> None:
    with ErrorStore(tmp_path / "e.db") as store:
        _rows(store)
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            with pytest.raises(ErrorBankError, match="pyarrow"):
                export(store, tmp_path / "p.parquet", fmt="parquet")
        else:
            _, n = export(store, tmp_path / "p.parquet", fmt="parquet")
            assert n == 2


def test_cli_stats_export_calibrate_label(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    with ErrorStore(db) as store:
        _rows(store)
        for i in range(40):
            store.add_sample(Sample("s1", i * 12, i * 0.5, "drift", 0.01 * (i % 20), 0.27, i % 20 == 0))
    parser = argparse.ArgumentParser(prog="worldloom")
    add_parser(parser.add_subparsers(dest="command"))
    out = Console(file=io.StringIO(), width=120)

    def cli(*argv: str) -> str:
        args = parser.parse_args(["errorbank", *argv, "--db", str(db)])
        assert args.func(args, out) == 0
        text: str = out.file.getvalue()  # type: ignore[attr-defined]
        return text

    text = cli("stats", "--png", str(tmp_path / "d.png"))
    assert "drift" in text and "reply.persona" in text
    assert Image.open(tmp_path / "d.png").size == (960, 480)
    assert "wrote 2 rows" in cli("export", "--out", str(tmp_path / "x.jsonl"))
    cli("label", "1", "bad")
    assert "thresholds" in cli("calibrate", "--dry-run")
    with pytest.raises(ErrorBankError, match="no error bank"):
        args = parser.parse_args(["errorbank", "stats", "--db", str(tmp_path / "none.db")])
        args.func(args, out)


def test_an_error_bank_whose_folder_is_a_file_is_a_named_error(tmp_path: Path) -> None:
    """`play --errorbank notes.txt/bank.db` (a file where the folder should be) ended in a
    FileExistsError traceback from mkdir; it is an ErrorBankError naming the folder."""
    (tmp_path / "notes.txt").write_text("not a folder")
    with pytest.raises(ErrorBankError, match="cannot create the error bank.s folder: a file is in the way") as err:
        ErrorStore(tmp_path / "notes.txt" / "bank.db")
    assert err.value.where == str(tmp_path / "notes.txt")
