#include "support/parallel.h"

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ot;

TEST_CASE("run_jobs runs every job once, on any number of threads") {
  for (unsigned threads : {0u, 1u, 2u, 8u}) {
    std::vector<std::atomic<int>> runs(37);
    run_jobs(runs.size(), threads, [&](std::size_t i) { runs[i]++; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  run_jobs(0, 0, [](std::size_t) { FAIL("no job to run"); });
}

TEST_CASE("run_jobs: every job runs to its end, then the lowest-numbered failure is thrown") {
  for (unsigned threads : {1u, 4u}) {
    std::atomic<int> finished{0};
    CHECK_THROWS_WITH_AS(run_jobs(10, threads,
                                  [&](std::size_t i) {
                                    if (i == 7 || i == 3) throw std::runtime_error("job " + std::to_string(i));
                                    finished++;
                                  }),
                         "job 3", std::runtime_error);
    CHECK(finished.load() == 8);
  }
}
