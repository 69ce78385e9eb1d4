// Making sure a failed job ends even when its launcher cannot.
//
// After MPI_Abort, Open MPI's mpirun orders every node's daemon (orted) to
// stop its ranks and waits until each has reported. A node it cannot reach
// (its link cut, its switch port down) never reports, and mpirun waited
// for ever ("abort is already in progress"), as did that node's orted: the
// allocation burnt to its wall-time limit. So before a rank of a failed job
// calls MPI_Abort, it leaves behind a small watchdog process (outside its
// process group, so that the launcher's kill of the rank spares it) that
// waits `grace_seconds` for the rank's launcher process on this node -- mpirun
// itself on the node that started the job, the node's orted elsewhere -- to
// go away, and kills it with SIGKILL if it is still there. Killing mpirun
// ends the job for the batch system; the reachable daemons see mpirun gone
// and stop their ranks; the cut-off node's orted is killed by its own ranks'
// watchdogs. A launcher that ends the job in time is never touched.
#pragma once

namespace xtrain {

// The seconds a launcher gets to end the job after MPI_Abort.
constexpr double kLauncherGraceSeconds = 10;

// Starts the watchdog if an ancestor of this process (within a few levels)
// is a launcher process: mpirun, mpiexec, orterun, orted, prterun, prted.
// Also arms an alarm so that this process itself ends if MPI_Abort does not
// return or end it. Returns at once; never throws.
void guard_against_a_stuck_launcher(double grace_seconds = kLauncherGraceSeconds);

}  // namespace xtrain
