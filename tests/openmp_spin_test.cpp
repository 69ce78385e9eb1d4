// How idle OpenMP threads wait (core/openmp_spin.hpp, core/cpu_load.hpp):
// the load read from /proc (fake texts here), the decision, the user's
// settings winning, and that a write to the spin count found in libgomp
// really changes how long its idle threads poll (in a child process whose
// environment has neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT: CTest sets
// OMP_WAIT_POLICY=passive for this binary).
#include "core/openmp_spin.hpp"

#include <gtest/gtest.h>
#include <omp.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "core/cpu_load.hpp"
#include "tool_runner.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

const char* const kProcStat =
    "cpu  400 20 100 2000 30 0 5 10 0 0\n"
    "cpu0 100 10 50 1000 10 0 5 10 0 0\n"
    "cpu1 300 10 50 1000 20 0 0 0 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 987\n";

TEST(CpuLoad, SumsTheBusyAndIdleTicksOfOurCpus) {
  const CpuTicks both = parse_proc_stat(kProcStat, {0, 1});
  EXPECT_EQ(both.cpus, 2);
  // busy = user + nice + system + irq + softirq + steal; idle and iowait idle.
  EXPECT_EQ(both.busy, (100u + 10 + 50 + 5 + 10) + (300u + 10 + 50));
  EXPECT_EQ(both.total, both.busy + 1010 + 1020);
  const CpuTicks second = parse_proc_stat(kProcStat, {1, 7});  // 7 is not listed
  EXPECT_EQ(second.cpus, 1);
  EXPECT_EQ(second.busy, 360u);
  EXPECT_EQ(second.total, 360u + 1020);
}

TEST(CpuLoad, ReportsAMalformedLine) {
  try {
    parse_proc_stat("cpu0 1 2 three\n", {0});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cpu0 1 2 three"), std::string::npos) << error.what();
  }
}

TEST(CpuLoad, ReadsOurTicksPastANameWithSpacesAndParentheses) {
  EXPECT_EQ(parse_process_ticks("4242 (a b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 "
                                "125 37 0 0 20 0 3 0 100 0 0"),
            162u);
  EXPECT_THROW(parse_process_ticks("4242 (x) S 1 2"), Error);
  EXPECT_THROW(parse_process_ticks("no name here"), Error);
}

TEST(CpuLoad, NeighboursAreTheBusyTicksLessOurs) {
  // 2 CPUs, 200 ticks each in between; 200 busy ticks of which 100 ours.
  const CpuTicks before{1000, 4000, 2, 500};
  const CpuTicks after{1200, 4400, 2, 600};
  EXPECT_DOUBLE_EQ(neighbour_cpus(before, after), 0.5);
  // Our ticks alone: nobody else.
  EXPECT_DOUBLE_EQ(neighbour_cpus(before, CpuTicks{1200, 4400, 2, 700}), 0.0);
  // A tick of ours counted late cannot make the figure negative.
  EXPECT_DOUBLE_EQ(neighbour_cpus(before, CpuTicks{1200, 4400, 2, 800}), 0.0);
  // No time passed.
  EXPECT_DOUBLE_EQ(neighbour_cpus(before, before), 0.0);
}

TEST(OpenMpSpin, SpinsLongOnlyWhileTheOthersLeaveOurThreadsTheirCpusAndNotAtAllWhenTheyTakeMoreThanOne) {
  using L = SpinLength;
  // 2 CPUs, 2 threads: any neighbour takes from us.
  EXPECT_EQ(choose_spin_length(L::kShort, 0.0, 2, 2), L::kLong);
  EXPECT_EQ(choose_spin_length(L::kShort, 0.2, 2, 2), L::kLong);
  EXPECT_EQ(choose_spin_length(L::kShort, 0.4, 2, 2), L::kShort);
  // Once long, a reading between the limits keeps it long; above, short.
  EXPECT_EQ(choose_spin_length(L::kLong, 0.4, 2, 2), L::kLong);
  EXPECT_EQ(choose_spin_length(L::kLong, 0.6, 2, 2), L::kShort);
  EXPECT_EQ(choose_spin_length(L::kLong, 1.0, 2, 2), L::kShort);
  // More than a whole CPU taken: no spin, until it falls to three quarters.
  EXPECT_EQ(choose_spin_length(L::kLong, 1.9, 2, 2), L::kNone);
  EXPECT_EQ(choose_spin_length(L::kShort, 1.1, 2, 2), L::kNone);
  EXPECT_EQ(choose_spin_length(L::kNone, 0.9, 2, 2), L::kNone);
  EXPECT_EQ(choose_spin_length(L::kNone, 0.7, 2, 2), L::kShort);
  EXPECT_EQ(choose_spin_length(L::kNone, 0.1, 2, 2), L::kLong);
  EXPECT_EQ(spin_polls(L::kNone), 0u);
  EXPECT_EQ(spin_polls(L::kShort), kShortSpin);
  EXPECT_EQ(spin_polls(L::kLong), kLongSpin);
  // 16 CPUs, 8 threads: neighbours on the other 8 take nothing from us.
  EXPECT_EQ(choose_spin_length(L::kShort, 7.9, 16, 8), L::kLong);
  EXPECT_EQ(choose_spin_length(L::kShort, 8.5, 16, 8), L::kShort);
  // More threads than CPUs: every neighbour takes from us.
  EXPECT_EQ(choose_spin_length(L::kShort, 0.5, 2, 4), L::kShort);
}

