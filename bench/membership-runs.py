#!/usr/bin/env python3
"""One line per stored run of a membership row: its verdict, operations,
acknowledged adds inside the join/leave windows (the writes the movements
were tested under), lock names used (retired stuck names count), stuck-lock
findings, and schedule steps never dealt.

Usage: bench/membership-runs.py RUN_DIR...   (store/<test>/<timestamp>)
"""
import json
import os
import sys

MOVES = ("join", "leave", "replace", "remove")


def move_windows(lines):
    """(start, end) of every membership window; one never stopped ends the run."""
    open_, out = {}, []
    for d in lines:
        f = d.get("f", "")
        for k in MOVES:
            if f == "start-" + k:
                open_.setdefault(k, []).append(d["time"])
            elif f == "stop-" + k and open_.get(k):
                out.append((open_[k].pop(0), d["time"]))
    out += [(t, float("inf")) for starts in open_.values() for t in starts]
    return out


def summary(run):
    with open(os.path.join(run, "history.jsonl")) as fh:
        lines = [json.loads(l) for l in fh if l.strip()]
    windows = move_windows(lines)
    ops = sum(1 for d in lines if d.get("process", -1) >= 0)
    adds = sum(1 for d in lines if d.get("f") == "add" and d["type"] == "ok"
               and any(a <= d["time"] <= b for a, b in windows))
    locks = {d["lock"] for d in lines if d.get("lock")}
    phases = [d["value"] for d in lines if d.get("f") == "phases"]
    undealt = phases[-1].get("undealt", 0) if phases else "?"
    verdict, stuck = "?", 0
    results = os.path.join(run, "results.json")
    if os.path.exists(results):
        with open(results) as fh:
            r = json.load(fh)
        verdict = r.get("verdict", "?")
        stuck = sum(1 for f in r.get("findings") or [] if f.get("kind") == "stuck-lock")
    return (f"{run}\tverdict={verdict}\tops={ops}\tadds_in_moves={adds}\twindows={len(windows)}"
            f"\tlocks={len(locks)}\tstuck={stuck}\tundealt={undealt}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bench/membership-runs.py RUN_DIR...")
    for run in sys.argv[1:]:
        try:
            print(summary(run))
        except (OSError, ValueError, KeyError) as err:
            sys.exit(f"membership-runs: {run}: {err}")
