#!/usr/bin/env python3
"""Reads an SWF file with pyss's own SWF parser and checks what esched writes in it.

Usage: scripts/pyss-read-swf.py PYSS_TARBALL SWF_FILE

pyss (../shared/tools/pyss) is Python 2 code, but its parser proper (`JobInput` and
`parse_lines` in src/base/workload_parser.py) is valid Python 3: that part of the file, up to
its Python-2-only benchmark helper, is taken from the archive unmodified and run here, so the
file is read exactly as pyss reads it. Every job's 18 fields go through pyss's accessors;
then each job is checked: wait, run time and processor counts are non-negative, the allocated
processors are at most MaxProcs, and a completed job ran no longer than it requested.
Prints `pyss: N jobs read` and exits non-zero on the first problem.
"""
import sys
import tarfile


def pyss_parser(tarball):
    with tarfile.open(tarball) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("src/base/workload_parser.py"))
        source = tar.extractfile(member).read().decode()
    parser_part = source.split("def _measure_performance")[0]
    scope = {}
    exec(compile(parser_part, member.name, "exec"), scope)
    return scope["parse_lines"]


def main():
    tarball, swf = sys.argv[1], sys.argv[2]
    parse_lines = pyss_parser(tarball)
    max_procs = None
    with open(swf) as f:
        lines = f.readlines()
    for line in lines:
        if line.startswith("; MaxProcs:"):
            max_procs = int(line.split(":")[1])
    jobs = list(parse_lines(iter(lines)))
    for j in jobs:
        fields = (j.number, j.submit_time, j.wait_time, j.run_time, j.num_allocated_processors,
                  j.average_cpu_time_used, j.used_memory, j.num_requested_processors,
                  j.requested_time, j.requested_memory, j.status, j.user_id, j.group_id,
                  j.executable_number, j.queue_number, j.partition_number,
                  j.preceding_job_number, j.think_time_from_preceding_job)
        problem = None
        if j.wait_time < 0 or j.run_time < 0 or j.num_allocated_processors <= 0:
            problem = "negative wait or run time, or no processors"
        elif max_procs is not None and j.num_allocated_processors > max_procs:
            problem = "more processors than MaxProcs"
        elif j.status == 1 and j.requested_time > 0 and j.run_time > j.requested_time:
            problem = "completed after its requested time"
        elif j.status not in (0, 1, 5):
            problem = "status not 0, 1 or 5"
        if problem:
            sys.exit("pyss-read-swf: job %d: %s: %r" % (j.number, problem, fields))
    if not jobs:
        sys.exit("pyss-read-swf: no job read")
    print("pyss: %d jobs read" % len(jobs))


if __name__ == "__main__":
    main()
