#include "layers/convolution_search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/per_pass_convolution.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using Layout = OnednnConvolutionOptions::Layout;
using Pass = ConvolutionPass;
constexpr std::array<Pass, kConvolutionPassCount> kPasses = {
    Pass::kForward, Pass::kBackwardData, Pass::kBackwardWeights};
constexpr std::array<Layout, 3> kOnednnLayouts = {Layout::kChosenByOnednn, Layout::kNhwc,
                                                   Layout::kNchw};
constexpr double kNever = std::numeric_limits<double>::infinity();

const char* layout_token(Layout layout) {
  switch (layout) {
    case Layout::kNhwc:
      return "nhwc";
    case Layout::kNchw:
      return "nchw";
    default:
      return "any";
  }
}

std::optional<Layout> parse_layout(const std::string& token) {
  for (Layout layout : kOnednnLayouts) {
    if (token == layout_token(layout)) return layout;
  }
  return std::nullopt;
}

// A 64-byte aligned float array of small pseudo-random values (the kernels'
// speed does not depend on them, but denormals and NaNs would distort it).
class TimingArray {
 public:
  explicit TimingArray(std::size_t count) {
    const std::size_t bytes = (std::max<std::size_t>(count, 1) * sizeof(float) + 63) / 64 * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    XTRAIN_CHECK(data_ != nullptr, "out of memory: timing a convolution needs ", bytes,
                 " bytes more");
    std::uint32_t state = 12345;
    for (std::size_t i = 0; i < count; ++i) {
      state = state * 1664525u + 1013904223u;
      data_.get()[i] = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
  }
  float* get() const { return data_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
};

// Inputs and outputs of every pass of one shape.
struct TimingArrays {
  explicit TimingArrays(const ConvolutionShape& shape)
      : bottom(shape.num * shape.input_dim()),
        bottom_diff(shape.num * shape.input_dim()),
        top(shape.num * shape.output_dim()),
        top_diff(shape.num * shape.output_dim()),
        weights(shape.weight_count()),
        weight_diff(shape.weight_count()),
        bias(static_cast<std::size_t>(shape.num_output)),
        bias_diff(static_cast<std::size_t>(shape.num_output)) {}
  TimingArray bottom, bottom_diff, top, top_diff, weights, weight_diff, bias, bias_diff;
};

void run_pass(ConvolutionEngine& engine, Pass pass, const ConvolutionEngine::Layouts& layouts,
              const TimingArrays& a) {
  switch (pass) {
    case Pass::kForward:
      engine.forward_in(layouts, a.bottom.get(), a.weights.get(), a.bias.get(), a.top.get());
      return;
    case Pass::kBackwardData:
      engine.backward_in(layouts, a.bottom.get(), a.top_diff.get(), a.weights.get(), nullptr,
                         nullptr, a.bottom_diff.get());
      return;
    case Pass::kBackwardWeights:
      engine.backward_in(layouts, a.bottom.get(), a.top_diff.get(), a.weights.get(),
                         a.weight_diff.get(), a.bias_diff.get(), nullptr);
      return;
  }
}

// Seconds per call of one pass: the fastest of a few timed calls after one
// untimed call (which makes the kernel's buffers and warms the caches). A
// candidate whose first call already takes 4x the best so far is not timed
// further: it will not win.
double time_pass(ConvolutionEngine& engine, Pass pass, const ConvolutionEngine::Layouts& layouts,
                 const TimingArrays& arrays, double best_so_far) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const Clock::time_point first = Clock::now();
  run_pass(engine, pass, layouts, arrays);
  const double first_call = seconds_since(first);
  if (first_call > 4 * best_so_far) return first_call;
  // At least 3 calls and 20 ms; at most 15 calls or 0.3 s.
  double fastest = kNever, total = 0;
  for (int calls = 0; calls < 15 && total < 0.3 && (calls < 3 || total < 0.02); ++calls) {
    const Clock::time_point start = Clock::now();
    run_pass(engine, pass, layouts, arrays);
    const double seconds = seconds_since(start);
    fastest = std::min(fastest, seconds);
    total += seconds;
  }
  return fastest;
}

// The layouts at the layer's boundary when `engine` computes: channel-blocked
// where it computes in that layout (the Net then keeps its neighbours so),
// else plain.
ConvolutionEngine::Layouts boundary_layouts(const ConvolutionEngine& engine) {
  ConvolutionEngine::Layouts layouts;
  if (engine.accepts_channel_blocked() && engine.prefers_channel_blocked()) {
    layouts.top = MemoryLayout::kChannelBlocked;
    if (channels_can_be_blocked(engine.shape().geometry.channels)) {
      layouts.bottom = MemoryLayout::kChannelBlocked;
    }
  }
  return layouts;
}

bool is_plain(const ConvolutionEngine::Layouts& layouts) {
  return layouts.bottom == MemoryLayout::kPlain && layouts.top == MemoryLayout::kPlain;
}

// The fastest kernel per pass among oneDNN's for one activation layout, with
// GEMM where the boundary is plain; `best` holds the fastest times found so
// far per pass (for cutting hopeless candidates short) and is updated.
struct LayoutResult {
  ConvolutionChoice choice;
  double total = kNever;
};

std::optional<LayoutResult> search_layout(const ConvolutionShape& shape, Layout layout,
                                          const std::array<double, kConvolutionPassCount>& gemm,
                                          const TimingArrays& arrays,
                                          std::array<double, kConvolutionPassCount>& best) {
  OnednnConvolutionOptions options;
  options.activations = layout;
  std::string why_not;
  const std::unique_ptr<ConvolutionEngine> first = make_onednn_convolution(shape, options, &why_not);
  if (!first) return std::nullopt;
  const ConvolutionEngine::Layouts layouts = boundary_layouts(*first);

  LayoutResult result;
  result.choice.layout = layout;
  result.total = 0;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    double fastest = kNever;
    std::string fastest_kernel;
    for (const std::string& kernel : onednn_convolution_implementations(shape, layout, pass)) {
      OnednnConvolutionOptions one = options;
      one.implementations[p] = kernel;
      std::unique_ptr<ConvolutionEngine> engine = make_onednn_convolution(shape, one, &why_not);
      if (!engine || engine->kernel(pass) != kernel) continue;
      // The forward kernel decides the layout the Net keeps around the layer
      // (prefers_channel_blocked); one that would change it is another
      // layout's candidate, timed there.
      if (pass == Pass::kForward &&
          engine->prefers_channel_blocked() != first->prefers_channel_blocked()) {
        continue;
      }
      const double seconds = time_pass(*engine, pass, layouts, arrays, best[p]);
      if (seconds < fastest) {
        fastest = seconds;
        fastest_kernel = kernel;
      }
      best[p] = std::min(best[p], seconds);
    }
    if (is_plain(layouts) && gemm[p] < fastest) {
      fastest = gemm[p];
      fastest_kernel = ConvolutionChoice::kGemm;
    }
    if (fastest_kernel.empty()) return std::nullopt;
    result.choice.engines[p] = fastest_kernel;
    result.choice.seconds[p] = fastest;
    result.total += fastest;
  }
  return result;
}

}  // namespace

