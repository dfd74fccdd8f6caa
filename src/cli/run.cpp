#include "cli/run.h"

#include <cstdio>
#include <new>

#include "cli/diagnostics.h"
#include "support/error.h"

namespace ot::cli {

int run_guarded(std::string_view prog, const std::function<int()>& body) {
  try {
    int rc = body();
    if (std::fflush(stdout) != 0) {
      print_error(prog, "cannot write to standard output");
      return 1;
    }
    return rc;
  } catch (const Error& e) {
    print_error(prog, e.what());
  } catch (const LlvmError& e) {
    print_error(prog, e.what());
  } catch (const std::bad_alloc&) {
    print_error(prog, "out of memory");
  } catch (const std::exception& e) {
    print_error(prog, e.what());
  }
  return 1;
}

}  // namespace ot::cli
