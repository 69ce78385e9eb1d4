// The timed choice of CPU convolution kernels (CpuAlgorithmSearch::kTimed):
// every kernel oneDNN lists computes the same convolution as the reference,
// the searched and the mixed per-pass engines too, the choice survives its
// text form and the cache file, and a Convolution layer searches once, then
// reads the cache.
#include "layers/convolution_search.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "convolution_test_support.hpp"
#include "layers/base_convolution_layer.hpp"
#include "layers/convolution_choice_cache.hpp"
#include "layers/direct_convolution.hpp"
#include "layers/gemm_convolution.hpp"
#include "tool_runner.hpp"
#include "xtrain/cpu_convolution_options.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using namespace convolution_testing;
using Layout = OnednnConvolutionOptions::Layout;
using Pass = ConvolutionPass;

constexpr Pass kPasses[] = {Pass::kForward, Pass::kBackwardData, Pass::kBackwardWeights};

// Shapes that exercise the kernels' different cases, small enough to try
// every kernel on each.
std::vector<Geometry> search_geometries() {
  std::vector<Geometry> chosen;
  for (const Geometry& g : geometries()) {
    for (const char* name :
         {"plain_3x3", "pad_and_stride", "groups", "depthwise", "no_bias", "one_by_one_large_image",
          "blocked_channels", "lenet_conv2", "cifar10_conv1", "dilation"}) {
      if (std::string(g.name) == name) chosen.push_back(g);
    }
  }
  return chosen;
}

class ConvolutionSearchTest : public OnednnGeometryTest {};

// The candidates the search times are real kernels of this convolution: each
// one, taken for its pass, gives the reference's numbers.
TEST_P(ConvolutionSearchTest, EveryListedKernelMatchesTheReference) {
  const Results expected = gemm_results();
  int kernels = 0;
  for (Layout layout : {Layout::kChosenByOnednn, Layout::kNhwc, Layout::kNchw}) {
    for (Pass pass : kPasses) {
      for (const std::string& kernel : onednn_convolution_implementations(shape_, layout, pass)) {
        SCOPED_TRACE(std::string(to_string(pass)) + " " + kernel + " in layout " +
                     std::to_string(static_cast<int>(layout)));
        EXPECT_NE(kernel.rfind("ref", 0), 0u) << "reference kernels are not candidates";
        OnednnConvolutionOptions options;
        options.activations = layout;
        options.implementations[static_cast<int>(pass)] = kernel;
        std::string why_not;
        auto engine = make_onednn_convolution(shape_, options, &why_not);
        if (!engine) continue;  // another pass has only a reference kernel here
        ASSERT_EQ(engine->kernel(pass), kernel);
        expect_matches_reference(*engine, inputs_, expected, {BackwardCall::kSeparatePasses});
        ++kernels;
      }
    }
  }
  EXPECT_GE(kernels, 3) << "at least one kernel per pass";
}

// A search times every candidate for at least 20 ms: three shapes suffice.
class ConvolutionSearchedEngineTest : public ConvolutionSearchTest {};

TEST_P(ConvolutionSearchedEngineTest, MatchesTheReference) {
  const ConvolutionChoice choice = search_convolution(shape_);
  for (Pass pass : kPasses) {
    const int p = static_cast<int>(pass);
    EXPECT_FALSE(choice.engines[p].empty()) << to_string(pass);
    EXPECT_GT(choice.seconds[p], 0.0) << to_string(pass) << ": every pass is timed";
  }
  auto engine = make_chosen_convolution(shape_, choice);
  ASSERT_TRUE(engine) << choice.to_string();
  for (Pass pass : kPasses) {
    const std::string& wanted = choice.engines[static_cast<int>(pass)];
    if (wanted != ConvolutionChoice::kGemm) {
      EXPECT_EQ(engine->kernel(pass), wanted);
    }
  }
  expect_matches_reference(*engine, inputs_, gemm_results(), {BackwardCall::kSeparatePasses});
}

