// fmt's compiled part, for the static build only (meson.build). Debian ships
// fmt as a shared library and headers, no static archive; the static build
// used it header-only (FMT_HEADER_ONLY), which compiles fmt's implementation
// (format-inl.h) into every file that includes fmt: about 2.9 s of g++ -O2 CPU
// per file (measured: 0.75 s for a file formatting one string, 3.6 s
// header-only), some 70 files per build. Here it is compiled once: the
// functions format-inl.h defines, and the templates fmt/format.h declares
// `extern template` (or only declares) for its library to provide.
#include <fmt/format-inl.h>

namespace fmt::detail {

template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl<char>(locale_ref) -> char;
template auto decimal_point_impl<wchar_t>(locale_ref) -> wchar_t;

}  // namespace fmt::detail
