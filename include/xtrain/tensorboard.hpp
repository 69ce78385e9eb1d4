// TensorBoard curves of a training, written by xtrain itself (no TensorFlow):
// `xtrain train --tensorboard=DIR`, the Python solvers' tensorboard=DIR, or
// this observer added to any Solver. Then `tensorboard --logdir DIR`.
//
// What the event file in DIR holds, at each step (the iteration):
//   every display    train/loss (smoothed, as the log prints it), train/outputs/<name>
//                    for each train net output, solver/learning_rate,
//                    solver/loss_scale (1 without loss scaling),
//                    solver/skipped_updates (with loss scaling),
//                    speed/images_per_second, speed/iterations_per_second,
//                    speed/data_wait_share, and for each learnable parameter
//                    ("conv1/0" is conv1's weights, "conv1/1" its bias; a
//                    shared one by its name) weight_norm/<param> and
//                    gradient_norm/<param>: the L2 norms of its values and of
//                    the gradient of this iteration (unscaled, summed over
//                    iter_size, before clipping and weight decay)
//   every test       test/<output> (the second test net's test1/<output>, ...)
//   every snapshot   histograms weights/<param> of each learnable parameter
// A resumed run marks its restart, so TensorBoard drops the points the first
// session wrote past the snapshot it resumed from. Lives in
// libxtrain_reporting, as the HTML report does.
#pragma once

#include <memory>
#include <string>

#include "xtrain/export.hpp"
#include "xtrain/solver.hpp"
#include "xtrain/training_observer.hpp"

namespace xtrain {

// An observer for `solver.add_observer(...)` that starts a new event file
// in `directory` (created if missing) and writes to it as training goes,
// reading the norms and histograms from `solver`'s train net (so `solver`
// must outlive it). Throws xtrain::Error naming the directory if the file
// cannot be made; a file that stops being writable later is one warning, and
// training goes on.
XTRAIN_API std::shared_ptr<TrainingObserver> make_tensorboard_recorder(const std::string& directory,
                                                                       const Solver& solver);

}  // namespace xtrain
