// Nets that declare their inputs with the deprecated NetParameter fields
// (input, input_shape, input_dim) get an equivalent Input layer instead.
#pragma once

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Returns true if `param` used the deprecated fields (and rewrites it).
bool upgrade_net_inputs(NetParameter* param);

}  // namespace xtrain
