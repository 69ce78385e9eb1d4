// Which activations a Net keeps channel-blocked (NetOptions::
// channel_blocked_activations; the layout is in channel_blocked_layout.hpp).
//
// A blob is kept blocked when its producer can write it so and everybody who
// reads it reads that layout, so no layer ever converts it:
//   - a reader that only passes the data on (Split, whose tops are views of
//     its bottom) counts through the readers of its tops;
//   - in-place layers (ReLU, BatchNorm, Scale) are readers that leave the
//     blob in the layout they found;
//   - a layer that computes all its blobs in one layout (Eltwise, Concat)
//     gets blocked bottoms only if its top is blocked too: any bottom of such
//     a layer whose top stays plain is kept plain, and the decision is
//     repeated until nothing changes;
//   - the net's outputs stay plain (the program reads them).
#pragma once

#include <vector>

namespace xtrain {

class Net;

// One flag per blob (indices into Net::blobs()), from the layers' answers
// (EngineHooks::reads_channel_blocked_bottom, can_write_channel_blocked_top,
// tops_share_bottom_data, computes_in_one_layout) for the net as set up.
std::vector<bool> plan_channel_blocked_blobs(const Net& net);

}  // namespace xtrain
