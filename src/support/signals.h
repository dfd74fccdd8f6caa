// Removal of uncommitted temporary outputs when the process is interrupted.
#pragma once

namespace ot::signals {

void install();                       // SIGINT, SIGTERM, SIGHUP, SIGPIPE-safe
void register_temp(const char* path);  // path must stay valid until unregister
void unregister_temp(const char* path);

}  // namespace ot::signals
