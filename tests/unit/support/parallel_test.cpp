#include "support/parallel.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace ot;

TEST_CASE("run_jobs runs every job once, on any number of threads") {
  for (unsigned threads : {0u, 1u, 2u, 8u}) {
    std::vector<std::atomic<int>> runs(37);
    Crew crew(threads);
    run_jobs(crew, runs.size(), 0, [&](std::size_t i) { runs[i]++; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  Crew crew;
  run_jobs(crew, 0, 0, [](std::size_t) { FAIL("no job to run"); });
}

TEST_CASE("run_jobs: every job runs to its end, then the lowest-numbered failure is thrown") {
  for (unsigned threads : {1u, 4u}) {
    std::atomic<int> finished{0};
    Crew crew(threads);
    CHECK_THROWS_WITH_AS(run_jobs(crew, 10, 0,
                                  [&](std::size_t i) {
                                    if (i == 7 || i == 3) throw std::runtime_error("job " + std::to_string(i));
                                    finished++;
                                  }),
                         "job 3", std::runtime_error);
    CHECK(finished.load() == 8);
  }
}

TEST_CASE("run_pipeline consumes every item once, as they are made") {
  for (unsigned threads : {0u, 1u, 3u}) {
    std::deque<int> items;
    std::vector<std::atomic<int>> seen(500);
    std::atomic<int> misplaced{0};  // (assertions stay on this thread)
    Crew crew(threads);
    run_pipeline(
        crew, 0, items, [](auto add) { for (int i = 0; i < 500; ++i) add(i); },
        [&](std::size_t k, int& item) {
          if (static_cast<int>(k) != item) misplaced++;
          seen[k]++;
        });
    CHECK(misplaced.load() == 0);
    CHECK(items.size() == 500);
    for (const auto& s : seen) CHECK(s.load() == 1);
  }
  // one thread: made first, then consumed in order
  std::deque<int> items;
  std::vector<int> order;
  Crew alone(1);
  run_pipeline(alone, 0, items, [](auto add) { for (int i = 0; i < 5; ++i) add(i); },
               [&](std::size_t, int& item) { order.push_back(item); });
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("run_pipeline: the lowest failed item first, then the producer's failure") {
  for (unsigned threads : {1u, 4u}) {
    std::deque<int> items;
    Crew crew(threads);
    auto produce_then_fail = [](auto add) {
      for (int i = 0; i < 20; ++i) add(i);
      throw std::runtime_error("producer");
    };
    CHECK_THROWS_WITH_AS(run_pipeline(crew, 0, items, produce_then_fail,
                                      [](std::size_t k, int&) {
                                        if (k == 12 || k == 5) throw std::runtime_error("item " + std::to_string(k));
                                      }),
                         "item 5", std::runtime_error);
    std::deque<int> more;
    CHECK_THROWS_WITH_AS(run_pipeline(crew, 0, more, produce_then_fail, [](std::size_t, int&) {}), "producer",
                         std::runtime_error);
    CHECK(more.size() == 20);  // what was made before the failure was consumed
  }
}

TEST_CASE("a crew serves one stage after another") {
  Crew crew(3);
  CHECK(crew.size() == 3);
  for (int stage = 0; stage < 5; ++stage) {
    std::vector<std::atomic<int>> runs(64);
    if (stage == 4) crew.last_stage();
    run_jobs(crew, runs.size(), 0, [&](std::size_t i) { runs[i]++; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  // after its last stage the crew's helpers have left: the caller does the work alone
  std::deque<int> items;
  std::set<std::thread::id> late;
  run_pipeline(crew, 0, items, [](auto add) { for (int i = 0; i < 50; ++i) add(i); },
               [&](std::size_t, int&) { late.insert(std::this_thread::get_id()); });
  CHECK(items.size() == 50);
  CHECK(late == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("a crew: max_threads 1 keeps the work on the calling thread, in order") {
  Crew crew(4);
  std::deque<int> items;
  std::vector<int> order;
  run_pipeline(crew, 1, items, [](auto add) { for (int i = 0; i < 20; ++i) add(i); },
               [&](std::size_t, int& item) { order.push_back(item); });
  CHECK(order.size() == 20);
  CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("a crew: a failure in one stage leaves the crew fit for the next") {
  Crew crew(2);
  CHECK_THROWS_WITH_AS(run_jobs(crew, 6, 0,
                                [](std::size_t i) {
                                  if (i == 4) throw std::runtime_error("job 4");
                                }),
                       "job 4", std::runtime_error);
  std::atomic<int> done{0};
  run_jobs(crew, 6, 0, [&](std::size_t) { done++; });
  CHECK(done.load() == 6);
}
