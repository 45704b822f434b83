#!/bin/sh
# A moldable job: 4 nodes for an hour or 8 nodes for 35 minutes; the policy picks one.
#ESUB -J moldable
#ESUB --moldable 4:60,8:35
echo "moldable job $ESCHED_JOB_ID runs on $ESCHED_NNODES nodes"
