// Reading a weights file (.caffemodel, Caffe's or ours, or .caffemodel.h5).
//
// In core because Net::copy_trained_layers_from needs it; the solvers use
// it too, when they resume (solvers/snapshot_reading.hpp checks a snapshot's
// weights against its state first).
#pragma once

#include <string>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// A .caffemodel or .caffemodel.h5 as a NetParameter (layers and blobs).
NetParameter read_weights_file(const std::string& path);

}  // namespace xtrain
