#!/usr/bin/env bash
# Data-parallel training on CPUs with MPI: one xtrain process ("rank") per
# CPU socket (or per machine), each with its share of the cores. Every rank
# reads its own slice of each global batch from the LMDB, the gradients are
# averaged over the ranks, and rank 0 tests, logs and writes the snapshots.
#
#   examples/multinode/train_cpu_ranks.sh RANKS THREADS_PER_RANK [xtrain train flags...]
#
# The global batch is RANKS x the solver's batch_size (x iter_size): halve
# batch_size when going from 1 rank to 2 to keep the same training. On
# several machines, add a hostfile (mpirun --hostfile hosts) and put the
# LMDB and the snapshot_prefix on a shared file system.
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks="${1:?ranks}"
threads="${2:?threads per rank}"
shift 2
# --bind-to socket keeps each rank's threads on one socket; --map-by
# socket:PE=threads gives each rank that many cores.
exec mpirun -np "$ranks" --map-by "socket:PE=$threads" --bind-to core \
  "${XTRAIN_BUILD_DIR:-build}/bin/xtrain" train --threads="$threads" "$@"
