#include "layers/convolution_search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "layers/direct_convolution.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/per_pass_convolution.hpp"
#include "layers/winograd_convolution.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using Layout = OnednnConvolutionOptions::Layout;
using Pass = ConvolutionPass;
constexpr std::array<Pass, kConvolutionPassCount> kPasses = {Pass::kForward, Pass::kBackwardData,
                                                             Pass::kBackwardWeights};
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

// The fastest engine per pass among those that compute on plain arrays
// (GEMM, the direct kernels), by its token in a choice.
struct PlainResult {
  std::array<std::string, kConvolutionPassCount> engines;
  std::array<double, kConvolutionPassCount> seconds;
};

// The engine a plain token names, or null when it does not take `shape` here.
std::unique_ptr<ConvolutionEngine> make_plain_engine(const ConvolutionShape& shape,
                                                     const std::string& token) {
  if (token == ConvolutionChoice::kGemm) return std::make_unique<GemmConvolution>(shape);
  if (token == WinogradConvolution::kName) {
    if (!WinogradConvolution::accepts(shape)) return nullptr;
    return std::make_unique<WinogradConvolution>(shape);
  }
  const int lanes = DirectConvolution::lanes_of(token);
  if (lanes > 0 && DirectConvolution::accepts(shape, lanes)) {
    return std::make_unique<DirectConvolution>(shape, lanes);
  }
  return nullptr;
}

bool is_plain_token(const std::string& token) {
  return token == ConvolutionChoice::kGemm || token == WinogradConvolution::kName ||
         DirectConvolution::lanes_of(token) > 0;
}

// Every plain token on this machine, for any shape.
// Winograd is timed unless XTRAIN_CPU_WINOGRAD=0. It used to be off by
// default: timed on plain arrays only, it won per layer but made its
// channel-blocked neighbours reorder, which the search does not see
// (GoogLeNet ran 2-5 % slower). Now that it also computes between blocked
// neighbours (search_layout), CIFAR10-quick runs 6-12 % faster with it,
// LeNet ~25 %, GoogLeNet ~2 % natively and the same at AVX2
// (docs/performance.md); the switch stays for A/B runs.
bool winograd_offered() {
  const char* value = std::getenv("XTRAIN_CPU_WINOGRAD");
  if (value == nullptr || *value == '\0' || std::string_view(value) == "1") return true;
  if (std::string_view(value) == "0") return false;
  throw Error(detail::concat("XTRAIN_CPU_WINOGRAD=", value,
                             " is not 0 or 1; set it to 0 to keep the timed search from trying "
                             "our Winograd kernels for 5x5 convolutions, or unset it"));
}

std::vector<std::string> all_plain_tokens() {
  std::vector<std::string> tokens = {ConvolutionChoice::kGemm};
  if (winograd_offered()) tokens.push_back(WinogradConvolution::kName);
  for (int lanes : correlation_lane_widths()) tokens.push_back(DirectConvolution::name_for(lanes));
  return tokens;
}

PlainResult search_plain(const ConvolutionShape& shape, const TimingArrays& arrays,
                         std::array<double, kConvolutionPassCount>& best) {
  PlainResult result;
  result.seconds.fill(kNever);
  for (const std::string& token : all_plain_tokens()) {
    const std::unique_ptr<ConvolutionEngine> engine = make_plain_engine(shape, token);
    if (!engine) continue;  // a direct width or Winograd that does not take the shape
    for (Pass pass : kPasses) {
      const int p = static_cast<int>(pass);
      // A pass the engine hands to another (Winograd's weight gradient is
      // GEMM's) is timed under that one's token.
      if (engine->kernel(pass) != token) continue;
      const double seconds =
          time_pass(*engine, pass, ConvolutionEngine::Layouts{}, arrays, best[p]);
      if (seconds < result.seconds[p]) {
        result.seconds[p] = seconds;
        result.engines[p] = token;
      }
      best[p] = std::min(best[p], seconds);
    }
  }
  return result;
}