// GEMM in some passes, oneDNN in the others: one engine per pass, on plain
// arrays.
TEST_P(ConvolutionSearchTest, MixedPassesMatchTheReference) {
  const Results expected = gemm_results();
  int mixes = 0;
  for (int gemm_pass = 0; gemm_pass < kConvolutionPassCount; ++gemm_pass) {
    ConvolutionChoice choice;
    choice.layout = Layout::kNchw;
    bool onednn_has_every_pass = true;
    for (Pass pass : kPasses) {
      const int p = static_cast<int>(pass);
      const auto kernels = onednn_convolution_implementations(shape_, choice.layout, pass);
      if (p != gemm_pass && kernels.empty()) onednn_has_every_pass = false;
      choice.engines[p] =
          p == gemm_pass || kernels.empty() ? ConvolutionChoice::kGemm : kernels.back();
    }
    if (!onednn_has_every_pass) continue;  // only reference kernels in NCHW for this shape
    SCOPED_TRACE(choice.to_string());
    auto engine = make_chosen_convolution(shape_, choice);
    ASSERT_TRUE(engine);
    EXPECT_FALSE(engine->accepts_channel_blocked()) << "GEMM computes on plain arrays";
    EXPECT_EQ(engine->kernel(static_cast<Pass>(gemm_pass)), "gemm");
    expect_matches_reference(*engine, inputs_, expected, {BackwardCall::kSeparatePasses});
    ++mixes;
  }
  EXPECT_GT(mixes, 0) << "oneDNN computes this shape in NCHW";
}

std::string geometry_name(const ::testing::TestParamInfo<Geometry>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvolutionSearchTest,
                         ::testing::ValuesIn(search_geometries()), geometry_name);

std::vector<Geometry> searched_geometries() {
  std::vector<Geometry> chosen;
  for (const Geometry& g : search_geometries()) {
    const std::string name = g.name;
    if (name == "groups" || name == "lenet_conv2" || name == "one_by_one_large_image") {
      chosen.push_back(g);
    }
  }
  return chosen;
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvolutionSearchedEngineTest,
                         ::testing::ValuesIn(searched_geometries()), geometry_name);

ConvolutionShape lenet_conv1(int batch) {
  return shape_of({"lenet_conv1", batch, 1, 28, 28, 20, 5, 5});
}

TEST(ConvolutionSearchKernelTest, AKernelThisOnednnLacksIsNotBuilt) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  ConvolutionChoice choice;
  choice.engines = {"jit:no_such_isa", ConvolutionChoice::kGemm, ConvolutionChoice::kGemm};
  EXPECT_EQ(make_chosen_convolution(lenet_conv1(2), choice), nullptr);
}

TEST(ConvolutionSearchKernelTest, AllGemmIsTheReferenceEngine) {
  ConvolutionChoice choice;
  choice.engines.fill(ConvolutionChoice::kGemm);
  auto engine = make_chosen_convolution(lenet_conv1(2), choice);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->name(), "gemm");
}

// ResNet-50's res5a_branch1 at batch 16: oneDNN's GEMM-based weight
// gradient wants 96 MiB of scratch for it (on a 2-thread AVX-512 machine),
// where its arrays take 26 MiB. The search leaves such kernels out.
TEST(ConvolutionSearchKernelTest, KernelsOverTheScratchLimitAreLeftOut) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  const ConvolutionShape shape =
      shape_of({"res5a_branch1", 16, 1024, 14, 14, 2048, 1, 1, 2, 2, 0, 0, 1, 1, 1, false});
  const std::size_t limit = convolution_scratch_limit(shape);
  EXPECT_EQ(limit, std::size_t{4} * (16 * (1024 * 14 * 14 + 2048 * 7 * 7) + 2048 * 1024));
  std::string over_limit;
  for (Layout layout : {Layout::kChosenByOnednn, Layout::kNhwc, Layout::kNchw}) {
    for (ConvolutionPass pass : {ConvolutionPass::kForward, ConvolutionPass::kBackwardData,
                                 ConvolutionPass::kBackwardWeights}) {
      for (const std::string& kernel : onednn_convolution_implementations(shape, layout, pass)) {
        OnednnConvolutionOptions options;
        options.activations = layout;
        options.implementations[static_cast<int>(pass)] = kernel;
        std::string why_not;
        const auto engine = make_onednn_convolution(shape, options, &why_not);
        if (engine && engine->kernel(pass) == kernel && engine->pass_scratch_bytes(pass) > limit) {
          over_limit = kernel;
        }
      }
    }
  }
  if (over_limit.empty()) GTEST_SKIP() << "no kernel of this oneDNN wants more scratch here";
  // Where the CPU has them, the bf16 kernels join: there the GEMM-based one
  // is also the fastest weight gradient (measured on an AMX machine).
  const NumberType operands = convolution_kernels_multiply(NumberType::kBfloat16)
                                  ? NumberType::kBfloat16
                                  : NumberType::kFloat32;
  const ConvolutionChoice choice = search_convolution(shape, operands);
  const auto engine = make_chosen_convolution(shape, choice);
  ASSERT_TRUE(engine) << choice.to_string();
  for (ConvolutionPass pass : {ConvolutionPass::kForward, ConvolutionPass::kBackwardData,
                               ConvolutionPass::kBackwardWeights}) {
    EXPECT_LE(engine->pass_scratch_bytes(pass), limit)
        << to_string(pass) << ": " << choice.to_string() << " (" << over_limit
        << " is over the limit)";
  }
}

