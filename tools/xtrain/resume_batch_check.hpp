// Resuming on another number of ranks or GPUs: the snapshot's data position
// counts the records of the whole job, so a resumed job reads on where the
// old one stopped only if it takes as many images per update (ranks x batch x
// iter_size). 3 ranks x 8 x iter_size 2 = 48 resume as 2 ranks x 8 x
// iter_size 3 = 48 with the same updates; 2 x 8 x 2 = 32 would train another
// schedule (and learning rate per image) without a word, so it is refused
// with the iter_size that keeps the 48.
#pragma once

#include <string>

#include "xtrain/net.hpp"

namespace xtrain::cli {

// Throws xtrain::Error if `resume_file` (a .solverstate) was written by a job
// of another number of images per update than `replicas` x the train net's
// batch x `iter_size`. Snapshots without data positions (Caffe's, HDF5) pass.
void check_resume_keeps_the_batch(const std::string& resume_file, const Net& train_net,
                                  int replicas, int iter_size, const std::string& replica);

}  // namespace xtrain::cli