// The fastest kernel per pass among oneDNN's for one activation layout, with
// the plain engines where the boundary is plain; `best` holds the fastest
// times found so far per pass (for cutting hopeless candidates short) and is
// updated.
struct LayoutResult {
  ConvolutionChoice choice;
  double total = kNever;
  // A pass took a kernel over the scratch limit (see scratch_limit): any
  // layout without one wins over this one.
  bool over_scratch_limit = false;

  bool beats(const LayoutResult& other) const {
    if (over_scratch_limit != other.over_scratch_limit) return !over_scratch_limit;
    return total < other.total;
  }
};

bool is_bfloat16_token(const std::string& token) {
  return token.rfind(kBfloat16KernelPrefix, 0) == 0;
}

std::string without_bfloat16_prefix(const std::string& token) {
  return is_bfloat16_token(token) ? token.substr(std::string(kBfloat16KernelPrefix).size()) : token;
}

std::optional<LayoutResult> search_layout(const ConvolutionShape& shape, Layout layout,
                                          const PlainResult& plain, const TimingArrays& arrays,
                                          std::array<double, kConvolutionPassCount>& best,
                                          NumberType operands) {
  OnednnConvolutionOptions options;
  options.activations = layout;
  OnednnConvolutionOptions bf16_options = options;
  bf16_options.operands = NumberType::kBfloat16;
  const bool with_bf16 = operands == NumberType::kBfloat16;
  std::string why_not;
  const std::unique_ptr<ConvolutionEngine> first =
      make_onednn_convolution(shape, options, &why_not);
  if (!first) return std::nullopt;
  const ConvolutionEngine::Layouts layouts = boundary_layouts(*first);

  // Our Winograd kernels read and write blocked activations too, so they
  // join the blocked layouts' forward and backward-data passes.
  std::unique_ptr<ConvolutionEngine> winograd;
  if (!is_plain(layouts) && winograd_offered() && WinogradConvolution::accepts(shape)) {
    winograd = make_plain_engine(shape, WinogradConvolution::kName);
  }

  LayoutResult result;
  result.choice.layout = layout;
  result.total = 0;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    double fastest = kNever;
    std::string fastest_kernel;
    // The kernels whose scratch is over the limit, by token, timed only when
    // nothing else computes the pass.
    std::vector<std::pair<std::string, OnednnConvolutionOptions>> over_limit;
    auto within_limit = [&](const ConvolutionEngine& engine, const std::string& token,
                            const OnednnConvolutionOptions& made_with) {
      if (engine.pass_scratch_bytes(pass) <= convolution_scratch_limit(shape)) return true;
      over_limit.emplace_back(token, made_with);
      return false;
    };
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
      if (!within_limit(*engine, kernel, one)) continue;
      const double seconds = time_pass(*engine, pass, layouts, arrays, best[p]);
      if (seconds < fastest) {
        fastest = seconds;
        fastest_kernel = kernel;
      }
      best[p] = std::min(best[p], seconds);
    }
    // bf16 kernels reorder their operands (type and layout) at the boundary
    // whatever layout the Net keeps, so the layout test above does not apply.
    for (const std::string& kernel :
         with_bf16 ? onednn_convolution_implementations(shape, layout, pass, NumberType::kBfloat16)
                   : std::vector<std::string>{}) {
      OnednnConvolutionOptions one = bf16_options;
      one.implementations[p] = kernel;
      std::unique_ptr<ConvolutionEngine> engine = make_onednn_convolution(shape, one, &why_not);
      if (!engine || engine->kernel(pass) != kernel) continue;
      if (!within_limit(*engine, kBfloat16KernelPrefix + kernel, one)) continue;
      const double seconds = time_pass(*engine, pass, layouts, arrays, best[p]);
      if (seconds < fastest) {
        fastest = seconds;
        fastest_kernel = kBfloat16KernelPrefix + kernel;
      }
      best[p] = std::min(best[p], seconds);
    }
    if (winograd && winograd->kernel(pass) == WinogradConvolution::kName) {
      const double seconds = time_pass(*winograd, pass, layouts, arrays, best[p]);
      if (seconds < fastest) {
        fastest = seconds;
        fastest_kernel = WinogradConvolution::kName;
      }
      best[p] = std::min(best[p], seconds);
    }
    if (is_plain(layouts) && plain.seconds[p] < fastest) {
      fastest = plain.seconds[p];
      fastest_kernel = plain.engines[p];
    }
    if (fastest_kernel.empty()) {
      result.over_scratch_limit = !over_limit.empty();
      for (const auto& [token, made_with] : over_limit) {
        std::unique_ptr<ConvolutionEngine> engine =
            make_onednn_convolution(shape, made_with, &why_not);
        if (!engine) continue;
        const double seconds = time_pass(*engine, pass, layouts, arrays, best[p]);
        if (seconds < fastest) {
          fastest = seconds;
          fastest_kernel = token;
        }
      }
    }
    if (fastest_kernel.empty()) return std::nullopt;
    result.choice.engines[p] = fastest_kernel;
    result.choice.seconds[p] = fastest;
    result.total += fastest;
  }
  return result;
}

}  // namespace