// In bf16 the search weighs oneDNN's bf16 kernels ("bf16:" + their name)
// against the fp32 ones, pass by pass; the choice builds an engine whose
// passes multiply in the types its tokens say.
TEST(ConvolutionSearchKernelTest, Bfloat16CandidatesJoinEveryPass) {
  if (!convolution_kernels_multiply(NumberType::kBfloat16)) {
    GTEST_SKIP() << "this CPU (or its cap) has no bf16 convolution kernels";
  }
  const ConvolutionShape shape = shape_of({"conv3x3", 4, 32, 14, 14, 32, 3, 3});
  const ConvolutionChoice choice = search_convolution(shape, NumberType::kBfloat16);
  const auto engine = make_chosen_convolution(shape, choice);
  ASSERT_TRUE(engine) << choice.to_string();
  bool offered = false;
  for (ConvolutionPass pass : {ConvolutionPass::kForward, ConvolutionPass::kBackwardData,
                               ConvolutionPass::kBackwardWeights}) {
    const std::string& token = choice.engines[static_cast<int>(pass)];
    const bool bf16 = token.rfind(kBfloat16KernelPrefix, 0) == 0;
    EXPECT_EQ(engine->operand_type(pass), bf16 ? NumberType::kBfloat16 : NumberType::kFloat32)
        << token;
    offered = offered ||
              !onednn_convolution_implementations(shape, choice.layout, pass, NumberType::kBfloat16)
                   .empty();
  }
  EXPECT_TRUE(offered);
  // The choice survives the cache's text form.
  const auto parsed = ConvolutionChoice::parse(choice.to_string());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->engines, choice.engines);
  // A bf16 token alone builds a bf16 engine for that pass beside fp32 ones.
  ConvolutionChoice mixed;
  mixed.engines = {
      std::string(kBfloat16KernelPrefix) +
          onednn_convolution_implementations(shape, Layout::kChosenByOnednn,
                                             ConvolutionPass::kForward, NumberType::kBfloat16)
              .front(),
      ConvolutionChoice::kGemm, ConvolutionChoice::kGemm};
  const auto per_pass = make_chosen_convolution(shape, mixed);
  ASSERT_TRUE(per_pass);
  EXPECT_EQ(per_pass->operand_type(ConvolutionPass::kForward), NumberType::kBfloat16);
  EXPECT_EQ(per_pass->operand_type(ConvolutionPass::kBackwardWeights), NumberType::kFloat32);
}

TEST(ConvolutionChoiceTest, TextRoundTrip) {
  ConvolutionChoice choice;
  choice.layout = Layout::kNhwc;
  choice.engines = {"jit:avx2", ConvolutionChoice::kGemm, "gemm:jit"};
  const std::string text = choice.to_string();
  EXPECT_EQ(text,
            "layout=nhwc forward=jit:avx2 backward-data=im2col_gemm backward-weights=gemm:jit");
  const auto parsed = ConvolutionChoice::parse(text);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->layout, Layout::kNhwc);
  EXPECT_EQ(parsed->engines, choice.engines);
  EXPECT_EQ(parsed->to_string(), text);
}

