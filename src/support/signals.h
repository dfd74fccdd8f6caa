// Removal of uncommitted temporary outputs when the process is interrupted.
#pragma once

namespace ot::signals {

void install();                       // SIGINT, SIGTERM, SIGHUP, SIGPIPE-safe
void register_temp(const char* path);  // path must stay valid until unregister
void unregister_temp(const char* path);
// A folder being filled (a tree prune's staging folder): removed with all it
// holds, without following symbolic links, by system calls alone (openat,
// getdents64, fchmod, unlinkat: async-signal-safe). path must stay valid until
// unregister.
void register_temp_dir(const char* path);
void unregister_temp_dir(const char* path);

}  // namespace ot::signals
