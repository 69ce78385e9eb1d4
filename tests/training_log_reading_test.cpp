// Reading curves back from glog-formatted training logs, as `xtrain plot`
// does: Caffe's and xtrain's, with glog's two line prefixes.
#include "reporting/training_log_reading.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "error_message.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// A short Caffe training log; `date` is glog's date field: "1121" before
// glog 0.6, "20261121" (year first) from 0.6 on.
std::string caffe_log(const std::string& date) {
  const std::string i = "I" + date + " ";
  return i + "10:00:00.000000  1234 solver.cpp:48] Initializing solver from parameters:\n"
             "base_lr: 0.01\n" +
         i + "10:00:00.500000  1234 solver.cpp:273] Solving LeNet\n" + i +
         "10:00:01.250000  1234 solver.cpp:218] Iteration 100 (2.5 iter/s, 40s/100 iters), loss "
         "= 0.3\n" +
         i + "10:00:01.250000  1234 sgd_solver.cpp:105] Iteration 100, lr = 0.0099\n" + i +
         "10:00:02.000000  1234 solver.cpp:330] Iteration 200, Testing net (#0)\n" + i +
         "10:00:02.500000  1234 solver.cpp:397]     Test net output #0: accuracy = 0.875\n";
}

TEST(TrainingLogReading, ReadsGlogPrefixesWithAndWithoutTheYear) {
  for (const std::string date : {"1121", "20261121"}) {
    SCOPED_TRACE("date field " + date);
    std::istringstream log(caffe_log(date));
    const TrainingLog read = read_training_log(log, "train.log");
    ASSERT_EQ(read.records.size(), 3u);
    EXPECT_EQ(read.records[0].kind, MetricsRecord::Kind::kRun);
    EXPECT_EQ(read.records[0].net_name, "LeNet");
    EXPECT_EQ(read.records[0].start_time, "1121 10:00:00");
    EXPECT_NE(read.records[0].solver_text.find("base_lr: 0.01"), std::string::npos);
    const MetricsRecord& train = read.records[1];
    EXPECT_EQ(train.kind, MetricsRecord::Kind::kTrain);
    EXPECT_EQ(train.iteration, 100);
    EXPECT_DOUBLE_EQ(train.loss.value_or(-1), 0.3);
    EXPECT_DOUBLE_EQ(train.lr.value_or(-1), 0.0099);
    EXPECT_DOUBLE_EQ(train.seconds, 0.75) << "seconds since 'Solving'";
    const MetricsRecord& test = read.records[2];
    EXPECT_EQ(test.kind, MetricsRecord::Kind::kTest);
    EXPECT_EQ(test.iteration, 200);
    ASSERT_EQ(test.outputs.size(), 1u);
    EXPECT_EQ(test.outputs[0].first, "accuracy");
    EXPECT_DOUBLE_EQ(test.outputs[0].second, 0.875);
  }
}

TEST(TrainingLogReading, AYearLikeDateWithoutTimeIsNoLogLine) {
  std::istringstream log("I20261121 not a time\n");
  EXPECT_THROW(read_training_log(log, "notes.txt"), Error);
}

// Found by the training_log fuzzer: an iteration of more digits than an int
// holds made std::stoi throw std::out_of_range, which ended `xtrain plot`
// with an uncaught exception. Now an error naming the file, line and number.
TEST(TrainingLogReading, IterationNumbersPastTheIntRangeAreAnErrorNamingTheLine) {
  const std::string prefix = "I1121 10:00:01.250000  1234 solver.cpp:218] ";
  for (const std::string& line :
       {prefix + "Iteration 99999999999, loss = 0.3", prefix + "Iteration 99999999999, lr = 0.01",
        prefix + "Iteration 99999999999, Testing net (#0)",
        prefix + "Iteration 100, Testing net (#99999999999)"}) {
    SCOPED_TRACE(line);
    std::istringstream log(caffe_log("1121") + line + "\n");
    testing::expect_error([&] { read_training_log(log, "train.log"); },
                          {"train.log:8", "99999999999", "is not a whole number from 0 to"});
  }
}

// std::regex (libstdc++) recurses once per character a pattern runs over: a
// 26,000-character "Progress:", "loss = " or "Test net output" line crashed
// `xtrain plot` with a stack overflow. Lines past 4096 characters are passed
// over; the lines around them are read as before.
TEST(TrainingLogReading, LinesTooLongForAnyTrainingLineArePassedOverWithoutCrashing) {
  const std::string prefix = "I1121 10:00:03.000000  1234 solver.cpp:218] ";
  const std::string run(1 << 20, '7');
  for (const std::string& line :
       {prefix + "    Progress: " + run + ", 5 images/s", prefix + "Iteration 300, loss = " + run,
        prefix + "    Test net output #0: " + run + " = 1", prefix + "Use " + run + ".",
        "a line of other output " + run}) {
    SCOPED_TRACE(line.substr(0, 60));
    std::istringstream log(caffe_log("1121") + line + "\n" + prefix +
                           "Iteration 400, loss = 0.2\n");
    const TrainingLog read = read_training_log(log, "train.log");
    ASSERT_EQ(read.records.size(), 4u);
    EXPECT_EQ(read.records[3].iteration, 400);
    EXPECT_DOUBLE_EQ(read.records[3].loss.value_or(-1), 0.2);
    EXPECT_TRUE(read.records[0].device.empty());
  }
}

}  // namespace
}  // namespace xtrain
