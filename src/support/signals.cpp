#include "support/signals.h"

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace ot::signals {
namespace {

// A fixed table read by the handler: async-signal-safe (no allocation, no locks).
constexpr int kSlots = 256;
std::array<std::atomic<const char*>, kSlots> g_temps{};

void on_signal(int sig) {
  for (auto& slot : g_temps) {
    const char* p = slot.load();
    if (p) ::unlink(p);
  }
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) std::signal(sig, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout becomes an EPIPE write error instead
}

void register_temp(const char* path) {
  for (auto& slot : g_temps) {
    const char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, path)) return;
  }
}

void unregister_temp(const char* path) {
  for (auto& slot : g_temps) {
    const char* expected = path;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

}  // namespace ot::signals
