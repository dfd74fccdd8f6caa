#include "cli/run.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <new>

#include "cli/diagnostics.h"
#include "cli/version.h"
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

AppletBody define_applet(const Applet& a, CLI::App& app, const std::string& prog, const ReleaseChoice& release) {
  app.name(prog);
  app.set_version_flag("--version", [release] { return version_text(release); });
  return a.define(app);
}

int run_applet(const Applet& a, const Invocation& inv) {
  CLI::App app;
  const ReleaseChoice release{inv.release, inv.release_why};
  AppletBody body = define_applet(a, app, inv.prog, release);
  std::vector<std::string> args(inv.args.rbegin(), inv.args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    const auto subs = app.get_subcommands();  // `applet sub --help` shows the subcommand's help
    std::fputs((subs.empty() ? app.help() : subs.front()->help()).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::fputs((version_text(release) + "\n").c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    print_error(inv.prog, fmt::format("{} (see '{} --help')", e.what(), inv.prog));
    return a.error_exit;
  }
  bool finished = false;
  int rc = run_guarded(inv.prog, [&] {
    int r = body(inv);
    finished = true;
    return r;
  });
  return finished ? rc : a.error_exit;
}

}  // namespace ot::cli