TEST(OpenMpSpin, LibgompIsFoundUnderItsOwnNameAndUnderAWheelsCopy) {
  EXPECT_TRUE(is_libgomp_file("/usr/lib/x86_64-linux-gnu/libgomp.so.1"));
  EXPECT_TRUE(is_libgomp_file("libgomp.so.1.0.0"));
  // The Python wheel's copy, renamed by auditwheel (the WheelInstalled test
  // found the package's import unable to adapt before this was known).
  EXPECT_TRUE(is_libgomp_file("/venv/site-packages/xtrain.libs/libgomp-f9a9ad78.so.1.0.0"));
  EXPECT_FALSE(is_libgomp_file("/usr/lib/libgompx.so.1"));
  EXPECT_FALSE(is_libgomp_file("/usr/lib/libgomp-plugin-nvptx.so.1"));
  EXPECT_FALSE(is_libgomp_file("libgomp-f9a9ad78.txt"));
  EXPECT_FALSE(is_libgomp_file("/usr/lib/libiomp5.so"));
}

TEST(OpenMpSpin, TheUsersSettingsAreFoundAndNamed) {
  std::map<std::string, const char*> environment;
  auto lookup = [&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second;
  };
  EXPECT_EQ(user_openmp_wait_setting(lookup), "");
  environment["GOMP_SPINCOUNT"] = "5000";
  EXPECT_EQ(user_openmp_wait_setting(lookup), "GOMP_SPINCOUNT=5000");
  environment["OMP_WAIT_POLICY"] = "passive";
  EXPECT_EQ(user_openmp_wait_setting(lookup), "OMP_WAIT_POLICY=passive, GOMP_SPINCOUNT=5000");
  environment.erase("GOMP_SPINCOUNT");
  EXPECT_EQ(user_openmp_wait_setting(lookup), "OMP_WAIT_POLICY=passive");
}

TEST(OpenMpSpin, FindsAlignedWordsOfAValue) {
  alignas(8) std::uint64_t words[6] = {7, 300000, 1, 300000, 0, 9};
  const auto found = find_words(words, words + 6, 300000);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], &words[1]);
  EXPECT_EQ(found[1], &words[3]);
  // A range starting mid-word begins at the next whole word.
  EXPECT_EQ(find_words(reinterpret_cast<char*>(words) + 9, words + 6, 300000).size(), 1u);
  EXPECT_TRUE(find_words(words, words + 1, 300000).empty());
}

// --- in a child process with a chosen environment --------------------------

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The CPU time this process uses while its main thread sleeps after a
// parallel region: the idle worker's polling.
double cpu_seconds_while_idle(std::uint64_t* spin_count, std::uint64_t polls) {
  set_libgomp_spin_count(spin_count, polls);
  int sum = 0;
#pragma omp parallel num_threads(2) reduction(+ : sum)
  sum += omp_get_thread_num();
  EXPECT_EQ(sum, 1);
  const double start = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return process_cpu_seconds() - start;
}

bool in_child(const char* role) {
  const char* value = std::getenv("XTRAIN_OPENMP_SPIN_CHILD");
  return value != nullptr && std::string(value) == role;
}

