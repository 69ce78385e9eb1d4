// Old Caffe files, upgraded to the current format: what `xtrain upgrade`
// does to a file, and what an application that reads nets itself needs.
//
// Nets went through three layer formats: V0 (`layers { layer { type: "conv"
// ... } }`, with "padding" layers in front of convolutions), V1 (`layers {
// type: CONVOLUTION blobs_lr: 1 ... }`) and today's `layer { type:
// "Convolution" param { lr_mult: 1 } }`. Along the way data layers moved
// their scale/mean/crop/mirror settings into transform_param, nets replaced
// their input/input_dim fields by an Input layer, and BatchNorm layers
// stopped learning their statistics. Solvers replaced the solver_type enum
// by the type string.
//
// The upgrade steps follow Caffe 1.0's, in Caffe's order, so an old file
// gives the net Caffe would build from it. Each step that applies logs one
// WARNING naming the file; a file that cannot be upgraded throws
// xtrain::Error naming the file and the layer. The files read through
// xtrain/proto_io.hpp's read_*_params_* functions and Net are upgraded
// already; these are for messages read or built otherwise.
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Runs every upgrade step `param` needs. `source` (a path, or a description
// such as "solver.prototxt (net_param)") names the file in messages. Returns
// whether anything changed; when `steps` is given, appends one line per step
// that ran, saying what was old (and one per V0 setting that was dropped).
XTRAIN_API bool upgrade_net_as_needed(const std::string& source, NetParameter* param,
                                      std::vector<std::string>* steps = nullptr);
XTRAIN_API bool net_needs_upgrade(const NetParameter& param);

// Same for solvers: the solver_type enum, and nets given inline
// (net_param, train_net_param, test_net_param).
XTRAIN_API bool upgrade_solver_as_needed(const std::string& source, SolverParameter* param,
                                         std::vector<std::string>* steps = nullptr);
XTRAIN_API bool solver_needs_upgrade(const SolverParameter& param);

// Only the deprecated input fields (input, input_shape, input_dim) of a net
// become an equivalent Input layer, as Net does when it is built; for tools
// that read a deploy net without building it. Returns true if `param` used
// them (and rewrites it).
XTRAIN_API bool upgrade_net_inputs(NetParameter* param);

}  // namespace xtrain
