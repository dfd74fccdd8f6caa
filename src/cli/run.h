// Runs a command body and reports its failure once: ot::Error, LlvmError,
// out-of-memory and any other exception become one "<prog>: error:" line and exit 1.
// Native applets: their command line is built (define), parsed, then run.
#pragma once

#include <functional>
#include <string_view>

#include "cli/applets.h"
#include "cli/release.h"

namespace ot::cli {

int run_guarded(std::string_view prog, const std::function<int()>& body);

// Builds applet `a`'s command line in `app` as `prog` ("offloadtool bundle"),
// with --help and --version, and returns its body; runs nothing.
// `release`: what its --version names (cli/release.h).
AppletBody define_applet(const Applet& a, CLI::App& app, const std::string& prog, const ReleaseChoice& release);

// Parses inv.args with the applet's command line, then runs it: --help prints
// the (sub)command's help, --version the version (exit 0); a usage error or a
// failure is one "<prog>: error:" line and exit a.error_exit.
int run_applet(const Applet& a, const Invocation& inv);

}  // namespace ot::cli
