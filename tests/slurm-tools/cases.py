"""The cases of scripts/slurm-tools-e2e.sh: submitit and dask-jobqueue, used as their users use
them, against the Slurm command names first on PATH (a real batchd behind them).

    python cases.py --work DIR [--batchd-log FILE] [CASE...]

Each case has a time budget of its own; on a failure it prints what the job left (submission
script, logs) and what sacct and squeue say, then the next case runs. The exit status is the
number of failed cases (0: all passed).
"""

import argparse
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import submitit
import submitit.helpers

# ---- what the jobs run (this module is __main__, so cloudpickle sends these by value) ------


def add(a, b):
    return a + b


def square(x):
    return x * x


def whereami():
    """What submitit's job environment reads from the variables Slurm sets for a task."""
    import os

    env = submitit.JobEnvironment()
    return {
        "job_id": env.job_id,
        "num_tasks": env.num_tasks,
        "num_nodes": env.num_nodes,
        "global_rank": env.global_rank,
        "local_rank": env.local_rank,
        "node": env.node,
        "hostnames": list(env.hostnames),
        "step_id": os.environ.get("SLURM_STEP_ID"),
    }


class SleepsUntilRequeued(submitit.helpers.Checkpointable):
    """Its first run waits for the time-limit signal; submitit checkpoints it (this object,
    with `runs` as it is then) and requeues the job; the rerun returns at once."""

    def __init__(self):
        self.runs = 0

    def __call__(self, seconds):
        self.runs += 1
        if self.runs == 1:
            time.sleep(seconds)
            return -1  # the signal never came
        return self.runs


# ---- helpers ---------------------------------------------------------------------------


class CaseTimeout(Exception):
    pass


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return f"$ {' '.join(cmd)}  (exit {p.returncode})\n{p.stdout}{p.stderr}"


def wait_done(job, seconds):
    """submitit's own wait (result file, else sacct through its watcher), bounded."""
    deadline = time.time() + seconds
    while not job.done():
        if time.time() > deadline:
            state = job.watcher.get_state(job.job_id, mode="force")
            raise CaseTimeout(f"job {job.job_id} not done after {seconds} s (sacct state {state!r})")
        time.sleep(0.5)


def final_state(job, want, seconds=15):
    """The state submitit reads from `sacct -o JobID,State,NodeList --parsable2 -j ID`, once
    the job's processes are gone."""
    deadline = time.time() + seconds
    while True:
        state = job.watcher.get_state(job.job_id, mode="force")
        if state == want or time.time() > deadline:
            return state
        time.sleep(0.5)


def executor(folder, **params):
    """submitit's defaults (5 minutes, USR2 90 s before the end) unless `params` says."""
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    ex.update_parameters(**params)
    return ex


def show_folder(folder):
    out = []
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and p.suffix in (".sh", ".out", ".err", ".log"):
            text = p.read_text(errors="replace")
            out.append(f"--- {p} ---\n{text[-3000:]}")
    return "\n".join(out)


# ---- the cases -------------------------------------------------------------------------


def case_submitit_one(work):
    folder = work / "submitit-one" / "%j"
    ex = executor(folder)
    job = ex.submit(add, 2, 3)
    where = ex.submit(whereami)
    print(f"  jobs {job.job_id} {where.job_id}")
    wait_done(job, 60)
    assert job.result() == 5, job.result()
    state = final_state(job, "COMPLETED")
    assert state == "COMPLETED", f"sacct state {state!r}, want COMPLETED"
    # One task of one node, as srun starts it in a job of one node: the first step (0),
    # SLURM_JOB_NODELIST the node sacct shows.
    wait_done(where, 60)
    got = where.result()
    node = where.get_info().get("NodeList")
    want = {"job_id": where.job_id, "num_tasks": 1, "num_nodes": 1, "global_rank": 0,
            "local_rank": 0, "node": 0, "hostnames": [node], "step_id": "0"}
    assert got == want, f"job environment {got}, want {want}"
    return folder.parent


def case_submitit_array(work):
    folder = work / "submitit-array" / "%j"
    jobs = executor(folder).map_array(square, [1, 2, 3])
    print(f"  jobs {[j.job_id for j in jobs]}")
    for j in jobs:
        wait_done(j, 60)
    got = [j.result() for j in jobs]
    assert got == [1, 4, 9], got
    states = [final_state(j, "COMPLETED") for j in jobs]
    assert states == ["COMPLETED"] * 3, f"sacct states {states}"
    return folder.parent


