#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/applets.h"
#include "cli/diagnostics.h"
#include "cli/generate_docs.h"
#include "cli/release.h"
#include "cli/run.h"
#include "cli/version.h"
#include "support/edit_distance.h"
#include "support/error.h"

namespace ot::cli {
namespace {


void print_usage(std::FILE* to) {
  std::string text =
      "offloadtool " OT_VERSION " - " + std::string(kOffloadtoolSummary) + "\n\n"
      "usage: offloadtool <applet> [options...]\n"
      "       offloadtool <applet> --help\n\n"
      "applets:\n";
  for (const Applet& a : applets()) text += fmt::format("  {:<10} {}\n", a.name, a.summary);
  text += "\nInstalled (symlinked) under one of these names it behaves as that LLVM tool:\n ";
  for (const Personality& p : personalities()) text += fmt::format(" {}", p.name);
  text += "\n";
  std::fputs(text.c_str(), to);
}

}  // namespace

int dispatch(int argc, char** argv) {
  std::string argv0 = argc > 0 ? argv[0] : "offloadtool";
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);

  // The LLVM tool named: argv[0], or else the first argument, spelled exactly
  // as a tool name (`offloadtool clang-offload-bundler-22 -list ...`).
  PersonalityMatch match = find_personality(argv0);
  bool named_by_argument = false;
  if (!match.personality && !args.empty()) {
    PersonalityMatch m = find_personality(args[0]);
    if (m.personality && m.name == args[0]) match = std::move(m), named_by_argument = true;
  }
  auto slash = argv0.find_last_of('/');
  std::string prog = named_by_argument ? args[0] : slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
  // The release impersonated, chosen once, for a personality and a native
  // applet alike: a wrong versioned name or OFFLOADTOOL_LLVM is an error
  // before anything runs.
  ReleaseChoice release;
  try {
    release = choose_release(match.version, match.name);
  } catch (const Error& e) {
    print_error(match.personality ? prog : "offloadtool", e.what());
    return 1;
  }

  if (match.personality) {
    if (named_by_argument) args.erase(args.begin());
    Invocation inv{named_by_argument ? prog : argv0, prog, std::move(args), release.release, release.why};
    return match.personality->main(inv);
  }

  if (args.empty()) {
    print_usage(stderr);
    return 1;
  }
  const std::string& cmd = args[0];
  for (const TopLevelOption& t : top_level_options()) {
    if (std::ranges::find(t.names, cmd) == t.names.end()) continue;
    switch (t.action) {
      case TopLevelAction::Help:
        print_usage(stdout);
        return 0;
      case TopLevelAction::Version:
        std::fputs((version_text(release) + "\n").c_str(), stdout);
        return 0;
      case TopLevelAction::GenerateDocs:
        if (args.size() != 2) {
          print_error("offloadtool", "usage: offloadtool --generate-docs <dir>");
          return 1;
        }
        return generate_docs(args[1]);
    }
  }
  for (const Applet& a : applets()) {
    if (a.name == cmd) {
      Invocation inv{argv0, "offloadtool " + cmd, {args.begin() + 1, args.end()}, release.release, release.why};
      return run_applet(a, inv);
    }
  }
  std::string message = fmt::format("unknown applet '{}'", cmd);
  const Applet* best = nullptr;
  std::size_t best_distance = 3;  // suggest only close spellings
  for (const Applet& a : applets()) {
    std::size_t d = edit_distance(cmd, a.name);
    if (d < best_distance) best = &a, best_distance = d;
  }
  if (best) message += fmt::format(", did you mean '{}'?", best->name);
  message += " (see 'offloadtool --help')";
  print_error("offloadtool", message);
  return 127;
}

}  // namespace ot::cli
