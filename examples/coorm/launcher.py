#!/usr/bin/env python3
"""A CooRM launcher for batchd in plain Python (standard library only).

The protocol (docs/coorm.md, "Protocol"): frames of a 4-byte big-endian length and a JSON
payload on batchd's Unix socket; `Hello`, then `Subscribe`; batchd pushes `ChangeNotify`
(the view), `StartNotify` (the nodes) and `SessionEnded` between the answers to `Request`,
`ListClustersInfo`, `ListInterClusterInfo` and `Done`.

Used as a module, `Session` is the whole client (cem.py builds on it). Run as a program, it
asks for NODES nodes of one pool for DURATION seconds, on whichever subscribed pool its view
says frees them first, updates that choice as the view changes, then runs COMMAND (default: a
sleep of the work time) with ESCHED_NODES set, and says `done`:

    python3 launcher.py --socket /run/esched.sock --nodes 4 --duration 60 --work 5
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

PROTOCOL_VERSION = 1


def clock(ms):
    """`ms` since the epoch as a person reads it: local time of day, to the millisecond."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + ".%03d" % (ms % 1000)


class Ended(Exception):
    """The session ended without our `done` (killed at its duration, cancelled)."""


class DaemonError(RuntimeError):
    """batchd refused a call: `kind` is its error kind (`invalid_state`, ...)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class AlreadyStarted(Exception):
    """A `request` crossed the job's start: batchd started the previous request before it
    read this one. The StartNotify is on its way (`next_event` returns it); the launcher
    goes on with that start, as the Rust library's `Error::AlreadyStarted` says."""


