// Sharing activation storage between blobs whose lifetimes do not overlap.
//
// A Net keeps every blob's data and diff for its whole life, but most of them
// are needed for a part of each iteration only:
//   - diffs, in a net that runs backward: an intermediate blob's diff is
//     first written by the backward of its consumer and last read by the
//     backward of its producer; before and after, nobody looks at it (forward
//     never does), so the backward pass needs only a few diffs at a time;
//   - data, in a TEST net (which then runs forward only): a blob's values
//     are needed from its producer's forward to its last consumer's forward;
//   - data, in a training net on the CPU: the same, extended to the last
//     backward that touches them (EngineHooks::backward_touches_*_data). Most
//     backward passes read their bottoms' values, but not all: in ResNet the
//     output of a Convolution -> BatchNorm -> Scale chain that feeds an
//     Eltwise sum is dead once the sum is computed (BatchNorm and Scale
//     keep the normalised values they need);
//   - data, in a training net on the CPU, whose last writer in forward can
//     write it again (EngineHooks::can_recompute_top: Scale + ReLU after a
//     BatchNorm whose copy it reads; an Eltwise sum + ReLU whose bottoms
//     can be had again): live from forward to its last forward reader, then
//     again from the first backward that touches it, when the Net has the
//     layer recompute it (NetMemoryPlan::recomputes). A recomputation that
//     reads bottoms dead by then has them recomputed first, at the same step
//     (they live for that step only, unless backward needs them later). In
//     ResNet that frees, between the two passes, the values of every
//     Convolution -> BatchNorm -> Scale -> ReLU chain that feeds the next
//     convolution and every block's output (the sum of a Scale output and
//     the block before, or of two Scale outputs), stage by stage.
// The plan walks that schedule once, at Net setup, and finds each storage
// unit's live interval [first step, last step]. In a net on the CPU the
// units then get places in one arena per part (data, diffs), largest first,
// each at the offset that leaves the smallest gap among the units live at
// the same time (so units of different sizes fit side by side; the arena
// comes close to the most bytes live at any one step). On a GPU, where
// storage cannot be a view into another's, units whose intervals are
// disjoint go into one buffer instead, first-fit in order of decreasing size
// (each buffer as large as its largest unit).
//
// Left alone, so that nobody sees another blob's values:
//   - the net's inputs and outputs, loss blobs (their diff holds the loss
//     weight), and blobs the program names in NetOptions::keep_blobs;
//   - storage written during setup (it holds something: a constant DummyData
//     top, a loss weight);
//   - storage a layer also holds outside the net's blobs (SoftmaxWithLoss's
//     second top is its own prob_, for instance): the plan replaces storage
//     only when the net's blobs are all that refer to it;
//   - a diff whose first use in backward is a read: it has to stay zero (the
//     top of a Split that feeds a layer which does not propagate down).
// Blobs that share storage already (in-place tops, a Split's tops and its
// bottom's data, Flatten and Reshape) form one unit and stay together.
//
// In a net that stores its activations in bf16 or fp16 (xtrain/precision.hpp),
// a training net's values that wait from forward to backward -- neither
// recomputed nor read by a recomputation -- wait in 16 bits: the Net packs
// them after their last forward reader into a place of the arena half their
// size, their own place serves others meanwhile, and it unpacks them before
// their first backward use (NetMemoryPlan::packs). They are of the type
// already, so packing loses nothing: the iteration computes the same bits.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/net_memory_placement.hpp"
#include "xtrain/precision.hpp"

namespace xtrain {

class Net;

struct NetMemoryPlan {
  // One shared buffer: its size and the blobs (indices into Net::blobs())
  // that keep their data or diff in it.
  struct Buffer {
    std::size_t bytes = 0;
    std::vector<int> blobs;
    // Where it starts in its part's arena; -1 for storage of its own.
    std::ptrdiff_t offset = -1;
  };
  std::vector<Buffer> diff_buffers;  // TRAIN nets
  std::vector<Buffer> data_buffers;  // TEST nets (then forward only), TRAIN nets on the CPU
  // The arenas the buffers with an offset lie in (0: none).
  std::size_t diff_arena_bytes = 0;
  std::size_t data_arena_bytes = 0;
  // The storage the shared units took before, and what the buffers take.
  std::size_t unshared_bytes = 0;
  std::size_t shared_bytes = 0;
  // Layer `layer` recomputes its tops just before the backward of layer
  // `before_backward_of` (see above); those of one step in forward order.
  struct Recompute {
    int layer = -1;
    int before_backward_of = -1;
  };
  std::vector<Recompute> recomputes;
  // A unit of 16-bit values packed between the passes (see above): `values`
  // floats of blob `blob`'s storage, packed after the forward of layer
  // `after_forward_of` to `packed_offset` in the data arena and unpacked
  // before the backward of layer `before_backward_of`.
  struct Pack {
    int blob = -1;
    NumberType type = NumberType::kFloat32;
    std::size_t values = 0;
    std::ptrdiff_t packed_offset = -1;
    int after_forward_of = -1;
    int before_backward_of = -1;
  };
  std::vector<Pack> packs;
};

// Gradients in place (EngineHooks::top_whose_gradient_storage_bottom_may_use):
// the gradient of blob `bottom`, a bottom of layer `layer`, computed in the
// storage of the gradient of its top blob `top`. Chosen where the plan may
// share both and the layer's backward is the last step that touches the
// top's gradient and the first that touches the bottom's: one storage then
// serves both, one after the other, and the step needs one value fewer (in
// ResNet, a Split's sum or an Eltwise sum's backward: three gradients of a
// stage's largest size at once, two in place). Applied before the plan is
// made, so that the plan sees the two as one unit.
struct GradientInPlace {
  int layer = -1;
  int bottom = -1;
  int top = -1;
};
// In backward order, the order to apply them in (a chain -- an Eltwise sum
// whose bottom is a Split's top -- ends in one storage).
std::vector<GradientInPlace> plan_gradients_in_place(const Net& net,
                                                     const std::vector<std::string>& keep_blobs);
void apply_gradients_in_place(const Net& net, const std::vector<GradientInPlace>& in_place);

// What applying a plan made that the Net needs later: the data arena (the
// packed values' home), kept alive by this too.
struct AppliedNetMemoryPlan {
  std::shared_ptr<void> data_arena;
  char* data_arena_host = nullptr;
};

// The plan for `net` as it is after setup; touches nothing.
NetMemoryPlan plan_net_memory(const Net& net, const std::vector<std::string>& keep_blobs);
// Gives the blobs of each buffer one fresh (lazily allocated) storage.
AppliedNetMemoryPlan apply_net_memory_plan(const Net& net, const NetMemoryPlan& plan);

}  // namespace xtrain
