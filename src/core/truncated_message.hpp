// Telling a protobuf file cut short from one of another kind.
//
// A .solverstate or .caffemodel whose copy or write was interrupted no longer
// parses, and "not a solver state" sends the user looking in the wrong place.
// Its fields up to the cut are still well formed, and the last one claims
// more bytes than are left.
#pragma once

#include <string>

#include <google/protobuf/descriptor.h>

namespace xtrain {

// Whether `bytes` are the start of a `type` message cut inside a field: at
// least one well-formed field of `type` (by number and wire type) first, then
// a field that runs past the end.
bool looks_cut_short(const std::string& bytes, const google::protobuf::Descriptor& type);

}  // namespace xtrain
