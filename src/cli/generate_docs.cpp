#include "cli/generate_docs.h"

#include <filesystem>

#include "cli/completion.h"
#include "cli/docs_model.h"
#include "cli/man_page.h"
#include "cli/run.h"
#include "support/error.h"
#include "support/output_file.h"

namespace ot::cli {

int generate_docs(const std::string& dir) {
  return run_guarded("offloadtool", [&] {
    namespace fs = std::filesystem;
    const docs::CommandDoc root = docs::describe_offloadtool();
    auto write = [&](const fs::path& sub, const std::string& name, const std::string& text) {
      fs::path folder = fs::path(dir) / sub;
      std::error_code ec;
      fs::create_directories(folder, ec);
      if (ec) throw Error({}, fmt::format("{}: cannot create the folder: {}", folder.string(), ec.message()));
      write_file_atomic((folder / name).string(), as_bytes(std::string_view(text)));
    };
    for (const docs::ManPage& page : docs::man_pages(root))
      write("share/man/man" + page.file.substr(page.file.rfind('.') + 1), page.file, page.text);
    const std::string bash = docs::bash_completion(root);
    write("share/bash-completion/completions", "offloadtool", bash);
    write("share/zsh/site-functions", "_offloadtool", docs::zsh_completion(root));
    write("share/fish/vendor_completions.d", "offloadtool.fish", docs::fish_completion(root));
    for (const docs::CommandDoc& c : root.subcommands) {
      if (!c.llvm) continue;
      // bash-completion loads a command's completion from the file named after it.
      write("share/bash-completion/completions", c.name, bash);
      write("share/fish/vendor_completions.d", c.name + ".fish", docs::fish_completion(root, c));
    }
    return 0;
  });
}

}  // namespace ot::cli
