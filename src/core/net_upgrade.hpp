// The individual upgrade steps of old Caffe nets and solvers, which
// xtrain/net_upgrade.hpp's upgrade_*_as_needed run in Caffe's order (the
// formats and the order are described there).
#pragma once

#include <string>
#include <vector>

#include "xtrain/net_upgrade.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Caffe's type name for a legacy solver_type value ("Nesterov", "Adam", ...).
std::string solver_type_name(SolverParameter::SolverType type);

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