class Session:
    """One launcher session: the view kept from ChangeNotify, requests, start, done."""

    def __init__(self, path, pools=(), min_nodes=0, name="launcher.py"):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.pushed = []  # frames pushed while we waited for an answer
        self.view = {}  # pool -> [{"from", "to", "free"}, ...]
        self.now = 0
        self.frames = 0
        self.bytes = 0
        hello = {"proto_version": PROTOCOL_VERSION, "software_version": "launcher.py"}
        self._send({"Hello": hello})
        self._expect(self._recv(), "Hello")
        self._send({"Subscribe": {"filter": {"pools": list(pools), "min_nodes": min_nodes},
                                  "name": name}})
        sub = self._expect(self._recv(), "Subscribed")
        self.job, self.pools = sub["job"], sub["pools"]

    # -- frames ---------------------------------------------------------------------------
    def _send(self, msg):
        data = json.dumps(msg).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)
        self.frames += 1
        self.bytes += 4 + len(data)

    def _read_exactly(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("batchd closed the session")
            buf += chunk
        return buf

    def _recv(self):
        (n,) = struct.unpack(">I", self._read_exactly(4))
        self.frames += 1
        self.bytes += 4 + n
        return json.loads(self._read_exactly(n))

    @staticmethod
    def _expect(frame, kind):
        if "Error" in frame:
            raise DaemonError(frame["Error"].get("kind"), frame["Error"]["message"])
        if kind not in frame:
            raise RuntimeError("expected %s, got %s" % (kind, list(frame)))
        return frame[kind]

    def _call(self, msg, kind):
        """Sends a request and returns its answer, keeping pushed frames for `next_event`."""
        self._send(msg)
        while True:
            frame = self._recv()
            if "ChangeNotify" in frame or "StartNotify" in frame:
                self.pushed.append(frame)
            elif "SessionEnded" in frame:
                raise Ended(frame["SessionEnded"]["reason"])
            else:
                return self._expect(frame, kind)

    # -- the paper's calls ----------------------------------------------------------------
    def clusters_info(self):
        return self._call({"ListClustersInfo": {}}, "ClustersInfo")

    def inter_cluster_info(self):
        return self._call({"ListInterClusterInfo": {}}, "InterClusterInfo")

    def request(self, pools, duration_ms):
        """pools: {name: nodes}. Keeps the job's place in the queue. An update that crosses
        the start raises AlreadyStarted."""
        req = {"pools": [{"pool": p, "nodes": n} for p, n in pools.items()],
               "duration_ms": int(duration_ms)}
        try:
            self._call({"Request": req}, "Requested")
        except DaemonError as e:
            if e.kind == "invalid_state":
                raise AlreadyStarted(self.job) from e
            raise

    def done(self):
        self._call({"Done": {}}, "DoneAck")
        self.sock.close()

    def next_event(self):
        """("view", changed pools) or ("start", StartNotify)."""
        frame = self.pushed.pop(0) if self.pushed else self._recv()
        if "ChangeNotify" in frame:
            c = frame["ChangeNotify"]
            self.now = c["now"]
            for ch in c["changes"]:
                if ch.get("cap") is not None:
                    self.view[ch["pool"]] = ch["cap"]
            return "view", [ch["pool"] for ch in c["changes"]]
        if "StartNotify" in frame:
            return "start", frame["StartNotify"]
        if "SessionEnded" in frame:
            raise Ended(frame["SessionEnded"]["reason"])
        raise RuntimeError("unexpected frame %s" % list(frame))

    def run(self, select):
        """Calls select(view, now) -> ({pool: nodes}, duration_ms) or None on every new view;
        returns the StartNotify."""
        while True:
            kind, what = self.next_event()
            if kind == "start":
                return what
            choice = select(self.view, self.now)
            if choice is not None:
                try:
                    self.request(*choice)
                except AlreadyStarted:
                    pass  # the StartNotify is the next event

    # -- reading a view -------------------------------------------------------------------
    def min_free(self, pool, start, duration_ms):
        end = start + duration_ms
        free = [s["free"] for s in self.view.get(pool, [])
                if (s["to"] is None or s["to"] > start) and s["from"] < end]
        return min(free) if free else 0

    def earliest_start(self, wants, duration_ms):
        """First change point where every {pool: nodes} of `wants` stays free long enough."""
        points = sorted({s["from"] for cap in self.view.values() for s in cap} | {self.now})
        for t in points:
            if all(self.min_free(p, t, duration_ms) >= n for p, n in wants.items()):
                return t
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", default=os.environ.get("ESCHED_SOCKET"), required=False)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--duration", type=float, required=True, help="seconds requested")
    ap.add_argument("--work", type=float, default=None, help="seconds of sleep (default: half)")
    ap.add_argument("--pool", action="append", default=[], help="subscribe to these pools only")
    ap.add_argument("command", nargs="*", help="run this instead of sleeping")
    a = ap.parse_args()
    if not a.socket:
        sys.exit("launcher.py: error: give --socket or set ESCHED_SOCKET")
    duration_ms = int(a.duration * 1000)
    s = Session(a.socket, pools=a.pool)
    print("job %d subscribed to %s" % (s.job, ", ".join(s.pools)), flush=True)

    def select(view, now):
        # The pool that frees NODES nodes first; a request larger than every pool still goes
        # in (it waits for ever, as CooRM says), on the largest pool.
        best = None
        for p in s.pools:
            t = s.earliest_start({p: a.nodes}, duration_ms)
            if t is not None and (best is None or t < best[0]):
                best = (t, p)
        pool = best[1] if best else s.pools[0]
        print("view at %s: request %d nodes of %s" % (clock(now), a.nodes, pool), flush=True)
        return {pool: a.nodes}, duration_ms

    try:
        start = s.run(select)
    except Ended as e:
        sys.exit("launcher.py: error: session ended: %s" % e)
    nodes = [n for p in start["pools"] for n in p["nodes"]]
    print("started on %s" % ",".join(nodes), flush=True)
    env = dict(os.environ, ESCHED_NODES=",".join(nodes), ESCHED_JOB_ID=str(s.job))
    if a.command:
        rc = subprocess.call(a.command, env=env)
    else:
        time.sleep(a.work if a.work is not None else a.duration / 2)
        rc = 0
    s.done()
    print("done (%d frames, %d bytes)" % (s.frames, s.bytes), flush=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
