// Reading a snapshot back, with every check done before anything is used:
// the file is a solver state (not a .caffemodel or something else), it is
// complete (checksum), its weights file exists, and the weights are the ones
// written with it.
#pragma once

#include <string>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// A .solverstate (binary, Caffe's or ours) or .solverstate.h5. Throws
// xtrain::Error saying what the file is if it is not a usable solver state.
SolverState read_solver_state_file(const std::string& path);

// The weights file a state names. The path was written relative to the
// training's working directory and the pair may have moved since, so it is
// also looked for next to the state. Throws xtrain::Error listing the places
// tried if it is nowhere.
std::string locate_learned_net(const SolverState& state, const std::string& state_path);

// Throws xtrain::Error if `weights_path` is damaged or is not the file
// written with `state` (size and CRC-32 recorded in the state; for states
// without them, the file's own checksum and that it parses as a net).
void check_weights_belong_to_state(const std::string& weights_path, const SolverState& state,
                                   const std::string& state_path);

}  // namespace xtrain
