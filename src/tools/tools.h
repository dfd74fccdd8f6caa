// Entry points of the applets and personalities (one file each in tools/).
#pragma once

#include "cli/applets.h"

namespace ot::tools {

int run_bundle(const cli::Invocation&);
int run_compat(const cli::Invocation&);
int run_compress(const cli::Invocation&);
int run_list(const cli::Invocation&);
int run_unbundle(const cli::Invocation&);
int run_clang_offload_bundler(const cli::Invocation&);
int run_package(const cli::Invocation&);
int run_clang_offload_packager(const cli::Invocation&);
int run_wrap(const cli::Invocation&);
int run_clang_offload_wrapper(const cli::Invocation&);

}  // namespace ot::tools
