// Setting up a layer's learnable blobs (weights, bias, ...): keep the blobs
// that came with the layer (a deploy net with weights, a .caffemodel's layer)
// when their shapes fit, or create them and fill them by their fillers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

struct LearnableBlobSpec {
  const char* name;                // "weight", "bias": for messages
  std::vector<int> shape;
  const FillerParameter* filler;   // used when the blob is created
  const char* filler_field;        // "weight_filler": for messages
};

// `where` prefixes errors ("layer 'conv1' (Convolution)"); `shape_meaning`
// says what the dimensions are, to help the user fix a mismatch. Stored blobs
// with Caffe's old 4-d shapes (leading 1s) are accepted and reshaped.
void setup_learnable_blobs(const std::string& where, const std::vector<LearnableBlobSpec>& specs,
                           const std::string& shape_meaning,
                           std::vector<std::shared_ptr<Blob>>* blobs, RandomStream& random);

}  // namespace xtrain