std::string ConvolutionChoice::to_string() const {
  std::string text = std::string("layout=") + layout_token(layout);
  for (Pass pass : kPasses) {
    text += std::string(" ") + xtrain::to_string(pass) + "=" + engines[static_cast<int>(pass)];
  }
  return text;
}

std::string ConvolutionChoice::describe() const {
  std::ostringstream text;
  text.precision(3);
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    text << (p > 0 ? ", " : "") << xtrain::to_string(pass) << " " << engines[p];
    if (seconds[p] > 0) text << " (" << seconds[p] * 1e3 << " ms)";
  }
  text << "; oneDNN layout " << layout_token(layout);
  return text.str();
}

std::optional<ConvolutionChoice> ConvolutionChoice::parse(const std::string& text) {
  std::istringstream words(text);
  std::string word;
  ConvolutionChoice choice;
  std::array<bool, kConvolutionPassCount> seen{};
  bool layout_seen = false;
  while (words >> word) {
    const std::size_t equals = word.find('=');
    if (equals == std::string::npos || equals + 1 == word.size()) return std::nullopt;
    const std::string key = word.substr(0, equals), value = word.substr(equals + 1);
    if (key == "layout") {
      const std::optional<Layout> layout = parse_layout(value);
      if (!layout || layout_seen) return std::nullopt;
      choice.layout = *layout;
      layout_seen = true;
      continue;
    }
    bool known = false;
    for (Pass pass : kPasses) {
      const int p = static_cast<int>(pass);
      if (key != xtrain::to_string(pass)) continue;
      if (seen[p]) return std::nullopt;
      choice.engines[p] = value;
      seen[p] = known = true;
    }
    if (!known) return std::nullopt;
  }
  if (!layout_seen || std::find(seen.begin(), seen.end(), false) != seen.end()) {
    return std::nullopt;
  }
  return choice;
}