TEST(ConvolutionChoiceTest, TheLoadItWasTimedUnderRoundTrips) {
  ConvolutionChoice choice;
  choice.engines = {"jit:avx2", ConvolutionChoice::kGemm, "gemm:jit"};
  choice.load = 0.834;
  const std::string text = choice.to_string();
  EXPECT_EQ(text,
            "layout=any forward=jit:avx2 backward-data=im2col_gemm backward-weights=gemm:jit "
            "load=0.83");
  const auto parsed = ConvolutionChoice::parse(text);
  ASSERT_TRUE(parsed);
  EXPECT_DOUBLE_EQ(parsed->load, 0.83);
  EXPECT_NE(parsed->describe().find("timed while other processes took 0.83 CPUs"),
            std::string::npos)
      << parsed->describe();
  // A line written before the load was recorded: not known.
  EXPECT_EQ(ConvolutionChoice::parse("layout=any forward=a backward-data=b backward-weights=c")
                ->load,
            -1);
  for (const char* bad : {"load=-1", "load=x", "load=nan", "load=0.1 load=0.2"}) {
    EXPECT_FALSE(ConvolutionChoice::parse(
        std::string("layout=any forward=a backward-data=b backward-weights=c ") + bad))
        << bad;
  }
}

TEST(ConvolutionChoiceTest, AChoiceTimedBesideBusyNeighboursIsTimedAgainOnceTheMachineIsQuiet) {
  // Timed on a quiet machine: kept, whatever the load now.
  EXPECT_FALSE(time_convolution_again(0.02, 0.0));
  EXPECT_FALSE(time_convolution_again(0.25, 1.5));
  // Timed beside busy neighbours (or not known): again when quiet, not while busy.
  EXPECT_TRUE(time_convolution_again(0.83, 0.1));
  EXPECT_TRUE(time_convolution_again(-1, 0.0));
  EXPECT_FALSE(time_convolution_again(0.83, 0.6));
  EXPECT_FALSE(time_convolution_again(-1, 1.0));
}

TEST(ConvolutionChoiceTest, MalformedTextIsNoChoice) {
  for (const char* text : {"", "layout=any", "layout=any forward=a backward-data=b",
                           "layout=any forward=a backward-data=b backward-weights=c forward=d",
                           "layout=blocked forward=a backward-data=b backward-weights=c",
                           "layout=any forward=a backward-data=b backward-weight=c",
                           "layout=any forward= backward-data=b backward-weights=c", "garbage"}) {
    EXPECT_FALSE(ConvolutionChoice::parse(text)) << text;
  }
}

// XTRAIN_CACHE_DIR pointing at a fresh folder for one test.
class ConvolutionChoiceCacheTest : public ::testing::Test {
 protected:
  testing::TempDir folder{"conv_cache"};
  testing::ScopedEnvironment cache_dir{"XTRAIN_CACHE_DIR", folder.path().c_str()};