// oneDNN's working memory for one call (its scratchpad) is shared by every
// layer's calls, so a net holds the largest any of its kernels wants. A
// kernel may want far more than its layer's own arrays: the GEMM-based
// weight gradient of ResNet-50's strided 1x1 res5a_branch1 (1024x14x14 ->
// 2048x7x7, batch 16) wants 96 MiB where input, output and weights take 26;
// it alone made half of the net's convolution scratch in bf16.
std::size_t convolution_scratch_limit(const ConvolutionShape& shape) {
  constexpr std::size_t kFloorBytes = std::size_t{16} << 20;
  const std::size_t arrays = sizeof(float) * (static_cast<std::size_t>(shape.num) *
                                                  (shape.input_dim() + shape.output_dim()) +
                                              shape.weight_count());
  return std::max(kFloorBytes, arrays);
}

std::string own_convolution_engines() {
  std::string text = "xtrain " XTRAIN_VERSION_STRING ":";
  for (const std::string& token : all_plain_tokens()) text += " " + token;
  // Choices made before the scratch limit may hold kernels it leaves out.
  return text + ", scratch limit";
}

std::string ConvolutionChoice::to_string() const {
  std::string text = std::string("layout=") + layout_token(layout);
  for (Pass pass : kPasses) {
    text += std::string(" ") + xtrain::to_string(pass) + "=" + engines[static_cast<int>(pass)];
  }
  if (load >= 0) {
    char figure[32];
    std::snprintf(figure, sizeof(figure), " load=%.2f", load);
    text += figure;
  }
  return text;
}

bool time_convolution_again(double cached_load, double load_now) {
  return (cached_load < 0 || cached_load > kBusyCpusTaken) && load_now <= kBusyCpusTaken;
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
  if (load > kBusyCpusTaken) {
    text.precision(2);
    text << "; timed while other processes took " << load << " CPUs from this process's threads";
  }
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
    if (key == "load") {
      char* end = nullptr;
      const double load = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !(load >= 0) || choice.load >= 0) return std::nullopt;
      choice.load = load;
      continue;
    }
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

ConvolutionChoice search_convolution(const ConvolutionShape& shape, NumberType operands) {
  const TimingArrays arrays(shape);
  std::array<double, kConvolutionPassCount> best;
  best.fill(kNever);
  const PlainResult plain = search_plain(shape, arrays, best);

  LayoutResult winner;
  winner.choice.engines = plain.engines;
  winner.choice.seconds = plain.seconds;
  winner.total = plain.seconds[0] + plain.seconds[1] + plain.seconds[2];
  for (Layout layout : kOnednnLayouts) {
    const std::optional<LayoutResult> result =
        search_layout(shape, layout, plain, arrays, best, operands);
    if (result && result->beats(winner)) winner = *result;
  }
  return winner.choice;
}

