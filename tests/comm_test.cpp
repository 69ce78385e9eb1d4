// process_group_from_environment on each launcher's variables, and the
// single-process communicator. Real MPI runs: mpi_communicator_test.cpp.
#include "xtrain/comm.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

const char* const kLauncherVariables[] = {"OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "PMI_RANK",
                                          "PMI_SIZE",
                                          "MPI_LOCALRANKID",
                                          "SLURM_PROCID",
                                          "SLURM_NTASKS",
                                          "SLURM_LOCALID",
                                          "RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_RANK"};

// Clears every launcher variable for the test and puts the originals back.
class ProcessGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kLauncherVariables) {
      const char* value = std::getenv(name);
      if (value != nullptr) saved_[name] = value;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kLauncherVariables) {
      ::unsetenv(name);
      auto found = saved_.find(name);
      if (found != saved_.end()) ::setenv(name, found->second.c_str(), 1);
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  // The message of the error process_group_from_environment throws.
  static std::string error_message() {
    return testing::error_of([] { process_group_from_environment(); });
  }

  // The group the environment describes is rank of size, local_rank on its
  // node, found through launcher.
  static void expect_group(int rank, int size, int local_rank, const std::string& launcher) {
    const ProcessGroup group = process_group_from_environment();
    EXPECT_EQ(group.rank, rank);
    EXPECT_EQ(group.size, size);
    EXPECT_EQ(group.local_rank, local_rank);
    EXPECT_EQ(group.launcher, launcher);
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(ProcessGroupTest, NoLauncherIsALoneProcess) { expect_group(0, 1, 0, "none"); }

TEST_F(ProcessGroupTest, OpenMpi) {
  set("OMPI_COMM_WORLD_RANK", "5");
  set("OMPI_COMM_WORLD_SIZE", "8");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  expect_group(5, 8, 1, "openmpi");
}

TEST_F(ProcessGroupTest, PmiWithItsLocalRankOrSlurms) {
  set("PMI_RANK", "3");
  set("PMI_SIZE", "4");
  set("MPI_LOCALRANKID", "1");
  set("SLURM_LOCALID", "0");
  expect_group(3, 4, 1, "pmi");
  ::unsetenv("MPI_LOCALRANKID");
  expect_group(3, 4, 0, "pmi");
}

TEST_F(ProcessGroupTest, Slurm) {
  set("SLURM_PROCID", "2");
  set("SLURM_NTASKS", "3");
  set("SLURM_LOCALID", "2");
  expect_group(2, 3, 2, "slurm");
}

// mpirun inside a Slurm allocation: the allocation's SLURM_* stay set.
TEST_F(ProcessGroupTest, MpiVariablesWinOverSlurms) {
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "16");
  set("SLURM_LOCALID", "0");
  set("OMPI_COMM_WORLD_RANK", "1");
  set("OMPI_COMM_WORLD_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  expect_group(1, 2, 1, "openmpi");
}

TEST_F(ProcessGroupTest, MalformedValuesNameTheVariable) {
  const std::vector<std::vector<std::pair<const char*, const char*>>> cases = {
      {{"OMPI_COMM_WORLD_RANK", "1x"},
       {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}},
      {{"OMPI_COMM_WORLD_RANK", "0"},
       {"OMPI_COMM_WORLD_SIZE", "two"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}},
      {{"PMI_RANK", "-1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}},
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "99999999999999999999"}, {"SLURM_LOCALID", "0"}},
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", " "}},
  };
  const char* const culprits[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                                  "SLURM_NTASKS", "SLURM_LOCALID"};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    for (const char* name : kLauncherVariables) ::unsetenv(name);
    for (const auto& [name, value] : cases[c]) set(name, value);
    const std::string message = error_message();
    EXPECT_NE(message.find(culprits[c]), std::string::npos) << message;
    EXPECT_NE(message.find("not a whole number"), std::string::npos) << message;
  }
}

TEST_F(ProcessGroupTest, InconsistentValuesNameTheVariables) {
  set("OMPI_COMM_WORLD_RANK", "2");
  set("OMPI_COMM_WORLD_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  std::string message = error_message();
  EXPECT_NE(message.find("OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"),
            std::string::npos)
      << message;

  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_SIZE", "0");
  message = error_message();
  EXPECT_NE(message.find("OMPI_COMM_WORLD_SIZE=0"), std::string::npos) << message;

  set("OMPI_COMM_WORLD_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "4");
  message = error_message();
  EXPECT_NE(message.find("OMPI_COMM_WORLD_LOCAL_RANK=4"), std::string::npos) << message;
}

TEST_F(ProcessGroupTest, MissingVariableIsNamed) {
  set("SLURM_NTASKS", "4");
  set("SLURM_LOCALID", "0");
  std::string message = error_message();
  EXPECT_NE(message.find("SLURM_NTASKS is set but SLURM_PROCID is not"), std::string::npos)
      << message;

  ::unsetenv("SLURM_NTASKS");
  ::unsetenv("SLURM_LOCALID");
  set("PMI_RANK", "0");
  set("PMI_SIZE", "2");
  message = error_message();
  EXPECT_NE(message.find("MPI_LOCALRANKID is not"), std::string::npos) << message;
}

// --rendezvous: the flags first, then the launchers' variables, then
// torchrun's; RANK and WORLD_SIZE alone never make a job without it.
TEST_F(ProcessGroupTest, RendezvousTakesFlagsThenSlurmThenTorchrun) {
  set("SLURM_PROCID", "1");
  set("SLURM_NTASKS", "4");
  set("SLURM_LOCALID", "1");
  set("RANK", "3");
  set("WORLD_SIZE", "5");
  ProcessGroup group = process_group_for_rendezvous("/shared/meet", 2, 3);
  EXPECT_EQ(group.rank, 2);
  EXPECT_EQ(group.size, 3);
  EXPECT_EQ(group.launcher, "flags");
  EXPECT_EQ(group.rendezvous, "/shared/meet");

  group = process_group_for_rendezvous("/shared/meet", -1, -1);
  EXPECT_EQ(group.rank, 1);
  EXPECT_EQ(group.size, 4);
  EXPECT_EQ(group.local_rank, 1);
  EXPECT_EQ(group.launcher, "slurm");
  EXPECT_EQ(group.rendezvous, "/shared/meet");

  for (const char* name : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}) ::unsetenv(name);
  group = process_group_for_rendezvous("/shared/meet", -1, -1);
  EXPECT_EQ(group.rank, 3);
  EXPECT_EQ(group.size, 5);
  EXPECT_EQ(group.local_rank, 0);
  EXPECT_EQ(group.launcher, "torchrun");
  set("LOCAL_RANK", "1");
  EXPECT_EQ(process_group_for_rendezvous("/shared/meet", -1, -1).local_rank, 1);
  // Without --rendezvous, torchrun's variables mean nothing (they are too
  // common to take a lone process for a rank).
  expect_group(0, 1, 0, "none");
}

TEST_F(ProcessGroupTest, RendezvousWithoutAPlaceSaysWhatToGive) {
  std::string message = testing::error_of([] { process_group_for_rendezvous("/m", -1, -1); });
  EXPECT_NE(message.find("give --rank and --world_size, or start it with srun"), std::string::npos)
      << message;
  message = testing::error_of([] { process_group_for_rendezvous("/m", 1, -1); });
  EXPECT_NE(message.find("give both --rank and --world_size (rank 1, world_size unset)"),
            std::string::npos)
      << message;
  message = testing::error_of([] { process_group_for_rendezvous("/m", 3, 3); });
  EXPECT_NE(message.find("--rank=3 is not below --world_size=3"), std::string::npos) << message;
  set("RANK", "4");
  set("WORLD_SIZE", "2");
  message = testing::error_of([] { process_group_for_rendezvous("/m", -1, -1); });
  EXPECT_NE(message.find("RANK=4 is not below WORLD_SIZE=2"), std::string::npos) << message;
}

TEST(SingleProcessCommunicator, EveryCallLeavesTheValues) {
  auto comm = make_communicator(ProcessGroup{}, 1.0);
  EXPECT_EQ(comm->backend(), "none");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  std::vector<float> values = {1.5f, -2.0f, 3.25f};
  comm->allreduce_sum(values.data(), values.size());
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<double> losses = {0.125, 7.0};
  comm->allreduce_sum(losses.data(), losses.size());
  EXPECT_EQ(losses, (std::vector<double>{0.125, 7.0}));
  comm->broadcast(values.data(), values.size(), 0);
  comm->broadcast(losses.data(), losses.size(), 0);
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(losses, (std::vector<double>{0.125, 7.0}));
  comm->barrier();
  EXPECT_THROW(comm->broadcast(values.data(), values.size(), 1), Error);
}

TEST(MakeCommunicator, RejectsBadArguments) {
  EXPECT_THROW(make_communicator(ProcessGroup{}, 0.0), Error);
  ProcessGroup outside;
  outside.rank = 2;
  outside.size = 2;
  EXPECT_THROW(make_communicator(outside, 1.0), Error);
}

TEST(MakeCommunicator, SeveralProcessesWithoutMpiSaysHowToGetIt) {
  if (mpi_available()) GTEST_SKIP() << "this build has MPI";
  ProcessGroup group;
  group.rank = 0;
  group.size = 2;
  group.launcher = "openmpi";
  try {
    make_communicator(group, 1.0);
    FAIL() << "no xtrain::Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("install libopenmpi-dev"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace xtrain
