// Moved to core/hdf5_snapshot.hpp: Net reads .caffemodel.h5 weights, and
// core cannot include solvers (docs/architecture.md). This forwarder keeps
// fuzz/hdf5_snapshot_fuzzer.cpp building while fuzz/ is being changed on
// another branch; include core/hdf5_snapshot.hpp in new code.
#pragma once

#include "core/hdf5_snapshot.hpp"
