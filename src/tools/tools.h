// Entry points of the applets and personalities (one file each in tools/).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli/applets.h"
#include "contents/tree.h"
#include "contents/walker.h"
#include "support/progress.h"
#include "support/human_size.h"

namespace ot::tools {

// Native applets: define_<applet> builds the applet's command line in `app`
// (description, options, subcommands), bound to an Options struct that the
// returned body owns, and runs nothing. cli/run.cpp parses the arguments with
// it and then calls the body; cli/docs_model.cpp reads man pages and
// completions from the same definition.
cli::AppletBody define_bundle(CLI::App& app);
cli::AppletBody define_compat(CLI::App& app);
cli::AppletBody define_compress(CLI::App& app);
cli::AppletBody define_list(CLI::App& app);
cli::AppletBody define_package(CLI::App& app);
cli::AppletBody define_join(CLI::App& app);
cli::AppletBody define_prune(CLI::App& app);
cli::AppletBody define_size(CLI::App& app);
cli::AppletBody define_split(CLI::App& app);
cli::AppletBody define_unbundle(CLI::App& app);
cli::AppletBody define_wrap(CLI::App& app);

// --threads N of the applets that walk containers (contents::Limits::threads):
// list, size, unbundle --extract-dir.
void add_threads_option(CLI::App& app, contents::Limits& limits);
// --progress / --no-progress of the applets whose work can take long (list,
// size, unbundle --extract-dir, prune, compress): Progress::Mode::Auto
// without either (a line on standard error only where it is a terminal).
void add_progress_option(CLI::App& app, Progress::Mode& mode);
// `limits` whose walk draws `progress`.
contents::Limits with_progress(contents::Limits limits, Progress& progress);
// --bytes of the applets whose human-readable output shows sizes (list, size,
// prune --dry-run, compress --info, compat select, package list): exact byte
// counts instead of support/human_size.h's binary units. JSON is always exact.
// `when` starts the help text: "with --info: ".
void add_bytes_flag(CLI::App& app, SizeStyle& sizes, std::string_view when = {});
// The error of every applet for a file the walk found nothing in (contents/walker.h).
using contents::fail_no_device_code;
using contents::kNoDeviceCode;
// A directory's item that is not walked (contents/tree.h: a symbolic link, a
// later hard link, a fifo...), as the applets report it: the text after
// "<path>: " ("symbolic link to <target>, not followed", "hard link to
// <first name>, read once", "fifo, skipped"), and one object of a JSON
// "skipped" array, {"path", "kind", "target"}, appended to `to` with the
// separator it needs.
std::string skipped_text(const contents::TreeItem& item, const std::string& root);
void append_skipped_json(fmt::memory_buffer& to, const contents::TreeItem& item, const std::string& root);

// Writes `s` to standard output as it is.
inline void print(std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); }

// Personalities: LLVM's command line (cli/llvm_tools.h), parsed and run.
int run_clang_offload_bundler(const cli::Invocation&);
int run_clang_offload_packager(const cli::Invocation&);
int run_clang_offload_wrapper(const cli::Invocation&);
int run_llvm_offload_wrapper(const cli::Invocation&);

}  // namespace ot::tools