std::unique_ptr<ConvolutionEngine> make_chosen_convolution(const ConvolutionShape& shape,
                                                           const ConvolutionChoice& choice) {
  const auto& engines = choice.engines;
  // One plain engine for every pass: that engine alone.
  if (std::all_of(engines.begin(), engines.end(),
                  [&](const std::string& e) { return e == engines[0]; }) &&
      is_plain_token(engines[0])) {
    return make_plain_engine(shape, engines[0]);
  }

  std::array<std::shared_ptr<ConvolutionEngine>, kConvolutionPassCount> by_pass;
  OnednnConvolutionOptions options;
  options.activations = choice.layout;
  bool any_onednn = false, any_plain = false;
  // The passes oneDNN computes in bf16, by one bf16 engine.
  OnednnConvolutionOptions bf16_options = options;
  bf16_options.operands = NumberType::kBfloat16;
  bool any_bf16 = false;
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    if (is_bfloat16_token(engines[p])) {
      bf16_options.implementations[p] = without_bfloat16_prefix(engines[p]);
      any_bf16 = true;
    }
  }
  std::shared_ptr<ConvolutionEngine> bf16_engine;
  if (any_bf16) {
    std::string why_not;
    std::unique_ptr<ConvolutionEngine> made =
        make_onednn_convolution(shape, bf16_options, &why_not);
    if (!made) return nullptr;
    // Every pass in bf16: that engine alone.
    if (std::all_of(engines.begin(), engines.end(), is_bfloat16_token)) {
      for (Pass pass : kPasses) {
        if (made->kernel(pass) != without_bfloat16_prefix(engines[static_cast<int>(pass)])) {
          return nullptr;
        }
      }
      return made;
    }
    bf16_engine = std::move(made);
    for (Pass pass : kPasses) {
      const int p = static_cast<int>(pass);
      if (!is_bfloat16_token(engines[p])) continue;
      if (bf16_engine->kernel(pass) != without_bfloat16_prefix(engines[p])) return nullptr;
      by_pass[p] = bf16_engine;
    }
  }
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    if (is_bfloat16_token(engines[p])) {
      any_plain = true;  // another engine beside oneDNN's fp32 one
      continue;
    }
    if (is_plain_token(engines[p])) {
      any_plain = true;
      // Each plain engine once, though it may compute several passes.
      for (int earlier = 0; earlier < p && !by_pass[p]; ++earlier) {
        if (engines[earlier] == engines[p]) by_pass[p] = by_pass[earlier];
      }
      if (!by_pass[p]) by_pass[p] = make_plain_engine(shape, engines[p]);
      if (!by_pass[p]) return nullptr;
    } else {
      options.implementations[p] = engines[p];
      any_onednn = true;
    }
  }
  if (any_onednn) {
    std::string why_not;
    std::unique_ptr<ConvolutionEngine> onednn = make_onednn_convolution(shape, options, &why_not);
    if (!onednn) return nullptr;
    for (Pass pass : kPasses) {
      const int p = static_cast<int>(pass);
      if (!is_plain_token(engines[p]) && !is_bfloat16_token(engines[p]) &&
          onednn->kernel(pass) != engines[p]) {
        return nullptr;
      }
    }
    // oneDNN alone keeps its engine, which also computes on blocked layouts.
    if (!any_plain) return onednn;
    const std::shared_ptr<ConvolutionEngine> shared_onednn = std::move(onednn);
    for (auto& engine : by_pass) {
      if (!engine) engine = shared_onednn;
    }
  }
  return std::make_unique<PerPassConvolution>(by_pass);
}

}  // namespace xtrain
