#!/bin/sh
# An evolving job (Klein & Pérez): 4 nodes for 500 s, then 8 nodes for an hour. The steps
# are stored with the job and used by policies that plan evolving requests (the `evolving`
# plugin); rigid policies see the job as 8 nodes for 4100 s.
#ESUB -J evolving
#ESUB --profile 500:4,3600:8
echo "evolving job $ESCHED_JOB_ID started with $ESCHED_NNODES nodes"
