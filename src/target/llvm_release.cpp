#include "target/llvm_release.h"

#include <algorithm>
#include <string>

namespace ot::target {
namespace {

constexpr ReleaseTraits kReleases[] = {
    {
        .release = LlvmRelease::Llvm19,
        .major = 19,
        .full_version = "19.1.7",
        .debian_revision = "3~deb12u1",
        .bundle_ids = BundleIdRules::LastDashArch,
        .ccob_version = 2,
        .ccob_sniff_size = 20,
        .ccob_known_versions_only = false,
        .ccob_object_reader = false,
        .several_bundles = false,
        .hip_offload_kind = 3,
        .sycl_offload_kind = 0,
        .entries = EntryAbi::PerKind32,
        .packager_requires_triple = true,
        .packager_help_without_arguments = false,
        .packager_old_name_deprecated = false,
        .offload_binary_version = 1,
        .packager_extracts_all = false,
        .spirv_image_kind = false,
        .hip_host_rest = "unknown-linux-",
        .hip_host_rest_aarch64 = "unknown-linux-",
        .hip_host_rest_pe = "unknown-linux-",
        .hip_host_from_target = false,
        .hip_ids_descending = false,
    },
    {
        .release = LlvmRelease::Llvm22,
        .major = 22,
        .full_version = "22.1.8",
        .debian_revision = "1~deb12u1",
        .bundle_ids = BundleIdRules::FivePieces,
        .ccob_version = 3,
        .ccob_sniff_size = 8,
        .ccob_known_versions_only = true,
        .ccob_object_reader = false,
        .several_bundles = false,
        .hip_offload_kind = 4,
        .sycl_offload_kind = 8,
        .entries = EntryAbi::Unified56,
        .packager_requires_triple = false,
        .packager_help_without_arguments = true,
        .packager_old_name_deprecated = true,
        .offload_binary_version = 1,
        .packager_extracts_all = false,
        .spirv_image_kind = false,
        .hip_host_rest = "unknown-linux-gnu",
        .hip_host_rest_aarch64 = "unknown-linux-gnu",
        .hip_host_rest_pe = "unknown-linux-gnu",
        .hip_host_from_target = false,
        .hip_ids_descending = false,
    },
    {
        .release = LlvmRelease::Llvm23,
        .major = 23,
        .full_version = "23.1.4",
        .debian_revision = "2",
        .bundle_ids = BundleIdRules::FivePiecesAmdgpu,
        .ccob_version = 3,
        .ccob_sniff_size = 8,
        .ccob_known_versions_only = true,
        .ccob_object_reader = true,
        .several_bundles = true,
        .hip_offload_kind = 4,
        .sycl_offload_kind = 8,
        .entries = EntryAbi::Unified56,
        .packager_requires_triple = false,
        .packager_help_without_arguments = true,
        .packager_old_name_deprecated = true,
        .offload_binary_version = 2,
        .packager_extracts_all = true,
        .spirv_image_kind = true,
        .hip_host_rest = "pc-linux-gnu",
        .hip_host_rest_aarch64 = "unknown-linux-gnu",
        .hip_host_rest_pe = "pc-windows-msvc",
        .hip_host_from_target = true,
        .hip_ids_descending = true,
    },
};
static_assert(std::ranges::is_sorted(kReleases, {}, &ReleaseTraits::major));

}  // namespace

const ReleaseTraits& traits(LlvmRelease release) {
  for (const ReleaseTraits& t : kReleases)
    if (t.release == release) return t;
  return kReleases[0];  // unreachable: every enumerator has a row
}

std::span<const ReleaseTraits> supported_releases() { return kReleases; }

std::optional<LlvmRelease> release_for_major(int major) {
  for (const ReleaseTraits& t : kReleases)
    if (t.major == major) return t.release;
  return std::nullopt;
}

std::string_view supported_majors_text() {
  static const std::string text = [] {
    std::string s;
    for (const ReleaseTraits& t : kReleases) s += (s.empty() ? "" : ", ") + std::to_string(t.major);
    return s;
  }();
  return text;
}

}  // namespace ot::target