TEST(OpenMpSpinChild, WritesToTheFoundSpinCountChangeLibgompsPolling) {
  if (!in_child("adapt")) GTEST_SKIP() << "run by OpenMpSpin.InAChildProcess";
  ASSERT_TRUE(openmp_waiting_adaptable());
  std::uint64_t* const spin_count = libgomp_spin_count();
  ASSERT_NE(spin_count, nullptr);
  EXPECT_EQ(*spin_count, kLibgompDefaultSpin);
  // Minutes of polls: the worker polls all through the sleep.
  const double polling = cpu_seconds_while_idle(spin_count, 30'000'000'000ULL);
  // No polls: the worker sleeps at once.
  const double sleeping = cpu_seconds_while_idle(spin_count, 0);
  EXPECT_GT(polling, 0.1) << "idle CPU seconds in 0.5 s with a long spin";
  EXPECT_LT(sleeping, 0.05) << "idle CPU seconds in 0.5 s without a spin";
  // The adaptive choice writes one of its three counts.
  const std::string line = adapt_openmp_waiting_to_load();
  EXPECT_NE(line.find("other processes used "), std::string::npos) << line;
  EXPECT_TRUE(*spin_count == kLongSpin || *spin_count == kShortSpin || *spin_count == kNoSpin)
      << *spin_count;
}

TEST(OpenMpSpinChild, TheUsersSpinCountIsLeftAlone) {
  if (!in_child("user")) GTEST_SKIP() << "run by OpenMpSpin.InAChildProcess";
  // The user asked for libgomp's default explicitly: the word is findable,
  // and must keep that value.
  EXPECT_FALSE(openmp_waiting_adaptable());
  const std::string line = adapt_openmp_waiting_to_load();
  EXPECT_NE(line.find("GOMP_SPINCOUNT=300000 in the environment"), std::string::npos) << line;
  std::uint64_t* const spin_count = libgomp_spin_count();
  ASSERT_NE(spin_count, nullptr);
  EXPECT_EQ(*spin_count, kLibgompDefaultSpin);
}

TEST(OpenMpSpin, InAChildProcess) {
  char self[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  const std::string clean = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT ";
  for (const std::string& run :
       {clean + "XTRAIN_OPENMP_SPIN_CHILD=adapt '" + self +
            "' --gtest_filter=OpenMpSpinChild.WritesToTheFoundSpinCountChangeLibgompsPolling",
        clean + "GOMP_SPINCOUNT=300000 XTRAIN_OPENMP_SPIN_CHILD=user '" + self +
            "' --gtest_filter=OpenMpSpinChild.TheUsersSpinCountIsLeftAlone"}) {
    const testing::ToolResult result = testing::run_tool(run);
    EXPECT_EQ(result.exit_code, 0) << run << "\n" << result.output;
    EXPECT_NE(result.output.find("[  PASSED  ] 1 test"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("SKIPPED"), std::string::npos) << result.output;
  }
}

// The tool logs its choice once, and the user's variables win.
TEST(OpenMpSpin, TheToolLogsTheChoiceAndHonoursTheUsersSettings) {
  testing::TempDir dir("openmp_spin");
  dir.write("net.prototxt",
            "layer { name: 'data' type: 'Input' top: 'data' "
            "  input_param { shape { dim: 2 dim: 3 } } }\n"
            "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip' "
            "  inner_product_param { num_output: 4 } }\n");
  const std::string time =
      testing::tool_path("xtrain") + " time --iterations=1 --model=" + dir.file("net.prototxt");
  const auto adaptive = testing::run_tool("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + time);
  ASSERT_EQ(adaptive.exit_code, 0) << adaptive.output;
  EXPECT_NE(adaptive.output.find("OpenMP waiting: other processes used "), std::string::npos)
      << adaptive.output;
  const auto user = testing::run_tool("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=4321 " + time);
  ASSERT_EQ(user.exit_code, 0) << user.output;
  EXPECT_NE(user.output.find("OpenMP waiting: GOMP_SPINCOUNT=4321 in the environment"),
            std::string::npos)
      << user.output;
  const auto policy = testing::run_tool("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active " + time);
  ASSERT_EQ(policy.exit_code, 0) << policy.output;
  EXPECT_NE(policy.output.find("OpenMP waiting: OMP_WAIT_POLICY=active in the environment"),
            std::string::npos)
      << policy.output;
}

}  // namespace
}  // namespace xtrain
