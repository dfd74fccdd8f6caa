// The applet and personality tables: the one place a command is registered.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "target/llvm_release.h"

namespace CLI {
class App;
}

namespace ot::cli {

namespace llvmcl {
struct Tool;
}

// What a command sees: the name it was invoked as (argv[0] exactly as typed),
// the name used in its messages, and the arguments after the command name.
struct Invocation {
  std::string argv0;                 // as typed (LLVM prints this in "error:" lines)
  std::string prog;                  // basename of argv0, or "offloadtool <applet>"
  std::vector<std::string> args;
  // The LLVM release impersonated (cli/release.h): what LLVM-defined bytes and
  // texts follow, under an LLVM name and in the native applets alike.
  target::LlvmRelease release = target::LlvmRelease::Llvm22;
  std::string release_why;           // how it was chosen, for --version
};

using CommandMain = int (*)(const Invocation&);

// A native applet's body: runs it once its command line has parsed the arguments.
using AppletBody = std::function<int(const Invocation&)>;
// Builds a native applet's command line (tools/tools.h); runs nothing.
using DefineApplet = AppletBody (*)(CLI::App&);

struct Applet {
  std::string_view name;
  std::string_view summary;
  DefineApplet define;
  int error_exit = 1;        // the exit status of errors and usage errors (compat keeps 1 for "no")
};

struct Personality {
  std::string_view name;     // matched against argv[0]'s basename with a boundary rule
  CommandMain main;
  // Its command line in a release (cli/llvm_tools.h): help, --version, man page, completions.
  const llvmcl::Tool& (*tool)(target::LlvmRelease);
};

// What `offloadtool` takes instead of an applet (cli/dispatch.cpp).
enum class TopLevelAction : std::uint8_t { Help, Version, GenerateDocs };
struct TopLevelOption {
  std::array<std::string_view, 3> names;  // unused slots empty
  std::string_view description;           // empty: not documented (internal)
  TopLevelAction action;
};
std::span<const TopLevelOption> top_level_options();  // the documented ones and the internal ones

constexpr std::string_view kOffloadtoolSummary = "bundle, package and wrap GPU offload binaries";

std::span<const Applet> applets();
std::span<const Personality> personalities();

// The personality argv[0] selects, or nullptr. A name matches when it equals the
// basename, or appears in it bounded by the start or a '-' before it and by the
// end, a '-' (version suffix such as -19) or ".exe" after it.
struct PersonalityMatch {
  const Personality* personality = nullptr;
  std::optional<int> version;  // the release a "-N" right after the name asks for (clang-offload-bundler-22)
  std::string name;            // the basename without ".exe"
};
PersonalityMatch find_personality(std::string_view argv0);

int dispatch(int argc, char** argv);

}  // namespace ot::cli
