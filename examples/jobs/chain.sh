#!/bin/sh
# A chain of dependent jobs, the way one strings steps together with sbatch:
#   first=$(esubmit --parsable examples/jobs/hello.sh)
#   esubmit --dependency=afterok:$first examples/jobs/chain.sh
#ESUB -J second-step
#ESUB -N 2
#ESUB -t 0:30
#ESUB -o %x-%j.out
echo "step two of the chain, job $ESCHED_JOB_ID on $ESCHED_NNODES nodes: $ESCHED_NODELIST"