def case_submitit_requeue(work):
    folder = work / "submitit-requeue" / "%j"
    # A one-minute limit and USR2 50 s before it: the signal comes 10 s in.
    ex = executor(folder, timeout_min=1, slurm_signal_delay_s=50)
    job = ex.submit(SleepsUntilRequeued(), 120)
    print(f"  job {job.job_id}")
    wait_done(job, 100)
    assert job.result() == 2, f"result {job.result()}, want 2 (the rerun after the requeue)"
    state = final_state(job, "COMPLETED")
    assert state == "COMPLETED", f"sacct state {state!r}, want COMPLETED"
    # submitit logs this line once `scontrol requeue` has returned 0 inside the job. Had the
    # requeue's SIGTERM killed scontrol first, submitit's handler would have raised and, in
    # the first run, written an error result that the client may read before the rerun's.
    log = job.paths.stdout.read_text(errors="replace") if job.paths.stdout.exists() else ""
    assert "Requeued job" in log, "the job's log has no 'Requeued job' line"
    return folder.parent


def case_dask_map(work):
    from dask.distributed import Client
    from dask_jobqueue import SLURMCluster

    logs = work / "dask-logs"
    # interface="lo": scheduler and workers talk over the loopback, so the case needs no
    # network beyond this machine.
    with SLURMCluster(
        cores=2,
        processes=1,
        memory="512MB",
        walltime="00:05:00",
        interface="lo",
        log_directory=str(logs),
        death_timeout=30,
    ) as cluster:
        print("  job script:\n" + "\n".join("    " + line for line in cluster.job_script().splitlines()))
        cluster.scale(jobs=2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=60)
            futures = client.map(square, range(10))
            got = client.gather(futures)
            assert sum(got) == 285, got
            workers = client.scheduler_info()["workers"]
            assert len(workers) == 2, f"{len(workers)} workers"
        ids = [j.job_id for j in cluster.workers.values()]
        print(f"  worker jobs {ids}")
    # The cluster's close ran `scancel ID` for each worker job: CANCELLED, as in Slurm.
    deadline = time.time() + 15
    while True:
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(ids)],
                             capture_output=True, text=True).stdout
        states = dict(line.split("|", 1) for line in out.splitlines() if "|" in line)
        if all(states.get(i, "").startswith("CANCELLED") for i in ids) or time.time() > deadline:
            break
        time.sleep(0.5)
    assert all(states.get(i, "").startswith("CANCELLED") for i in ids), f"sacct: {states}"
    return logs


CASES = {
    "submitit-one": (case_submitit_one, 75),
    "submitit-array": (case_submitit_array, 75),
    "submitit-requeue": (case_submitit_requeue, 110),
    "dask-map": (case_dask_map, 90),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--batchd-log", type=Path)
    ap.add_argument("cases", nargs="*", metavar="CASE", help=", ".join(CASES))
    args = ap.parse_args()
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; cases: {', '.join(CASES)}")

    def on_alarm(signum, frame):
        raise CaseTimeout("case budget exceeded")

    signal.signal(signal.SIGALRM, on_alarm)
    failed = []
    for name in names:
        fn, budget = CASES[name]
        t0 = time.time()
        print(f"== {name}", flush=True)
        signal.alarm(budget)
        try:
            fn(args.work)
            signal.alarm(0)
            print(f"PASS {name} ({time.time() - t0:.1f} s)", flush=True)
        except BaseException as e:  # noqa: BLE001 - every failure is reported, then the next case
            signal.alarm(0)
            if isinstance(e, KeyboardInterrupt):
                raise
            failed.append(name)
            print(f"FAIL {name} ({time.time() - t0:.1f} s): {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=4, file=sys.stdout)
            print(show_folder(args.work / (name if name != "dask-map" else "dask-logs")))
            print(run(["squeue"]))
            print(run(["sacct", "-o", "JobID,JobName,State,ExitCode,Reason", "-P"]))
            if args.batchd_log and args.batchd_log.exists():
                tail = args.batchd_log.read_text(errors="replace").splitlines()[-30:]
                print("--- batchd log (end) ---\n" + "\n".join(tail))
            sys.stdout.flush()
    print(f"slurm-tools-e2e: {len(names) - len(failed)} passed, {len(failed)} failed"
          + (f": {' '.join(failed)}" if failed else ""))
    return len(failed)


if __name__ == "__main__":
    sys.exit(main())
