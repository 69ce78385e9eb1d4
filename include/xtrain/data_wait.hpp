// Data wait: the time a net spent blocked because its input was not ready.
//
// A layer that hands out batches prepared by other threads (Data, ImageData)
// measures how long its forward waited for the next batch. The solver shows
// the share of wall time spent so between two displays ("Data wait: 0.8% of
// the time since the last display"), and `xtrain time` prints it per layer:
// a share well above a few percent means training is starved by the reader
// (raise data_param.decode_threads or prefetch, or store unencoded records).
//
// Layers opt in by also deriving from DataWaitReporter; nothing in Layer
// changes, and a net without such layers reports nothing.
#pragma once

#include "xtrain/export.hpp"

namespace xtrain {

class Layer;
class Net;

class XTRAIN_API DataWaitReporter {
 public:
  virtual ~DataWaitReporter() = default;
  // Seconds forward() spent waiting for data since the previous call (or
  // since the layer was created), and starts counting again from zero.
  virtual double take_data_wait_seconds() = 0;
};

// The reporter behind `layer`, or null.
XTRAIN_API DataWaitReporter* data_wait_reporter(Layer& layer);

// Whether any layer of `net` reports data wait.
XTRAIN_API bool reports_data_wait(const Net& net);

// The sum of take_data_wait_seconds() over the reporting layers of `net`.
XTRAIN_API double take_data_wait_seconds(const Net& net);

}  // namespace xtrain
