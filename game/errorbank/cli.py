"""``worldloom errorbank``: stats, export, calibrate, label.

    worldloom errorbank stats     [--db errors.db] [--session ID] [--png drift.png]
    worldloom errorbank export    [--db errors.db] --out pairs.jsonl [--format jsonl|parquet]
                                  [--layout pairs|cases] [--images base64|files]
    worldloom errorbank calibrate [--db errors.db] [--min-cases 3] [--dry-run]
    worldloom errorbank label     [--db errors.db] CASE_ID good|bad

Wiring (in ``game/cli.py``): ``add_parser(sub)`` in ``build_parser`` and
``"errorbank": run`` in ``main``'s command table. Errors raise
:class:`~game.errorbank.errors.ErrorBankError` (a ``WorldloomError``: one line, exit 2).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from game.errorbank.errors import ErrorBankError
from game.errorbank.store import ErrorStore
from game.words import counted

#: Default database: ``$WORLDLOOM_ERRORBANK`` or ``~/.local/share/worldloom/errorbank.db``.
ENV_DB = "WORLDLOOM_ERRORBANK"


def default_db() -> Path:
    """The error bank used when ``--db`` is not given."""
    env = os.environ.get(ENV_DB)
    return Path(env) if env else Path.home() / ".local" / "share" / "worldloom" / "errorbank.db"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``errorbank`` and its subcommands on an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser("errorbank", help="the error bank: stats, export, calibrate")
    p.set_defaults(func=run)
    sub = p.add_subparsers(dest="errorbank_command", required=True)

    def db(q: argparse.ArgumentParser) -> None:
        q.add_argument("--db", type=Path, default=None, help=f"error-bank file (default ${ENV_DB} or "
                                                             "~/.local/share/worldloom/errorbank.db)")

    st = sub.add_parser("stats", help="counts by kind; PNG of drift over a session")
    db(st)
    st.add_argument("--session", help="session to plot (default: the last one with drift samples)")
    st.add_argument("--png", type=Path, help="where the plot goes (default: <db>.drift.png)")

    ex = sub.add_parser("export", help="write a dataset (prompt / chosen / rejected pairs)")
    db(ex)
    ex.add_argument("--out", type=Path, required=True, help="output file")
    ex.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="file format (default jsonl)")
    ex.add_argument("--layout", choices=("pairs", "cases"), default="pairs",
                    help="pairs: prompt / chosen / rejected of corrected cases (default); cases: every case, flat")
    ex.add_argument("--images", choices=("base64", "files"), default="base64",
                    help="pairs' images inline as base64 (default), or as files beside the dataset")

    ca = sub.add_parser("calibrate", help="re-derive thresholds from labelled cases")
    db(ca)
    ca.add_argument("--min-cases", type=int, default=3,
                    help="labelled cases a key needs before its threshold moves (default 3)")
    ca.add_argument("--dry-run", action="store_true", help="print, do not write the thresholds file")

    la = sub.add_parser("label", help="label a case good (false alarm) or bad (true fault)")
    db(la)
    la.add_argument("case_id", type=int, help="the case's id (errorbank stats lists them)")
    la.add_argument("label", choices=("good", "bad", "none"), help="good, bad, or none to clear it")
    return p


def _open(path: Path | None, must_exist: bool = True) -> ErrorStore:
    p = path or default_db()
    if must_exist and not p.exists():
        raise ErrorBankError("no error bank here", where=str(p), hint="play with the error bank on, or pass --db")
    return ErrorStore(p)


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    """Run the ``errorbank`` subcommand in ``args``; returns the exit code.

    Raises:
        ErrorBankError: no store, a bad case id, parquet without pyarrow...
    """
    out = console or Console(highlight=False)
    cmd = args.errorbank_command
    with _open(args.db) as store:
        if cmd == "stats":
            return _stats(store, args, out)
        if cmd == "export":
            from game.errorbank.export import export

            path, n = export(store, args.out, args.format, args.layout, args.images)
            out.print(f"wrote {counted(n, 'row')} to {path}")
            return 0
        if cmd == "calibrate":
            from game.errorbank.calibrate import calibrate

            results, written = calibrate(store, args.min_cases, write=not args.dry_run)
            table = Table("key", "old", "new", "good", "bad", "F1", "rule", title="thresholds")
            for r in results:
                table.add_row(r.key, f"{r.old:.4f}", f"{r.new:.4f}", str(r.good), str(r.bad),
                              "" if r.f1 is None else f"{r.f1:.3f}", r.rule)
            out.print(table)
            out.print(f"wrote {written}" if written else "no labelled cases with a threshold key"
                      if not results else "dry run: nothing written")
            return 0
        if cmd == "label":
            store.label(args.case_id, "" if args.label == "none" else args.label)
            out.print(f"case {args.case_id}: {args.label}")
            return 0
    raise ErrorBankError(f"unknown errorbank command {cmd!r}")


def _stats(store: ErrorStore, args: argparse.Namespace, out: Console) -> int:
    from game.errorbank.stats import drift_plot, summary

    counts = store.count_by_kind()
    table = Table("kind", "cases", "corrected", "worked", "false alarms", "true faults", title=str(store.path))
    for kind, c in counts.items():
        table.add_row(kind, str(c["cases"]), str(c["corrected"]), str(c["worked"]), str(c["good"]), str(c["bad"]))
    out.print(table)
    s = summary(store)
    n = {k: v for k, v in s.items() if isinstance(v, int)}  # the totals are whole numbers
    out.print(f"{counted(n['cases'], 'case')}, {s['labelled']} labelled, {counted(n['sessions'], 'session')}, "
              f"{counted(n['samples'], 'drift sample')}")
    png = args.png or store.path.with_name(store.path.stem + ".drift.png")
    written = drift_plot(store, png, args.session)
    out.print(f"drift plot: {written}" if written else "no drift samples to plot")
    return 0
