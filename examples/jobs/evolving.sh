#!/bin/sh
# An evolving job (Klein & Pérez): 2 nodes for a minute, 4 for two minutes, then 1 for 30 s.
# Under a policy that plans evolving requests (`evolving`; examples/configs/evolving.toml)
# batchd resizes it at each step boundary of its scheduled EP, rewrites $ESCHED_NODEFILE and
# $ESCHED_STEPFILE and sends it SIGWINCH; rigid policies (cbf, easy, fcfs) run it as 4 nodes
# for 210 s. docs/evolving.md, "Running evolving jobs", has the formats.
#ESUB -J evolving
#ESUB --evolving-profile 60:2,120:4,30:1

look() {
    [ -n "$ESCHED_STEPFILE" ] || return 0   # run as rigid: nothing to look at
    . "$ESCHED_STEPFILE"
    echo "$(date +%T) step $ESCHED_STEP/$ESCHED_STEPS $ESCHED_STEP_STATE on $ESCHED_STEP_NODELIST"
    if [ "$ESCHED_STEP_STATE" = releasing ] && [ -z "$chosen" ]; then
        # Keep the node we got last (where, say, this step's results are), free the others:
        # without this, batchd would free the nodes added last and keep the first.
        keep=$(tail -n 1 "$ESCHED_NODEFILE")
        free=$(grep -vx "$keep" "$ESCHED_NODEFILE" | head -n "$ESCHED_RELEASE_COUNT" | paste -sd, -)
        erelease "$free" && chosen=1
    fi
    [ "$ESCHED_STEP_STATE" = releasing ] || chosen=""
}

# The work is done a second before the last step's scheduled end, which is also the job's time
# limit: the job ends COMPLETED, not TIMEOUT. Run as rigid (no step file) it works for 200 s of
# its 210.
finished() {
    if [ -z "$ESCHED_STEPFILE" ]; then
        [ "$(date +%s)" -ge "$rigid_end" ]
        return
    fi
    . "$ESCHED_STEPFILE"
    [ "$ESCHED_STEP" = "$ESCHED_STEPS" ] && [ "$(date +%s%3N)" -ge $((ESCHED_STEP_END_MS - 1000)) ]
}

trap look WINCH
echo "evolving job $ESCHED_JOB_ID started with $ESCHED_NNODES nodes"
rigid_end=$(( $(date +%s) + 200 ))
look
# `sleep & wait`: the shell runs the trap as soon as the signal comes, not after the sleep.
until finished; do sleep 0.2 & wait $!; done
echo "evolving job $ESCHED_JOB_ID done"
