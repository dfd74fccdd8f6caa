#include "support/json_schemas.h"

#include <iterator>

namespace ot::json {
namespace {

using F = SchemaField;

constexpr std::string_view kConvention =
    "Every --json output is one JSON object on standard output, ended by a newline. Errors and warnings are "
    "not JSON: they go to standard error as text, and the exit status says whether the command succeeded.\n"
    "\n"
    "The object's first member is \"schema\": \"offloadtool-<output>/<major>\", where <output> is the applet "
    "(list) or the applet and what it prints (compress-info, package-list), and <major> the major version of "
    "its members. Within a major version members are only ever added: a reader checks \"schema\" and ignores "
    "members it does not know. A member renamed, removed, moved or given another meaning, or a schema "
    "renamed, makes a new major version; the History of each schema below says what its earlier majors were. "
    "There is no separate \"version\" member.\n"
    "\n"
    "Numbers are decimal; counts, sizes and offsets are integers counting bytes, and the few fractions (ratio, "
    "share) say so. null stands for a value that does not apply or is not known, as each member says. Strings "
    "carry the bytes they were read as (file names, entry IDs, member names), escaped as JSON requires; where "
    "a byte is not printable ASCII the schema says how it is written.";

constexpr F kCompatFields[] = {
    {"schema", "\"offloadtool-compat/1\""},
    {"command",
     "the subcommand that printed it: \"check\", \"canonical\", \"select\", \"verify\" or \"detect\"; the members "
     "after it are that subcommand's"},
    {"check: rules",
     "\"runtime\" (the HIP and OpenMP runtimes' rules), or with --bundler \"bundler19\" or \"bundler22\" (the "
     "clang-offload-bundler of the LLVM release impersonated)"},
    {"check: source",
     "the code object file given instead of an ID, described: \"<file>: AMDGPU code object v<n>, e_flags "
     "0x<hex>\"; null when an ID was given"},
    {"check: code_object", "the code object, a spec (below)"},
    {"check: target", "the target, a spec"},
    {"check: compatible", "true when the code object runs on the target"},
    {"check: generic", "true when it matched through a generic target (gfx9-generic...)"},
    {"check: steps[]", "the rules applied, in order; the first \"fail\" decides"},
    {"check: steps[].rule", "\"kind\", \"triple\", \"processor\", \"xnack\"... (\"exact\" for LLVM's first test)"},
    {"check: steps[].verdict", "\"pass\", \"fail\" or \"skip\""},
    {"check: steps[].detail", "what was compared, in words"},
    {"check: targets[]",
     "instead of target, compatible, generic and steps, when a list of targets was given: one {\"target\", "
     "\"compatible\", \"generic\", \"steps\"} per target, in order, each what that target alone gets"},
    {"check: compatible (with a list)", "true when the code object runs on every target of the list"},
    {"canonical: results[]", "one per ID given, in order"},
    {"canonical: results[].input", "the ID as given"},
    {"canonical: results[].canonical", "its canonical spelling; null when it does not parse"},
    {"canonical: results[].error", "why it does not parse; null when it does"},
    {"select: file", "the file as given"},
    {"select: rules", "as for check"},
    {"select: target", "the target, a spec"},
    {"select: selected", "the index (in entries) of the entry a runtime would load; null when none fits"},
    {"select: entries[]", "every device-code entry of the file, in file order"},
    {"select: entries[].index", "0, 1, ..."},
    {"select: entries[].id", "the entry ID as stored"},
    {"select: entries[].location", "its container and index: \"<container>, entry <n>\""},
    {"select: entries[].offset",
     "where its bytes are: in the file, or in the decompressed bundle or archive member when they are not "
     "stored in the file as they are"},
    {"select: entries[].size", "its bytes"},
    {"select: entries[].compressed", "true inside a compressed bundle, or for a compressed NVIDIA fatbin entry"},
    {"select: entries[].verdict",
     "\"selected\", \"compatible\" (but another is preferred) or \"rejected\""},
    {"select: entries[].reason", "why rejected, or why another was preferred; null for the selected entry"},
    {"select: entries[].canonical", "the ID's canonical spelling; null when it does not parse"},
    {"select: entries[].code_object",
     "the target ID the payload's AMDGPU ELF header names; null when the payload is no AMDGPU code object"},
    {"select: hint", "when nothing fits, what would; else null"},
    {"select: records[]",
     "instead of selected, entries and hint, for a kpack'd binary (rules \"kpack\", docs/kpack.md): one per "
     "registration record, what AMD's loader takes for the target from the archives found -- {\"key\" (the binary "
     "key, \"lib/libx.so#0\"), \"selected\" (an index into its entries, or null), \"entries\" (each {\"index\", "
     "\"id\" (the architecture), \"location\", \"archive\", \"offset\" (in the archive), \"size\", \"compressed\", "
     "\"verdict\", \"reason\"}), \"stubs\" (archives listing an architecture tried first but lacking the key: "
     "passed, as the HIP runtime does since rocm-systems #9953), \"hint\"}; the exit status is 0 when every record "
     "has a selection"},
    {"select: selections[]",
     "when a list of targets was given: one object per target, in order, holding the members after rules that "
     "the target alone gets (target, selected, entries, hint; or target, records); the exit status is 0 when "
     "every target has an entry"},
    {"verify: files[]", "one per file given, in order"},
    {"verify: files[].file", "the file as given"},
    {"verify: files[].containers[]", "each container of device code found, in file order"},
    {"verify: files[].containers[].name", "the container: its chain of members, sections and bundles"},
    {"verify: files[].containers[].ids[]", "its entry IDs as stored"},
    {"verify: files[].findings[]", "the rules broken"},
    {"verify: files[].findings[].rule", "the rule's name (\"duplicate-target\", \"no-device-code\"...)"},
    {"verify: files[].findings[].severity", "\"error\" (a violation) or \"warning\""},
    {"verify: files[].findings[].container", "the container (or the file) it concerns"},
    {"verify: files[].findings[].ids[]", "the entry IDs concerned"},
    {"verify: files[].findings[].message", "what is wrong, in words"},
    {"verify: violations", "the number of findings of severity \"error\" (exit 1 when not 0)"},
    {"verify: warnings", "the number of findings of severity \"warning\""},
    {"verify: skipped[]",
     "only when a directory was given (added within major 1): what its walk did not read, as list's "
     "\"skipped\" ({\"path\", \"kind\", \"target\"}); files[] then holds the directory's files with device "
     "code, or the directory itself when none has any"},
    {"detect: topology", "the amdkfd topology folder read (/sys/class/kfd/kfd/topology/nodes)"},
    {"detect: found_topology", "false when there is none (no AMD GPU driver)"},
    {"detect: cpu_nodes[]", "the node numbers of the CPUs"},
    {"detect: gpus[]", "one per AMD GPU node, in node order (NVIDIA GPUs: nvidia_gpus[])"},
    {"detect: gpus[].node", "its node number"},
    {"detect: gpus[].gfx_target_version", "as the kernel driver gives it (90010 for gfx90a)"},
    {"detect: gpus[].processor", "\"gfx90a\"; \"\" when the version names no processor"},
    {"detect: gpus[].target_id", "the canonical target ID (\"gfx90a:sramecc+:xnack-\"); \"\" when not known"},
    {"detect: gpus[].apu", "true when the node has CPU cores as well"},
    {"detect: gpus[].vendor_id", "PCI vendor ID"},
    {"detect: gpus[].device_id", "PCI device ID"},
    {"detect: gpus[].sramecc", "\"on\" or \"off\"; null when the processor has no sramecc feature"},
    {"detect: gpus[].xnack",
     "\"on\", \"off\" or \"any\" (the setting processes run with: --xnack, HSA_XNACK, else any); null when "
     "not supported"},
    {"detect: gpus[].note", "why the target ID is incomplete or missing; else null"},
    {"detect: cuda", "the CUDA driver asked for NVIDIA GPUs (docs/gpu-detection.md)"},
    {"detect: cuda.library",
     "the library loaded: \"libcuda.so.1\" (found as dlopen finds it), or OFFLOADTOOL_LIBCUDA's value"},
    {"detect: cuda.how",
     "\"dlopen\" (loaded in offloadtool's process: the shared build) or \"helper\" (the static build: loaded "
     "by a small dynamically linked helper the binary carries and runs), or \"none\" when library is a path "
     "that does not exist (nothing was loaded)"},
    {"detect: cuda.loaded", "true when the library loaded and has the driver API's entry points"},
    {"detect: cuda.driver_version", "cuDriverGetVersion's value (12020 for CUDA 12.2); null when not known"},
    {"detect: cuda.init_result", "cuInit's CUresult (0 success, 100 CUDA_ERROR_NO_DEVICE); null when not called"},
    {"detect: cuda.init_result_name", "cuGetErrorName's name of it; null when the driver gives none"},
    {"detect: cuda.error",
     "why no NVIDIA GPU is listed, as the text output says it (\"no NVIDIA driver (...)\", \"no NVIDIA GPU "
     "(...)\" or what failed); null when the driver listed one"},
    {"detect: nvidia_gpus[]", "one per CUDA device, in the driver's order"},
    {"detect: nvidia_gpus[].ordinal", "its CUDA device ordinal (0, 1, ...)"},
    {"detect: nvidia_gpus[].compute_capability", "\"8.6\"; null when the driver could not say"},
    {"detect: nvidia_gpus[].target", "\"sm_86\": what --keep-detected keeps for it; null when not known"},
    {"detect: nvidia_gpus[].name", "cuDeviceGetName's (\"NVIDIA H100 80GB HBM3\"); \"\" when not known"},
    {"detect: nvidia_gpus[].note", "the driver call that failed for this device; else null"},
    {"spec: text", "a target or code object as given"},
    {"spec: form", "\"bundle-id\" (hip-amdgcn-amd-amdhsa--gfx90a) or \"target-id\" (gfx90a:xnack+)"},
    {"spec: kind", "the offload kind of a bundle ID (\"hip\"); \"\" for a target ID"},
    {"spec: triple", "the triple of a bundle ID; \"\" for a target ID"},
    {"spec: processor", "\"gfx90a\", \"sm_80\"; \"\" when none"},
    {"spec: features", "{\"sramecc\": ..., \"xnack\": ...}, each \"any\", \"on\" or \"off\""},
    {"spec: canonical", "the canonical spelling"},
    {"spec: generic", "true for a generic target"},
    {"spec: known_to_llvm19", "false for a processor LLVM 19 does not know"},
};

constexpr F kCompressInfoFields[] = {
    {"schema", "\"offloadtool-compress-info/2\""},
    {"file", "the file as given (\"-\" for standard input)"},
    {"size", "the file's size; for a file of bundles, where its last bundle ends"},
    {"bundles[]", "each bundle, compressed or not, in file order"},
    {"bundles[].index", "0, 1, ..."},
    {"bundles[].offset",
     "where the bundle starts in the file; null where its bytes do not lie there as stored (inside a "
     "compressed archive member)"},
    {"bundles[].path",
     "only for a file that is not itself a bundle (an object, library, archive or package): the chain of "
     "members and sections that holds the bundle"},
    {"bundles[].size", "the bytes the bundle takes"},
    {"bundles[].compressed", "true for a compressed bundle (CCOB); the members below are only there when true"},
    {"bundles[].format_version", "the CCOB format version, 1 to 3"},
    {"bundles[].method", "\"zstd\" or \"zlib\""},
    {"bundles[].header_size", "the CCOB header's bytes"},
    {"bundles[].total_size", "header and compressed bytes, as the header records them; null for version 1"},
    {"bundles[].compressed_size", "the compressed bytes"},
    {"bundles[].uncompressed_size", "the bundle's bytes once decompressed, as the header records them"},
    {"bundles[].ratio", "uncompressed_size / compressed_size, a fraction with 4 decimals"},
    {"bundles[].window_log",
     "log2 of the zstd window, or zlib's window bits; null when the stream's header cannot be read"},
    {"bundles[].content_size", "the size the zstd frame records; null when absent, and for zlib"},
    {"bundles[].stored_hash",
     "the hash in the header, \"0x\" and 16 hex digits (LLVM's truncated MD5: the first 8 digest bytes as a "
     "little-endian integer)"},
    {"bundles[].recomputed_hash", "the same hash computed over the decompressed bundle"},
    {"bundles[].hash_match", "true when they are equal"},
};

constexpr F kListFields[] = {
    {"schema", "\"offloadtool-list/2\""},
    {"entries[]", "every device-code entry of every file, in the order found"},
    {"entries[].file", "the file as given"},
    {"entries[].path",
     "the chain that holds the entry: the file, archive members, the section, the bundle (\"section "
     ".hip_fatbin\", \"bundle 3 at 0x2000\")"},
    {"entries[].index", "the entry's index in its container"},
    {"entries[].id", "the entry ID as stored"},
    {"entries[].target", "its canonical target; the ID as stored when it does not parse"},
    {"entries[].triple",
     "its vendor's triple: the bundle entry ID's (\"amdgcn-amd-amdhsa\", \"nvptx64-nvidia-cuda\", the host's; empty "
     "fields at its end left out); \"nvptx64-nvidia-cuda\" for an NVIDIA fatbin entry; for a bare code object its "
     "ELF machine's (AMDGPU: \"amdgcn-amd-amdhsa\"; cubin, PTX: \"nvptx64-nvidia-cuda\"); null when the ID does not "
     "parse"},
    {"entries[].processor", "the processor the code object's header names; null when it names none"},
    {"entries[].offset",
     "where the entry's bytes lie in the file; null where they do not lie there contiguous and uncompressed "
     "(inside a compressed bundle, or a tar, zip, cpio or rpm member); "
     "for an NVIDIA fatbin entry, where its bytes lie as stored, compressed or not"},
    {"entries[].size", "the bytes the entry takes as stored"},
    {"entries[].compressed", "true inside a compressed bundle, or for a compressed NVIDIA fatbin entry"},
    {"entries[].uri",
     "\"file://<absolute path>#offset=<n>&size=<n>\", the code object URI of the ROCm tools; null where "
     "offset is"},
    {"entries[].kind", "\"cubin\", \"ptx\" or \"kind 0x<hex>\" for an NVIDIA fatbin entry; null for the others"},
    {"entries[].uncompressed_size",
     "the bytes the entry decompresses to; equal to size for every entry but a compressed fatbin or kpack entry"},
    {"entries[].kpack",
     "for a code object of an AMD kpack archive, {\"archive\", \"binary\", \"arch\", \"ordinal\", \"offset\"}: the "
     "archive's path (the file or member as named, or where a kpack'd binary's record found it), the TOC's binary key "
     "(\"lib/libx.so#0\") and architecture, the entry's ordinal, and where its stored bytes (a zstd frame where "
     "compressed) lie in the archive; null for every other entry. The entries a kpack'd binary's records find have "
     "offset and uri null (their bytes lie in the archive)"},
    {"files[]",
     "one per file given, in order, after all entries; for a directory given, one per file of it that holds "
     "device code or failed (its path as the directory was given, then the path inside it), or the directory "
     "itself when none does"},
    {"files[].file", "the file as given"},
    {"files[].entries", "how many entries of it were listed"},
    {"files[].kpack_missing",
     "only for a kpack'd binary (docs/kpack.md): the search paths of its marker where no kpack archive was found, "
     "or the one reason none was looked up (\"archives not looked up: ...\")"},
    {"files[].error",
     "only for a file that failed (no device code, cannot be read to its end): the message; its entries found "
     "before the failure are listed"},
    {"skipped[]",
     "only when a directory was given: what its walk did not read, in the order of its paths -- each "
     "{\"path\", \"kind\", \"target\"}, kind \"symlink\" (not followed; target: the link's text), \"hard link\" (a "
     "later name of a file listed under its first name; target: that name), or \"fifo\", \"socket\", "
     "\"character device\", \"block device\" (target: null)"},
};

constexpr F kPackageListFields[] = {
    {"schema", "\"offloadtool-package-list/2\""},
    {"file", "the input as given"},
    {"images[]", "every image of every offload binary found, in container order"},
    {"images[].index", "0, 1, ..."},
    {"images[].origin", "LLVM's buffer identifier: the input, or the archive member's name"},
    {"images[].container",
     "\"raw\", \"section <name>\", \"bitcode global <n> in .llvm.offloading\", or \"<archive>(<member>), \" and "
     "one of these"},
    {"images[].binary.offset", "where the offload binary's header is"},
    {"images[].binary.size", "the offload binary's bytes"},
    {"images[].binary.version", "the offload binary format version, 1 or 2"},
    {"images[].binary.entry", "the image's index inside its offload binary"},
    {"images[].image_kind.value", "the image kind, a number"},
    {"images[].image_kind.name", "\"o\", \"bc\", \"cubin\", \"fatbin\", \"s\", or \"\""},
    {"images[].image_kind.description", "llvm-objdump's word for it: \"elf\", \"llvm ir\"... or \"<none>\""},
    {"images[].offload_kind.value", "the offload kind, a number"},
    {"images[].offload_kind.name",
     "\"openmp\", \"cuda\", \"hip\", \"sycl\" or \"none\", named as the release that wrote it does (3 and 4 "
     "are hip, 8 sycl)"},
    {"images[].flags", "the image's flags, a number"},
    {"images[].triple", "the \"triple\" string; \"\" when absent"},
    {"images[].arch", "the \"arch\" string; \"\" when absent"},
    {"images[].strings[]", "every string of the image, in file order: {\"key\", \"value\"}"},
    {"images[].image.offset", "where the image's bytes are"},
    {"images[].image.size", "the image's bytes"},
};

constexpr F kPruneFields[] = {
    {"schema", "\"offloadtool-prune/2\""},
    {"file", "the input as given"},
    {"container",
     "what it is, in words: \"binary bundle\", \"text bundle\", \"compressed bundle (...) holding a ...\", "
     "\"offload binaries\", \"shared library (ELF, ...)\"..."},
    {"written", "false with --dry-run (nothing written), else true"},
    {"entries[]", "every device-code entry, in file order"},
    {"entries[].id", "the entry ID as stored"},
    {"entries[].size", "its payload's bytes, uncompressed"},
    {"entries[].kept", "true when it stays"},
    {"entries[].where",
     "only where the entry's container is not the file itself: where it lies (\"section .hip_fatbin, bundle 2 "
     "at 0x3000\", \"member k.o, section .hip_fatbin\")"},
    {"size_before", "the input's bytes"},
    {"size_after", "the output's bytes"},
    {"saved", "size_before - size_after (negative when the output is larger)"},
    {"notes[]", "what the user should know, in words (\"the file was not shrunk: ...\")"},
};

constexpr F kPruneTreeFields[] = {
    {"schema", "\"offloadtool-prune-tree/1\""},
    {"input", "the directory or package as given"},
    {"container", "what it is, in words: \"directory\", \"Debian package\", \"Python wheel\", \"tarball (xz)\"..."},
    {"written", "false with --dry-run (nothing written), else true"},
    {"files[]", "a row per file with device code, in path order (a directory) or member order (a package)"},
    {"files[].path", "its path in the directory or package, as stored"},
    {"files[].action",
     "\"prune\" (rewritten without the dropped entries), \"remove\" (left out: a bare code object, cubin or PTX "
     "file of a dropped target, a bundle, compressed bundle, fatbin or offload-binary file of which no device entry "
     "stays (a kpack archive of dropped architectures only among them), or a per-GPU file of a dropped target) or "
     "\"copy\" (nothing of it dropped, or not pruned: see its "
     "notes)"},
    {"files[].container", "what the file is, as \"container\" of offloadtool-prune/2 names it"},
    {"files[].entries[]", "{\"id\", \"size\", \"kept\"} and \"where\" as in offloadtool-prune/2"},
    {"files[].size_before", "the file's bytes"},
    {"files[].size_after", "its bytes in the output (0 when removed)"},
    {"files[].saved", "size_before - size_after"},
    {"files[].notes[]", "what the user should know of this file, in words"},
    {"files[].per_gpu",
     "only for a per-GPU file (added within major 1): {\"layout\": \"Tensile\" or \"MIOpen\", \"target\": its "
     "target ID}; such a file has no entries, and its notes say why it stays or goes"},
    {"dropped[]", "{\"target\", \"entries\", \"bytes\"}: the entries dropped and their payload bytes "
                  "(uncompressed) per target ID (\"gfx906\", \"sm_80\": a bundle's entries and bare code objects "
                  "together), sorted by target; \"per_gpu_files\" and \"per_gpu_bytes\" (added within major 1): "
                  "the per-GPU files of that target left out and their bytes"},
    {"size_before", "the input's bytes (a directory: the sum of its regular files, each hard-linked file once)"},
    {"size_after", "the output's bytes, counted the same way"},
    {"saved", "size_before - size_after (negative when the output is larger)"},
    {"notes[]", "what the user should know, in words"},
};

constexpr F kSizeFields[] = {
    {"schema", "\"offloadtool-size/1\""},
    {"file_bytes", "the bytes all entries take in the files"},
    {"uncompressed_bytes", "the bytes all entries decompress to"},
    {"entries", "how many entries there are"},
    {"targets[]", "a row per target over all files, largest file_bytes first"},
    {"files[]", "with --per-file: {\"file\", \"bytes\", \"targets\": [row...]} per file given; for a directory, per file of it holding device code (the directory as given, then the path inside it)"},
    {"files[].bytes",
     "the file's bytes on disk (st_size; added within major 1); null for standard input and what is no regular "
     "file"},
    {"bundles[]", "with --per-bundle: {\"file\", \"path\": [chain...], \"targets\": [row...]} per container"},
    {"trees[]",
     "with --per-file, one per directory given that holds device code (added within major 1): what the install "
     "costs per GPU"},
    {"trees[].tree", "the directory as given"},
    {"trees[].files", "its regular files (a file with several hard links once)"},
    {"trees[].bytes", "their bytes on disk (st_size)"},
    {"trees[].device_files", "the files holding device code"},
    {"trees[].device_bytes", "the bytes the device code takes in them (the sum of the rows' file_bytes)"},
    {"trees[].symlinks", "symbolic links met (not followed)"},
    {"trees[].hard_links", "later names of files counted under their first name"},
    {"trees[].special_files", "fifos, sockets and devices (skipped)"},
    {"trees[].targets",
     "[row...] over the directory's files; each row also carries \"per_gpu_files\" and \"per_gpu_bytes\" (added "
     "within major 1): the per-GPU files of its target (Tensile's indexes, MIOpen's databases: "
     "docs/per-gpu-files.md), which hold no device code and count in no other member; a target with only such "
     "files has a row of its own"},
    {"trees[].per_gpu[]",
     "each of those per-GPU files, in the order of their paths (added within major 1): {\"file\" (the directory "
     "as given, then the path inside it), \"layout\" (\"Tensile\", \"MIOpen\"), \"target\" (canonical), "
     "\"bytes\" (on disk)}"},
    {"trees[].other[]",
     "the directory's other files (no device code, no per-GPU file) per folder, in the order of the folders' paths "
     "(added within major 1): {\"folder\" (the directory as given, then the path inside it), \"files\", "
     "\"bytes\" (on disk)}; with files[] and per_gpu[] they add up to the tree's files and bytes"},
    {"row: target", "the canonical target ID"},
    {"row: entries", "its entries"},
    {"row: file_bytes",
     "the bytes they take in the files; an entry inside a compressed bundle is charged its share of the "
     "bundle's bytes, in proportion to its uncompressed size, rounded"},
    {"row: uncompressed_bytes", "the bytes they decompress to"},
    {"row: share", "file_bytes / the table's file_bytes, a fraction from 0 to 1 with 4 decimals"},
};

// How each writer writes a byte that is not printable ASCII in a string.
constexpr std::string_view kBytesEscaped =
    "a byte that is not printable ASCII is written \\u00XX, the byte's value (so that a name that is not UTF-8 "
    "maps back to its bytes: \\u00c3\\u00a9 for the UTF-8 of U+00E9)";
constexpr std::string_view kUtf8Passes =
    "valid UTF-8 passes through; a control character, DEL, and a byte that is not valid UTF-8 are written "
    "\\u00XX, the byte's value";
constexpr std::string_view kBytesAsRead =
    "a control character and DEL are written \\u00XX; bytes from 0x80 up are written as they are (valid "
    "JSON where they are UTF-8)";

// THE table: sorted by name, in the order of enum Schema.
constexpr SchemaDoc kSchemas[] = {
    {Schema::Compat, "offloadtool-compat/1", "compat", "offloadtool compat check|canonical|select|verify|detect --json",
     "target-ID compatibility, canonical IDs, entry selection, composition rules and the local GPUs", kCompatFields,
     "One schema for the five subcommands: \"command\" says which printed the object, and the members named "
     "\"<command>: <member>\" are that subcommand's. \"spec: <member>\" are the members of a spec, the object "
     "that describes a target or a code object. Errors are not JSON: one line on standard error, exit 2.",
     kBytesEscaped,
     "offloadtool-compat/1 is the first major version; select's \"records\" (kpack'd binaries) and "
     "\"selections\" (a target list), check's \"targets\" (a target list), and detect's \"cuda\" and "
     "\"nvidia_gpus\" (NVIDIA GPUs) were added within it."},
    {Schema::CompressInfo, "offloadtool-compress-info/2", "compress", "offloadtool compress --info --json FILE",
     "each bundle of a file: compressed or not, the compressed bundle's header, sizes, ratio and hashes",
     kCompressInfoFields, "", kBytesAsRead,
     "Major 1 was named \"offloadtool.compress.info\" and carried \"version\": 1 after \"schema\". Major 2 "
     "renamed it to this convention and dropped \"version\"; the other members are the same."},
    {Schema::List, "offloadtool-list/2", "list", "offloadtool list --json FILE...",
     "every device-code entry of every file, through any container, as it is found", kListFields,
     "Entries are printed as they are found, so \"files\", with the counts, comes last. A file without device "
     "code, or one that cannot be read to its end, is an error: the other files are still listed, the message "
     "also goes to standard error, and the exit status is 1.",
     kBytesEscaped,
     "offloadtool-list/1 put \"files\" first and left out every entry of a file that failed. \"kind\" and "
     "\"uncompressed_size\" were added within major 2, and so were \"skipped\" (directories as inputs), "
     "\"triple\", \"kpack\" and \"files[].kpack_missing\"."},
    {Schema::PackageList, "offloadtool-package-list/2", "package", "offloadtool package list --json FILE",
     "the images of the offload binaries of a file", kPackageListFields,
     "Offsets count in the input file, except in a \"bitcode global\" container, where bitcode stores the "
     "bytes bit-packed: there they count in the global's decoded initialiser.",
     kUtf8Passes,
     "Major 1 was named \"offloadtool.package.list\" and carried \"version\": 1 after \"schema\". Major 2 "
     "renamed it to this convention and dropped \"version\" (images[].binary.version, the offload binary's "
     "format version, stays); the other members are the same."},
    {Schema::PruneTree, "offloadtool-prune-tree/1", "prune",
     "offloadtool prune --keep|--drop TARGET... DIR|PACKAGE --json [--dry-run]",
     "what pruning a directory or a package (.deb, wheel, tarball) keeps, drops and removes, per file", kPruneTreeFields,
     "", kBytesEscaped, "offloadtool-prune-tree/1 is the first major version."},
    {Schema::Prune, "offloadtool-prune/2", "prune", "offloadtool prune --keep|--drop TARGET... FILE --json [--dry-run]",
     "what pruning keeps and drops, and the bytes saved", kPruneFields, "", kBytesEscaped,
     "Major 1 was named \"offloadtool.prune\" and carried \"version\": 1 after \"schema\". Major 2 renamed it "
     "to this convention and dropped \"version\"; the other members are the same."},
    {Schema::Size, "offloadtool-size/1", "size", "offloadtool size --json [--per-file] [--per-bundle] FILE...",
     "bytes of device code per target over all files given", kSizeFields,
     "A row is {\"target\", \"entries\", \"file_bytes\", \"uncompressed_bytes\", \"share\"} (\"row: <member>\" "
     "below). A file that fails counts for nothing: the message goes to standard error and the exit status is "
     "1.",
     kBytesEscaped,
     "offloadtool-size/1 is the first major version; \"trees\", then \"files[].bytes\", \"trees[].per_gpu\" "
     "and \"trees[].other\" were added within it."},
};

// "offloadtool-<output>/<major>": <output> lower-case letters and '-', <major> a number without a leading 0.
constexpr bool well_formed(std::string_view name) {
  constexpr std::string_view prefix = "offloadtool-";
  if (!name.starts_with(prefix)) return false;
  name.remove_prefix(prefix.size());
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  std::string_view output = name.substr(0, slash), major = name.substr(slash + 1);
  return output.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string_view::npos && output.front() != '-' &&
         output.back() != '-' && !major.empty() && major.front() != '0' &&
         major.find_first_not_of("0123456789") == std::string_view::npos;
}

constexpr bool table_ok() {
  for (std::size_t i = 0; i < std::size(kSchemas); ++i) {
    const SchemaDoc& s = kSchemas[i];
    if (static_cast<std::size_t>(s.id) != i || !well_formed(s.name)) return false;
    // the first member documented is "schema", naming the schema itself
    if (s.fields.empty() || s.fields.front().name != "schema") return false;
    std::string_view quoted = s.fields.front().meaning;
    if (quoted.size() != s.name.size() + 2 || quoted.substr(1, s.name.size()) != s.name) return false;
    if (i > 0 && !(kSchemas[i - 1].name < s.name)) return false;
  }
  return true;
}
static_assert(std::size(kSchemas) == static_cast<std::size_t>(Schema::Size) + 1);
static_assert(table_ok(), "kSchemas: sorted by name, in enum order, names offloadtool-<output>/<major>");

}  // namespace

std::span<const SchemaDoc> schemas() { return kSchemas; }
const SchemaDoc& schema(Schema s) { return kSchemas[static_cast<std::size_t>(s)]; }
std::string_view schema_name(Schema s) { return schema(s).name; }
std::string_view schema_convention() { return kConvention; }

}  // namespace ot::json
