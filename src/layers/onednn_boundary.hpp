// The boundary between the arrays a caller keeps (plain NCHW, or xtrain's
// channel-blocked layout) and the layouts oneDNN's convolution primitives
// want: handed over directly when they agree, else reordered through
// per-thread scratch memory. Used by onednn_convolution.cpp only.
#pragma once

#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <utility>

#include "xtrain/error.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain::onednn {

using dnnl::memory;

// The one CPU engine every primitive runs on.
const dnnl::engine& cpu_engine();

// Builds an engine of ours over oneDNN primitives (`what`: "convolution",
// "bf16 inner product"), or null with the reason in *why_not: oneDNN's
// refusal of the descriptors, or the engine's own why_not() (a pass that
// has only oneDNN's reference kernel, far slower than the alternatives).
template <typename Engine, typename... Arguments>
std::unique_ptr<Engine> make_engine_or_say_why_not(std::string* why_not, const char* what,
                                                   Arguments&&... arguments) {
  try {
    auto engine = std::make_unique<Engine>(std::forward<Arguments>(arguments)...);
    *why_not = engine->why_not();
    if (!why_not->empty()) return nullptr;
    return engine;
  } catch (const dnnl::error& error) {
    *why_not = std::string("oneDNN cannot build this ") + what + ": " + error.what();
    return nullptr;
  }
}

// Arrays of one role never meet in one primitive call, and a Boundary's
// scratch holds nothing from one call to the next, so every convolution a
// thread runs shares one buffer per role: the blocked copies of activations
// cost the largest layer's size once, not once per layer (ResNet-50 has 53).
enum Role {
  kSourceRole,
  kDestinationRole,
  kSourceDiffRole,
  kWeightsRole,
  kWeightDiffRole,
  kBiasDiffRole,
  kPrimitiveScratchpadRole,  // oneDNN's own working memory (see user_scratchpad)
  kRoleCount
};

// `bytes` of 64-byte aligned scratch memory for `role`, this thread's own
// (valid until the next request of the role, or of a role it never meets
// in one call, on this thread).
void* scratch_memory(Role role, std::size_t bytes);

// Primitive attributes that leave the primitive's working memory (its
// scratchpad: the AMX kernels' accumulators, backward-weights' partial sums)
// to us, handed in at each call by scratchpad_argument(). oneDNN's default
// gives every primitive a scratchpad of its own for its whole life; here one
// per thread serves them all, as the reorder buffers do (ResNet-50 in bf16:
// 53 convolutions x 3 passes).
dnnl::primitive_attr user_scratchpad();

// Adds the scratchpad `pd` wants (if any) to a primitive call's arguments.
template <typename Arguments>
void add_scratchpad(const dnnl::primitive_desc_base& pd, Arguments* arguments) {
  const memory::desc desc = pd.scratchpad_desc();
  if (desc.get_size() == 0) return;
  arguments->emplace(DNNL_ARG_SCRATCHPAD,
                     memory(desc, cpu_engine(), scratch_memory(kPrimitiveScratchpadRole,
                                                               desc.get_size())));
}

// An array the caller keeps plain (NCHW, OIHW, ...) that a primitive wants in
// `wanted`: it is handed over directly when the layouts agree, or reordered
// through a scratch buffer. An accumulating output always goes through the
// scratch buffer and is added into the caller's array by a reorder with a
// sum post-op (oneDNN overwrites its outputs; Caffe adds gradients up).
class Boundary {
 public:
  Boundary(const memory::desc& plain, const memory::desc& wanted, Role role,
           bool accumulate = false)
      : user_(plain, cpu_engine(), DNNL_MEMORY_NONE),
        inner_(wanted, cpu_engine(), DNNL_MEMORY_NONE),
        role_(role),
        direct_(!accumulate && plain == wanted) {
    if (direct_) return;
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
      to_user_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), wanted, cpu_engine(), plain, attr));
    } else {
      to_inner_ =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), plain, cpu_engine(), wanted));
      to_user_ =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), wanted, cpu_engine(), plain));
    }
  }

  // As an input: the memory to pass to the primitive.
  const memory& in(const float* data, dnnl::stream& stream) {
    user_.set_data_handle(const_cast<float*>(data));
    if (direct_) return user_;
    bind_scratch();
    to_inner_->execute(stream, user_, inner_);
    return inner_;
  }

  // The memory the last in() handed over, still holding the array while
  // the role's scratch is not used again: a second primitive of the same
  // call can take it without another reorder.
  const memory& last_in() const { return direct_ ? user_ : inner_; }

  // As an output: the memory the primitive writes; finish() then moves it to
  // `data` (a null `data` drops the result).
  const memory& out(float* data) {
    user_.set_data_handle(data);
    if (direct_) return user_;
    bind_scratch();
    return inner_;
  }
  void finish(dnnl::stream& stream) {
    if (direct_ || user_.get_data_handle() == nullptr) return;
    to_user_->execute(stream, inner_, user_);
  }

 private:
  void bind_scratch() {
    inner_.set_data_handle(scratch_memory(role_, inner_.get_desc().get_size()));
  }

  memory user_;
  memory inner_;
  Role role_;
  bool direct_;
  std::optional<dnnl::reorder> to_inner_;
  std::optional<dnnl::reorder> to_user_;
};

// An activation array that the caller keeps plain or channel-blocked
// (nChw16c), call by call: one Boundary per layout, made on first use.
class ActivationBoundary {
 public:
  ActivationBoundary(const memory::desc& plain, const memory::desc& blocked,
                     const memory::desc& wanted, Role role)
      : plain_(plain), blocked_(blocked), wanted_(wanted), role_(role) {}

  Boundary& operator[](MemoryLayout layout) {
    const bool blocked = layout == MemoryLayout::kChannelBlocked;
    std::optional<Boundary>& boundary = blocked ? blocked_boundary_ : plain_boundary_;
    if (!boundary) {
      XTRAIN_ASSERT(!blocked || !blocked_.is_zero(), "no blocked layout for this array");
      boundary.emplace(blocked ? blocked_ : plain_, wanted_, role_);
    }
    return *boundary;
  }

 private:
  memory::desc plain_, blocked_, wanted_;
  Role role_;
  std::optional<Boundary> plain_boundary_, blocked_boundary_;
};

}  // namespace xtrain::onednn
