#include "contents/kpack_search.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "target/processors.h"

namespace ot::contents {
namespace {

// The loader's truthiness of a flag: set, non-empty, first character not '0'.
bool flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && *v != '0';
}

std::vector<std::string> split_path_list(const char* name) {
  std::vector<std::string> out;
  const char* v = std::getenv(name);
  if (!v) return out;
  std::string_view s(v);
  while (!s.empty()) {
    const std::size_t colon = s.find(':');
    if (std::string_view part = s.substr(0, colon); !part.empty()) out.emplace_back(part);
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  return out;
}

bool regular_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

KpackEnv KpackEnv::from_environment() {
  return {flag("ROCM_KPACK_DISABLE"), split_path_list("ROCM_KPACK_PATH"), split_path_list("ROCM_KPACK_PATH_PREFIX")};
}

std::vector<std::string> kpack_candidates(const formats::KpackRef& ref, const std::string& binary_dir,
                                          const KpackEnv& env) {
  if (env.disabled) return {};
  if (!env.path.empty()) return env.path;
  std::vector<std::string> out = env.prefix;
  for (const std::string& p : ref.search_paths) {
    if (p.starts_with('/'))
      out.push_back(p);
    else  // weakly_canonical in the loader: "." and ".." resolved
      out.push_back((std::filesystem::path(binary_dir) / p).lexically_normal().string());
  }
  return out;
}

namespace {

// Whether the loader could put `arch` in place of the placeholder: a target ID
// as the HIP runtime names a device (kpack_arch_order's strings) — "gfx" and a
// digit, then letters, digits and dashes ("gfx90a", "gfx10-3-generic"), each
// feature ":name+" or ":name-". Other names fitting the pattern
// ("k_multi.kpack", "k_old.kpack") are never opened by the loader, so they are
// not the binary's archives (read as one, a stray file would fail the walk).
bool loadable_arch(std::string_view arch) {
  auto word = [](std::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
  };
  const std::size_t colon = arch.find(':');
  const std::string_view processor = arch.substr(0, colon);
  if (processor.size() < 4 || !processor.starts_with("gfx") || processor[3] < '0' || processor[3] > '9' ||
      !word(processor))
    return false;
  for (std::string_view rest = colon == std::string_view::npos ? "" : arch.substr(colon); !rest.empty();) {
    rest.remove_prefix(1);  // the ':'
    const std::size_t next = rest.find(':');
    const std::string_view feature = rest.substr(0, next);
    if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-') ||
        !word(feature.substr(0, feature.size() - 1)))
      return false;
    rest = next == std::string_view::npos ? "" : rest.substr(next);
  }
  return true;
}

}  // namespace

std::vector<KpackFound> kpack_glob(const std::string& candidate) {
  const std::size_t at = candidate.find(formats::kGfxArchPlaceholder);
  if (at == std::string::npos) {
    if (regular_file(candidate)) return {{"", candidate}};
    return {};
  }
  const std::size_t slash = candidate.rfind('/', at);
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;  // where the file name starts
  const std::string dir = slash == std::string::npos ? "." : candidate.substr(0, slash == 0 ? 1 : slash);
  const std::string head = candidate.substr(name_at, at - name_at);
  const std::string tail = candidate.substr(at + formats::kGfxArchPlaceholder.size());
  if (tail.find('/') != std::string::npos) return {};  // the placeholder names a folder: not listed
  std::vector<KpackFound> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= head.size() + tail.size() || !name.starts_with(head) || !name.ends_with(tail)) continue;
    std::string arch(name.substr(head.size(), name.size() - head.size() - tail.size()));
    if (!loadable_arch(arch)) continue;
    std::string path = candidate.substr(0, name_at) + std::string(name);
    if (regular_file(path)) out.push_back({std::move(arch), std::move(path)});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const KpackFound& a, const KpackFound& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> kpack_arch_order(std::string_view isa) {
  if (const std::size_t dd = isa.rfind("--"); dd != std::string_view::npos) isa.remove_prefix(dd + 2);
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t colon = isa.find(':');
    parts.push_back(isa.substr(0, colon));
    if (colon == std::string_view::npos) break;
    isa.remove_prefix(colon + 1);
  }
  const std::string_view processor = parts.front();
  // A target ID has at most two features; more (hostile input) are not tried.
  const std::vector<std::string_view> features(parts.begin() + 1, parts.begin() + std::min<std::size_t>(parts.size(), 9));
  std::vector<std::string> out;
  // Every subset, by a mask counted down from all ones, feature k at bit n-1-k.
  auto subsets = [&](std::string_view proc) {
    const std::size_t n = features.size();
    for (std::uint64_t mask = (1ull << n); mask-- > 0;) {
      std::string s(proc);
      for (std::size_t k = 0; k < n; ++k)
        if (mask & (1ull << (n - 1 - k))) {
          s += ':';
          s += features[k];
        }
      out.push_back(std::move(s));
    }
  };
  subsets(processor);
  if (const target::ProcessorInfo* p = target::find_processor(processor); p && !p->generic.empty())
    subsets(p->generic);
  return out;
}

}  // namespace ot::contents
