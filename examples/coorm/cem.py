#!/usr/bin/env python3
"""A CEM-like multi-pool application with its own CooRM launcher (standard library only).

Klein & Pérez (HPCC 2011, §II) motivate CooRM with a Computational ElectroMagnetics code that
runs on several clusters at once: its speed-up depends on each cluster's nodes and speed and on
the WAN between them, and it chooses its own resources. This is a stand-in with the same
shape of performance model (the paper gives no formula; ours is documented in docs/coorm.md):

    compute(C) = WORK / sum(n_p * speed_p for p in C)          node-seconds at speed 1
    comm(C)    = ITERS * (|C| - 1) * (max latency_ms / 1000 + HALO_MB * 8 / min bandwidth_mbps)
    T(C)       = compute(C) + comm(C)

so more nodes and faster pools shorten it, and every extra pool costs communication. The
launcher takes the view batchd sends, tries every subset of its pools at every change point
of the view with as many nodes as stay free there, and requests the configuration that ends
first (it re-selects on every new view, keeping its queue place); then it "runs" by sleeping
T / --time-scale seconds and says `done`.

    python3 cem.py --socket /run/esched.sock --work 20000 --time-scale 100
"""

import argparse
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launcher import Ended, Session, clock  # noqa: E402

ITERS = 100
HALO_MB = 1.0


def run_time(config, speed, links, work):
    """T(C) in seconds for config = {pool: nodes}."""
    power = sum(n * speed[p] for p, n in config.items())
    if power <= 0:
        return float("inf")
    compute = work / power
    pools = sorted(config)
    if len(pools) < 2:
        return compute
    lat, bw = 0.0, float("inf")
    for a, b in itertools.combinations(pools, 2):
        link = links.get((a, b)) or links.get((b, a))
        # Pools without a configured link are far apart: 100 ms, 100 Mbit/s.
        la, ba = link if link else (100.0, 100.0)
        lat, bw = max(lat, la), min(bw, ba)
    return compute + ITERS * (len(pools) - 1) * (lat / 1000.0 + HALO_MB * 8.0 / bw)


def select(s, speed, links, work, scale, slack):
    """The (end, start, config, T) that completes first, from the session's view (T in real
    seconds: the model's time divided by `scale`)."""
    points = sorted({st["from"] for cap in s.view.values() for st in cap} | {s.now})
    best = None
    for t in points:
        for k in range(1, len(s.pools) + 1):
            for subset in itertools.combinations(s.pools, k):
                # Start with what is free at t; shrink to what stays free over the run.
                config = {p: s.min_free(p, t, 1) for p in subset}
                for _ in range(4):
                    if any(n <= 0 for n in config.values()):
                        config = None
                        break
                    dur = int(run_time(config, speed, links, work) / scale * 1000 * slack)
                    fits = {p: s.min_free(p, t, dur) for p in subset}
                    if fits == config or all(fits[p] >= config[p] for p in subset):
                        break
                    config = fits
                if not config:
                    continue
                secs = run_time(config, speed, links, work) / scale
                end = t + secs * 1000
                if best is None or end < best[0]:
                    best = (end, t, config, secs)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", default=os.environ.get("ESCHED_SOCKET"))
    ap.add_argument("--work", type=float, default=20000.0, help="node-seconds at speed 1")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="divide the modelled times by this (a demo in seconds)")
    ap.add_argument("--slack", type=float, default=1.2, help="requested / modelled time")
    a = ap.parse_args()
    if not a.socket:
        sys.exit("cem.py: error: give --socket or set ESCHED_SOCKET")
    s = Session(a.socket, name="cem")
    speed = {c["pool"]: c["speed"] for c in s.clusters_info()}
    links = {(l["a"], l["b"]): (l["latency_ms"], l["bandwidth_mbps"])
             for l in s.inter_cluster_info()}
    chosen = {}

    def on_view(view, now):
        best = select(s, speed, links, a.work, a.time_scale, a.slack)
        if best is None:
            return None
        end, start, config, secs = best
        if config == chosen.get("config"):
            return None
        chosen.update(config=config, secs=secs)
        print("view at %s: %s, start +%.1fs, runs %.1fs" %
              (clock(now), config, (start - now) / 1000, secs), flush=True)
        return config, int(secs * 1000 * a.slack) + 1000

    try:
        start = s.run(on_view)
    except Ended as e:
        sys.exit("cem.py: error: session ended: %s" % e)
    print("started job %d on %s" % (s.job, "; ".join(
        "%s: %s" % (p["pool"], ",".join(p["nodes"])) for p in start["pools"])), flush=True)
    time.sleep(chosen.get("secs", 0))
    s.done()
    print("done (%d frames, %d bytes)" % (s.frames, s.bytes), flush=True)


if __name__ == "__main__":
    main()
