// The display lines: the progress line's figures, and the whole log still
// read by Caffe's own log parsers (tools/extra/parse_log.py and
// parse_log.sh), whose regular expressions are re-implemented here.
#include "solvers/training_progress.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "solver_test_net.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/lr_policy.hpp"

namespace xtrain {
namespace {

TEST(TrainingProgress, ProgressLineShowsEveryFigure) {
  ProgressFigures figures;
  figures.iteration = 100;
  figures.max_iter = 10000;
  figures.seconds_left = 396;
  figures.images_per_second = 1599.6;
  figures.learning_rate = 0.00992565f;
  EXPECT_EQ(progress_line(figures),
            "Progress: 100/10000 (1.0%), ETA 6m 36s, 1600 images/s, learning rate 0.00992565");
  figures.seconds_left = -1;
  figures.images_per_second = -1;
  EXPECT_EQ(progress_line(figures),
            "Progress: 100/10000 (1.0%), ETA unknown, learning rate 0.00992565");
}

TEST(TrainingProgress, EtaIsReadable) {
  EXPECT_EQ(format_eta(42.4), "42s");
  EXPECT_EQ(format_eta(396), "6m 36s");
  EXPECT_EQ(format_eta(2 * 3600 + 5 * 60 + 7), "2h 05m");
  EXPECT_EQ(format_eta(-3), "0s");
}

TEST(TrainingProgress, ImagesPerIterationCountsBatchIterSizeAndReplicas) {
  Net net(testing::linear_regression_net(3, 2, 1, false, ""), NetOptions{});
  EXPECT_DOUBLE_EQ(images_per_iteration(net, 1, 1), 3);
  EXPECT_DOUBLE_EQ(images_per_iteration(net, 2, 4), 24);
}

// Caffe's tools/extra/parse_log.py (BVLC/caffe master), copied as facts:
//   regex_iteration = re.compile('Iteration (\d+)')
//   regex_train_output = re.compile('Train net output #(\d+): (\S+) = ([\.\deE+-]+)')
//   regex_test_output = re.compile('Test net output #(\d+): (\S+) = ([\.\deE+-]+)')
//   regex_learning_rate = re.compile('lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?)')
// Each line: the last "Iteration N" seen is the row's iteration, "lr = X"
// sets the rate, and each net output line fills a row keyed by iteration
// (parse_line_for_net_output: a new row when the iteration changes).
struct ParsedRow {
  int iteration = -1;
  std::map<std::string, double> outputs;
};
struct ParsedLog {
  std::vector<ParsedRow> train;
  std::vector<ParsedRow> test;
  std::vector<double> learning_rates;
  std::vector<int> iterations_seen;
};

ParsedLog parse_log_py(const std::string& log) {
  const std::regex regex_iteration(R"(Iteration (\d+))");
  const std::regex regex_train_output(R"(Train net output #(\d+): (\S+) = ([\.\deE+-]+))");
  const std::regex regex_test_output(R"(Test net output #(\d+): (\S+) = ([\.\deE+-]+))");
  const std::regex regex_learning_rate(R"(lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?))");
  ParsedLog parsed;
  int iteration = -1;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, regex_iteration)) {
      iteration = std::stoi(match[1]);
      parsed.iterations_seen.push_back(iteration);
    }
    if (iteration == -1) continue;
    if (std::regex_search(line, match, regex_learning_rate)) {
      parsed.learning_rates.push_back(std::stod(match[1]));
    }
    for (auto [regex, rows] : {std::pair{&regex_train_output, &parsed.train},
                               std::pair{&regex_test_output, &parsed.test}}) {
      if (!std::regex_search(line, match, *regex)) continue;
      if (rows->empty() || rows->back().iteration != iteration) rows->push_back({iteration, {}});
      rows->back().outputs[match[2]] = std::stod(match[3]);
    }
  }
  return parsed;
}

// Caffe's tools/extra/parse_log.sh: `grep ', lr = ' | awk '{print $9}'` and
// `grep 'Test net output #0' | awk '{print $11}'` (the glog prefix is 4 fields).
std::vector<std::string> parse_log_sh_column(const std::string& log, const std::string& grep,
                                             int field) {
  std::vector<std::string> column;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(grep) == std::string::npos) continue;
    std::istringstream words(line);
    std::string word;
    for (int i = 0; i < field && words >> word; ++i) {
    }
    column.push_back(word);
  }
  return column;
}

std::string training_log(const SolverParameter& param) {
  SolverOptions options = testing::quiet_solver_options();
  auto solver = create_solver(param, options);
  return testing::solve_and_capture_log(*solver);
}

SolverParameter inv_solver() {
  SolverParameter param =
      testing::solver_param(testing::scalar_net(2),
                            "base_lr: 0.01 lr_policy: 'inv' gamma: 0.1 power: 0.75 max_iter: 6 "
                            "display: 2 test_iter: 2 test_interval: 3");
  param.clear_train_net_param();
  *param.mutable_net_param() = testing::scalar_net(2);
  return param;
}

