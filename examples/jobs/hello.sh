#!/bin/sh
# The smallest job: runs on one node for at most five minutes.
#ESUB -J hello
#ESUB -N 1
#ESUB -t 5
#ESUB -o hello-%j.out
echo "job $ESCHED_JOB_ID ($ESCHED_JOB_NAME) on $ESCHED_NODELIST in pool $ESCHED_POOL"
echo "submitted from $ESCHED_SUBMIT_DIR"
