// Names in a net (of the net, its layers, blobs and parameters) have a
// length limit: a damaged or generated prototxt with a 100 MB name would
// otherwise be logged, stored in every .caffemodel and compared for hours.
#pragma once

#include <cstddef>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

constexpr std::size_t kLongestName = 1000;

// Throws xtrain::Error naming the first name longer than kLongestName: which
// layer (by position and the name's start) and which field.
void check_name_lengths(const NetParameter& net);

}  // namespace xtrain
