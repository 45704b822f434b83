#!/usr/bin/env bash
# A stand-in for `srun` inside a batch job, ONE task only, for trying the rest of a workflow
# tool while esched has no srun of its own (scripts/slurm-tools-e2e.sh uses it only with
# SLURM_TOOLS_SRUN_SHIM set). It takes the options submitit's script gives (--unbuffered,
# --output PAT, --error PAT, and -n/-N 1), expands srun's %j %J %A %a %t %n %s %N %x %u in
# the paths, sets the step variables of task 0 and execs the command, so that a signal the
# job's processes get reaches it.
set -euo pipefail
out= err= n=1
while [ $# -gt 0 ]; do
    case $1 in
        --unbuffered | -u) ;;
        --output | -o) out=$2; shift ;;
        --output=*) out=${1#*=} ;;
        --error | -e) err=$2; shift ;;
        --error=*) err=${1#*=} ;;
        -n | --ntasks | -N | --nodes) n=$2; shift ;;
        --ntasks=* | --nodes=*) n=${1#*=} ;;
        --) shift; break ;;
        -*) echo "srun (stand-in): option $1 not supported" >&2; exit 1 ;;
        *) break ;;
    esac
    shift
done
[ "$n" = 1 ] || { echo "srun (stand-in): only one task" >&2; exit 1; }
[ -n "${SLURM_JOB_ID:-}" ] || { echo "srun (stand-in): only inside a job" >&2; exit 1; }
step=0
expand() {
    local p=$1
    p=${p//%j/$SLURM_JOB_ID}
    p=${p//%J/$SLURM_JOB_ID.$step}
    p=${p//%A/${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}
    p=${p//%a/${SLURM_ARRAY_TASK_ID:-4294967294}}
    p=${p//%t/0}
    p=${p//%n/0}
    p=${p//%s/$step}
    p=${p//%N/${SLURMD_NODENAME:-$(hostname -s)}}
    p=${p//%x/${SLURM_JOB_NAME:-}}
    p=${p//%u/$(id -un)}
    printf '%s' "$p"
}
export SLURM_STEP_ID=$step SLURM_STEPID=$step SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0
export SLURM_NTASKS=1 SLURM_NPROCS=1 SLURM_STEP_NUM_TASKS=1 SLURM_STEP_NUM_NODES=1
export SLURM_STEP_NODELIST=${SLURM_JOB_NODELIST:-}
# srun's --open-mode defaults to $SLURM_OPEN_MODE, which sbatch --open-mode sets for the job
# (`a` or `t`), else truncate.
if [ "${SLURM_OPEN_MODE:-t}" = a ]; then
    if [ -n "$out" ]; then exec >>"$(expand "$out")"; fi
    if [ -n "$err" ]; then exec 2>>"$(expand "$err")"; elif [ -n "$out" ]; then exec 2>&1; fi
else
    if [ -n "$out" ]; then exec >"$(expand "$out")"; fi
    if [ -n "$err" ]; then exec 2>"$(expand "$err")"; elif [ -n "$out" ]; then exec 2>&1; fi
fi
exec "$@"