ConvolutionChoice search_convolution(const ConvolutionShape& shape) {
  const TimingArrays arrays(shape);
  std::array<double, kConvolutionPassCount> gemm{}, best{};
  best.fill(kNever);
  GemmConvolution gemm_engine(shape);
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    gemm[p] = time_pass(gemm_engine, pass, ConvolutionEngine::Layouts{}, arrays, kNever);
    best[p] = gemm[p];
  }

  LayoutResult winner;
  winner.choice.engines.fill(ConvolutionChoice::kGemm);
  winner.choice.seconds = gemm;
  winner.total = gemm[0] + gemm[1] + gemm[2];
  for (Layout layout : kOnednnLayouts) {
    const std::optional<LayoutResult> result = search_layout(shape, layout, gemm, arrays, best);
    if (result && result->total < winner.total) winner = *result;
  }
  return winner.choice;
}

std::unique_ptr<ConvolutionEngine> make_chosen_convolution(const ConvolutionShape& shape,
                                                           const ConvolutionChoice& choice) {
  const auto& engines = choice.engines;
  const bool all_gemm = std::all_of(engines.begin(), engines.end(), [](const std::string& e) {
    return e == ConvolutionChoice::kGemm;
  });
  if (all_gemm) return std::make_unique<GemmConvolution>(shape);

  OnednnConvolutionOptions options;
  options.activations = choice.layout;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    if (engines[p] != ConvolutionChoice::kGemm) options.implementations[p] = engines[p];
  }
  std::string why_not;
  std::unique_ptr<ConvolutionEngine> onednn = make_onednn_convolution(shape, options, &why_not);
  if (!onednn) return nullptr;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    if (engines[p] != ConvolutionChoice::kGemm && onednn->kernel(pass) != engines[p]) {
      return nullptr;
    }
  }
  const bool any_gemm = std::any_of(engines.begin(), engines.end(), [](const std::string& e) {
    return e == ConvolutionChoice::kGemm;
  });
  // oneDNN alone keeps its engine, which also computes on blocked layouts.
  if (!any_gemm) return onednn;
  const std::shared_ptr<ConvolutionEngine> shared_onednn = std::move(onednn);
  const std::shared_ptr<ConvolutionEngine> gemm = std::make_shared<GemmConvolution>(shape);
  std::array<std::shared_ptr<ConvolutionEngine>, kConvolutionPassCount> by_pass;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    by_pass[p] = engines[p] == ConvolutionChoice::kGemm ? gemm : shared_onednn;
  }
  return std::make_unique<PerPassConvolution>(by_pass);
}

}  // namespace xtrain
