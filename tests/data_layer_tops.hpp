// The two tops of a data layer (Data, HDF5Data, ...): the data and the labels.
#pragma once

#include "xtrain/blob.hpp"
#include "xtrain/layer.hpp"

namespace xtrain::testing {

struct DataAndLabelTops {
  Blob data;
  Blob label;
  BlobVec both() { return {&data, &label}; }
};

}  // namespace xtrain::testing
