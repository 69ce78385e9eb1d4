#!/bin/bash
# The same pattern without a scheduler, e.g. on a notebook VM that may be
# preempted: rerun until training ends with something other than 75 ("stopped
# early with a snapshot"). Ctrl-C stops xtrain with a snapshot (exit 75)
# and, since the loop would just resume, the trap ends the loop as well.
#   examples/preemptible/resubmit_loop.sh models/lenet/lenet_solver.prototxt
set -u
solver=${1:?usage: $0 SOLVER.prototxt [more xtrain train flags]}
shift
trap 'exit 130' INT
while :; do
  build/bin/xtrain train --solver="$solver" --snapshot=auto "$@"
  status=$?
  [ "$status" -eq 75 ] || exit "$status"
  echo "resuming from the newest snapshot..."
done