  std::string file_text() const {
    std::ifstream file(cpu_convolution_cache_file());
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
};

ConvolutionChoice some_choice(const char* forward) {
  ConvolutionChoice choice;
  choice.engines = {forward, ConvolutionChoice::kGemm, "gemm:jit"};
  return choice;
}

TEST_F(ConvolutionChoiceCacheTest, KeepsChoicesInTheFile) {
  EXPECT_EQ(cpu_convolution_cache_file(), folder.file("cpu_convolutions.tsv"));
  EXPECT_FALSE(cached_convolution_choice(lenet_conv1(3)));
  cache_convolution_choice(lenet_conv1(3), NumberType::kFloat32, some_choice("jit:avx2"));
  cache_convolution_choice(lenet_conv1(5), NumberType::kFloat32, some_choice("jit:avx512_core"));
  const std::string text = file_text();
  EXPECT_NE(text.find(convolution_machine_key() + "\t" + lenet_conv1(3).to_string() + "\t" +
                      some_choice("jit:avx2").to_string()),
            std::string::npos)
      << text;
  // Another process (a fresh in-memory state is not available here, so the
  // file is edited under a new shape's key) sees what the file holds.
  std::ofstream(cpu_convolution_cache_file(), std::ios::app)
      << convolution_machine_key() << "\t" << lenet_conv1(7).to_string() << "\t"
      << some_choice("jit:sse41").to_string() << "\n";
  const auto read = cached_convolution_choice(lenet_conv1(7));
  ASSERT_TRUE(read);
  EXPECT_EQ(read->engines[0], "jit:sse41");
  EXPECT_EQ(cached_convolution_choice(lenet_conv1(5))->engines[0], "jit:avx512_core");
}

TEST_F(ConvolutionChoiceCacheTest, SkipsOtherMachinesAndBrokenLines) {
  std::ofstream(cpu_convolution_cache_file())
      << "# comment\n"
      << "not a choice line\n"
      << "another CPU; 64 threads; oneDNN 9.9.9\t" << lenet_conv1(11).to_string() << "\t"
      << some_choice("jit:avx2").to_string() << "\n"
      << convolution_machine_key() << "\t" << lenet_conv1(13).to_string() << "\tlayout=?\n";
  EXPECT_FALSE(cached_convolution_choice(lenet_conv1(11))) << "another machine's choice";
  EXPECT_FALSE(cached_convolution_choice(lenet_conv1(13))) << "a line that does not parse";
  cache_convolution_choice(lenet_conv1(17), NumberType::kFloat32, some_choice("jit:avx2"));
  EXPECT_TRUE(cached_convolution_choice(lenet_conv1(17)));
  EXPECT_NE(file_text().find("another CPU; 64 threads"), std::string::npos)
      << "rewriting the file keeps other machines' choices";
}

// A cache written before our direct kernels existed (its key ends at the
// oneDNN part) chose among fewer engines: those choices are timed again, not
// reused, so that an upgrade's kernels reach nets the user trained before.
TEST_F(ConvolutionChoiceCacheTest, ChoicesOfABuildWithOtherKernelsAreNotReused) {
  const std::string key = convolution_machine_key();
  const std::string engines = own_convolution_engines();
  ASSERT_GE(key.size(), engines.size());
  EXPECT_EQ(key.substr(key.size() - engines.size()), engines);
  EXPECT_NE(engines.find(ConvolutionChoice::kGemm), std::string::npos) << engines;
  for (int lanes : correlation_lane_widths()) {
    EXPECT_NE(engines.find(DirectConvolution::name_for(lanes)), std::string::npos) << engines;
  }
  const std::string older_key = key.substr(0, key.size() - engines.size() - 2);  // without "; "
  std::ofstream(cpu_convolution_cache_file())
      << older_key << "\t" << lenet_conv1(29).to_string() << "\t"
      << some_choice("jit:avx2").to_string() << "\n";
  EXPECT_FALSE(cached_convolution_choice(lenet_conv1(29)));
}

TEST(ConvolutionChoiceCacheFolderTest, UnwritableFolderWarnsOnceAndLastsForTheRun) {
  testing::TempDir folder("conv_cache_file");
  // A regular file where the cache folder should be: no folder can be made.
  const std::string blocker = folder.write("not_a_folder", "x");
  testing::ScopedEnvironment cache_dir("XTRAIN_CACHE_DIR", (blocker + "/cache").c_str());
  ::testing::internal::CaptureStderr();
  cache_convolution_choice(lenet_conv1(19), NumberType::kFloat32, some_choice("jit:avx2"));
  cache_convolution_choice(lenet_conv1(23), NumberType::kFloat32, some_choice("jit:avx2"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("cannot keep the timed convolution choices in " + blocker), std::string::npos)
      << log;
  EXPECT_EQ(log.find("cannot keep", log.find("cannot keep") + 1), std::string::npos)
      << "one warning, not one per layer: " << log;
  EXPECT_TRUE(cached_convolution_choice(lenet_conv1(19)));
}

TEST(CpuConvolutionOptionsTest, CacheFileFollowsTheEnvironment) {
  testing::ScopedEnvironment xtrain_dir("XTRAIN_CACHE_DIR", nullptr);
  testing::ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
  testing::ScopedEnvironment home("HOME", "/home/u");
  EXPECT_EQ(cpu_convolution_cache_file(), "/xdg/xtrain/cpu_convolutions.tsv");
  {
    testing::ScopedEnvironment no_xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(cpu_convolution_cache_file(), "/home/u/.cache/xtrain/cpu_convolutions.tsv");
    testing::ScopedEnvironment no_home("HOME", nullptr);
    EXPECT_EQ(cpu_convolution_cache_file(), "");
  }
  testing::ScopedEnvironment mine("XTRAIN_CACHE_DIR", "/scratch/c");
  EXPECT_EQ(cpu_convolution_cache_file(), "/scratch/c/cpu_convolutions.tsv");
}

TEST(CpuConvolutionOptionsTest, ParsesTheFlagsSpelling) {
  EXPECT_EQ(parse_cpu_algorithm_search("timed"), CpuAlgorithmSearch::kTimed);
  EXPECT_EQ(parse_cpu_algorithm_search("heuristic"), CpuAlgorithmSearch::kHeuristic);
  EXPECT_EQ(to_string(CpuAlgorithmSearch::kTimed), "timed");
  const std::string message = testing::error_of([] { parse_cpu_algorithm_search("fast"); });
  EXPECT_NE(message.find("--cpu_algorithm_search=fast"), std::string::npos) << message;
  EXPECT_NE(message.find("'timed'"), std::string::npos) << message;
  EXPECT_NE(message.find("'heuristic'"), std::string::npos) << message;
}

// The timed search for one scope.
class ScopedTimedSearch {
 public:
  ScopedTimedSearch() : saved_(cpu_algorithm_search()) {
    set_cpu_algorithm_search(CpuAlgorithmSearch::kTimed);
  }
  ~ScopedTimedSearch() { set_cpu_algorithm_search(saved_); }

 private:
  CpuAlgorithmSearch saved_;
};

// What a Convolution layer logs while it sets up for `input`.
std::string setup_log(const std::vector<int>& input_shape, std::string* engine_name) {
  auto layer = testing::make_layer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 8 kernel_size: 3 "
      "weight_filler { type: 'gaussian' std: 0.1 } }");
  Blob input(input_shape), output;
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kInfo);
  ::testing::internal::CaptureStderr();
  layer->setup({&input}, {&output});
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_min_log_severity(saved);
  *engine_name = dynamic_cast<BaseConvolutionLayer&>(*layer).engine_name();
  return log;
}

