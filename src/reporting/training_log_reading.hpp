// Reading a training's curves back from its log: a BVLC Caffe log or an
// xtrain one (the same glog lines), as MetricsRecords for the report.
//
// The lines read are the ones Caffe's tools/extra/parse_log.py reads:
//   I1121 10:00:00.000000  1234 solver.cpp:204] Solving LeNet
//   ... Iteration 100 (2.5 iter/s, 40s/100 iters), loss = 0.3   (or "Iteration 100, loss = 0.3")
//   ...     Train net output #0: loss = 0.3 (* 1 = 0.3 loss)
//   ... Iteration 100, lr = 0.00992565
//   ... Iteration 500, Testing net (#0)
//   ...     Test net output #0: accuracy = 0.98
// and, when present, the solver's parameters after "Initializing solver
// from parameters:", "Use <device>.", the snapshot files written, and
// xtrain's "    Progress: ..., N images/s" line.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "xtrain/training_report.hpp"  // TrainingLog, read_training_log_file

namespace xtrain {

// Throws xtrain::Error naming "name:line" for a curve line whose value is
// not a number, and when the log has no training or test lines at all.
TrainingLog read_training_log(std::istream& log, const std::string& name);

}  // namespace xtrain
