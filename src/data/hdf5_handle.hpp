// Moved to core/hdf5_handle.hpp: the HDF5 weight files that Net reads use it
// too, and core cannot include data (docs/architecture.md). This forwarder
// keeps data/hdf5_file.cpp building while that file is being changed on
// another branch; include core/hdf5_handle.hpp in new code.
#pragma once

#include "core/hdf5_handle.hpp"