TEST(TimedConvolutionLayerTest, SearchesOnceThenReadsTheCache) {
  testing::TempDir folder("conv_cache_layer");
  testing::ScopedEnvironment cache_dir("XTRAIN_CACHE_DIR", folder.path().c_str());
  testing::ScopedConvImpl automatic(nullptr);
  ScopedTimedSearch timed;
  std::string first_engine, second_engine;
  const std::string first = setup_log({2, 3, 9, 9}, &first_engine);
  EXPECT_NE(first.find("layer 'conv' (Convolution) 2x3x9x9 -> 8x7x7"), std::string::npos) << first;
  EXPECT_NE(first.find(": timed (search took "), std::string::npos) << first;
  EXPECT_NE(first.find("forward "), std::string::npos) << first;
  EXPECT_TRUE(std::filesystem::exists(folder.file("cpu_convolutions.tsv")));
  const std::string second = setup_log({2, 3, 9, 9}, &second_engine);
  EXPECT_NE(second.find(": timed earlier (cached in " + folder.file("cpu_convolutions.tsv")),
            std::string::npos)
      << second;
  EXPECT_EQ(second_engine, first_engine) << "the cached choice is the searched one";
}

TEST(TimedConvolutionLayerTest, HeuristicTimesNothing) {
  testing::TempDir folder("conv_cache_heuristic");
  testing::ScopedEnvironment cache_dir("XTRAIN_CACHE_DIR", folder.path().c_str());
  testing::ScopedConvImpl automatic(nullptr);
  std::string engine;
  const std::string log = setup_log({2, 3, 9, 9}, &engine);
  EXPECT_EQ(log.find("timed"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(folder.file("cpu_convolutions.tsv")));
}

}  // namespace
}  // namespace xtrain
