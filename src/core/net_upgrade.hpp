// Old Caffe files, upgraded to the current format when they are read.
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
// xtrain::Error naming the file and the layer.
#pragma once

#include <string>
#include <vector>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Runs every upgrade step `param` needs. `source` (a path, or a description
// such as "solver.prototxt (net_param)") names the file in messages. Returns
// whether anything changed; when `steps` is given, appends one line per step
// that ran, saying what was old (and one per V0 setting that was dropped).
bool upgrade_net_as_needed(const std::string& source, NetParameter* param,
                           std::vector<std::string>* steps = nullptr);
bool net_needs_upgrade(const NetParameter& param);

// Caffe's type name for a legacy solver_type value ("Nesterov", "Adam", ...).
std::string solver_type_name(SolverParameter::SolverType type);

// Same for solvers: the solver_type enum, and nets given inline
// (net_param, train_net_param, test_net_param).
bool upgrade_solver_as_needed(const std::string& source, SolverParameter* param,
                              std::vector<std::string>* steps = nullptr);
bool solver_needs_upgrade(const SolverParameter& param);

// --- The individual steps (upgrade_*_as_needed runs them in this order) ---

// Throws if `param` has both `layer` and `layers` entries: Caffe dropped the
// `layer` ones silently; we ask the user to choose.
void check_one_layer_format(const std::string& source, const NetParameter& param);

// V0 -> V1: V0 layers (the `layer` field inside `layers`) become V1 layers,
// and each "padding" layer is folded into the pad of the conv/pool after it.
// Settings a layer type has no place for are dropped, as Caffe did, with a
// warning; `dropped` (if given) gets one line for each.
bool net_needs_v0_to_v1_upgrade(const NetParameter& param);
void upgrade_v0_net(const std::string& source, NetParameter* param,
                    std::vector<std::string>* dropped = nullptr);

// V1 data layers (DATA, IMAGE_DATA, WINDOW_DATA): scale, mean_file,
// crop_size and mirror move from their *_data_param into transform_param.
bool net_needs_data_upgrade(const NetParameter& param);
void upgrade_net_data_transformation(NetParameter* param);

// V1 -> V2: `layers` (enum types, blobs_lr, weight_decay, ...) become `layer`
// (type strings, ParamSpec).
bool net_needs_v1_to_v2_upgrade(const NetParameter& param);
void upgrade_v1_net(const std::string& source, NetParameter* param);
// Caffe 1.0's type name for a V1 enum value; throws for NONE.
std::string v1_layer_type_name(V1LayerParameter::LayerType type);

// input/input_shape/input_dim -> an Input layer. Inputs without shapes
// (written into old .caffemodel files) are simply dropped.
bool net_needs_input_upgrade(const NetParameter& param);
void upgrade_net_input(NetParameter* param);

// BatchNorm layers with the 3 param specs old nets needed: their lr_mult and
// decay_mult become 0 (names are kept, so sharing still works).
bool net_needs_batch_norm_upgrade(const NetParameter& param);
void upgrade_net_batch_norm(NetParameter* param);

// solver_type enum -> type string. Setting both is an error (as in Caffe).
bool solver_needs_type_upgrade(const SolverParameter& param);
void upgrade_solver_type(const std::string& source, SolverParameter* param);

}  // namespace xtrain