TEST(TrainingProgress, CaffesParseLogPyStillReadsTheLog) {
  const SolverParameter param = inv_solver();
  const std::string log = training_log(param);
  const ParsedLog parsed = parse_log_py(log);

  // One train row per display (0, 2, 4; the final display at 6 prints no
  // train outputs), one test row per test (0, 3, 6).
  std::vector<int> train_iterations;
  for (const ParsedRow& row : parsed.train) train_iterations.push_back(row.iteration);
  EXPECT_EQ(train_iterations, (std::vector<int>{0, 2, 4})) << log;
  std::vector<int> test_iterations;
  for (const ParsedRow& row : parsed.test) test_iterations.push_back(row.iteration);
  EXPECT_EQ(test_iterations, (std::vector<int>{0, 3, 6})) << log;
  for (const ParsedRow& row : parsed.train) EXPECT_EQ(row.outputs.count("loss"), 1u);

  // Exactly Caffe's learning-rate lines, with the schedule's values: the
  // progress line must not add an "lr = " of its own.
  ASSERT_EQ(parsed.learning_rates.size(), 3u) << log;
  for (std::size_t i = 0; i < parsed.learning_rates.size(); ++i) {
    int step = 0;
    const float expected = learning_rate(param, static_cast<int>(2 * i), &step);
    EXPECT_NEAR(parsed.learning_rates[i], expected, 1e-5 * expected);  // 6 digits in the log
  }
  // The iteration never goes back: no line names another iteration.
  for (std::size_t i = 1; i < parsed.iterations_seen.size(); ++i) {
    EXPECT_GE(parsed.iterations_seen[i], parsed.iterations_seen[i - 1]) << log;
  }
}

TEST(TrainingProgress, CaffesParseLogShColumnsStillHoldNumbers) {
  const std::string log = training_log(inv_solver());
  const std::vector<std::string> rates = parse_log_sh_column(log, ", lr = ", 9);
  ASSERT_EQ(rates.size(), 3u) << log;
  for (const std::string& rate : rates) EXPECT_GT(std::stod(rate), 0) << rate;
  const std::vector<std::string> test_losses = parse_log_sh_column(log, "Test net output #0", 11);
  ASSERT_EQ(test_losses.size(), 3u) << log;
  for (const std::string& loss : test_losses) EXPECT_GE(std::stod(loss), 0) << loss;
}

TEST(TrainingProgress, EachDisplayHasAProgressLineAfterCaffesLines) {
  const SolverParameter param = inv_solver();
  const std::string log = training_log(param);
  const std::regex progress(
      R"(\]     Progress: (\d+)/6 \((\d+\.\d)%\), ETA (\S+( \S+)?)(, (\d+) images/s)?, learning rate (\S+)\n)");
  std::vector<int> iterations;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), progress);
       it != std::sregex_iterator(); ++it) {
    const int iteration = std::stoi((*it)[1]);
    iterations.push_back(iteration);
    EXPECT_NEAR(std::stod((*it)[2]), 100.0 * iteration / 6, 0.05);
    int step = 0;
    const float expected = learning_rate(param, iteration, &step);
    EXPECT_NEAR(std::stod((*it)[7]), expected, 1e-5 * expected);
    // Throughput once iterations have been timed.
    EXPECT_EQ((*it)[6].matched, iteration > 0) << (*it)[0];
    // Printed after Caffe's lines of the same display.
    const std::size_t at = static_cast<std::size_t>(it->position());
    EXPECT_LT(log.find("Iteration " + std::to_string(iteration) + " ("), at);
  }
  EXPECT_EQ(iterations, (std::vector<int>{0, 2, 4})) << log;
}

// A rate far too high: w = 1 - 1e30 after the first update, so the loss
// (w x)^2 / 2 is inf at iteration 1 and nan later. One warning, at the
// first display that shows it; Caffe's lines go on as before.
TEST(TrainingProgress, ADivergedLossIsSaidOnceWithWhatToChange) {
  SolverParameter param =
      testing::solver_param(testing::scalar_net(), "base_lr: 1e30 max_iter: 5 display: 1");
  const std::string log = training_log(param);
  const std::string said = "the loss is inf: training has diverged and will not recover";
  const std::size_t at = log.find(said);
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find(said, at + 1), std::string::npos) << "said twice:\n" << log;
  EXPECT_EQ(log.find("has diverged", at + said.size()), std::string::npos) << log;
  const std::size_t line_start = log.rfind("Iteration 1: ", at);
  ASSERT_NE(line_start, std::string::npos) << log;
  EXPECT_LT(log.find("Train net output #0: loss = inf"), line_start)
      << "Caffe's lines of the display come first:\n"
      << log;
  EXPECT_NE(log.find("lower base_lr (the rate is 1e+30 now)", at), std::string::npos) << log;
}

TEST(TrainingProgress, AFiniteLossIsNeverCalledDiverged) {
  EXPECT_EQ(training_log(inv_solver()).find("diverged"), std::string::npos);
}

}  // namespace
}  // namespace xtrain
