#include "support/parallel.h"

namespace ot {

Crew::Crew(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 1; t < threads; ++t) {
    try {
      helpers_.emplace_back([this] { serve(); });
    } catch (const std::system_error&) {
      break;  // no more threads to be had: fewer do the same work
    }
  }
}

Crew::~Crew() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void Crew::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || last_ || wanted_ > 0; });
    if (stop_ || wanted_ == 0) return;  // the crew's end, or its last task is taken
    --wanted_;
    ++busy_;
    const std::function<void()>* task = task_;
    lock.unlock();
    (*task)();
    lock.lock();
    if (--busy_ == 0) done_.notify_all();
    if (last_) return;
  }
}

void Crew::run(unsigned helpers, const std::function<void()>& task, const std::function<void()>& caller) {
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    wanted_ = std::min(helpers, static_cast<unsigned>(helpers_.size()));
    last_ = last_next_;
  }
  wake_.notify_all();
  std::exception_ptr error;
  try {
    caller();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::unique_lock lock(mutex_);
    wanted_ = 0;
    done_.wait(lock, [&] { return busy_ == 0; });
    task_ = nullptr;
    if (last_) stop_ = true;  // a helper that never woke for the last task leaves when it does
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ot
