#include "wrap/wrap.h"

#include <limits>

#include "codec/codec.h"
#include "formats/bundle_binary.h"
#include "formats/compressed_bundle.h"
#include "formats/llvm_densemap_order.h"
#include "formats/offload_binary.h"
#include "object/coff_writer.h"
#include "object/elf_writer.h"
#include "support/md5.h"
#include "support/output_file.h"
#include "target/bundle_id.h"
#include "target/triple.h"

namespace ot::wrap {

using object::Binding;
using object::Chunk;
using object::RelocatableObject;
using object::Section;
using object::SectionKind;
using object::Step;
using object::StepKind;
using object::Symbol;
using object::SymbolType;

Kind parse_kind(std::string_view name) {
  if (name == "openmp") return Kind::OpenMP;
  if (name == "cuda") return Kind::Cuda;
  if (name == "hip") return Kind::Hip;
  if (name == "sycl") return Kind::Sycl;
  fail("", "unknown offload kind '{}' (expected openmp, cuda, hip or sycl)", name);
}

HostTarget host_target(const std::string& triple) {
  target::Triple t(triple);
  if (!t.has_known_arch()) fail("", "'{}': unsupported target triple", triple);
  HostTarget h;
  h.triple = triple;
  const std::string_view arch = t.arch();
  const std::string_view fmt = t.object_format();
  auto unsupported = [&]() -> HostTarget {
    fail("", "'{}': no wrapper code generator for this host (supported: x86_64 ELF and COFF, aarch64 ELF, "
             "powerpc64le ELF)",
         triple);
  };
  if (fmt == "coff") {
    if (arch != "x86_64") return unsupported();
    h.coff = true;
    h.mingw = t.environment() == "gnu" || t.environment() == "cygnus";
    h.arch = object::CodeArch::X86_64;
    return h;
  }
  if (fmt != "elf") return unsupported();
  if (arch == "x86_64") {
    h.arch = object::CodeArch::X86_64, h.elf_machine = object::kEmX86_64;
  } else if (arch == "aarch64") {
    h.arch = object::CodeArch::AArch64, h.elf_machine = object::kEmAArch64;
  } else if (arch == "ppc64le") {
    h.arch = object::CodeArch::Ppc64le, h.elf_machine = object::kEmPpc64, h.elf_flags = 2;  // ELFv2 ABI
  } else {
    return unsupported();
  }
  return h;
}

namespace {

constexpr std::uint64_t kPtr = 8;  // every supported host is 64-bit

std::uint32_t abs64_type(const HostTarget& t) {
  if (t.coff) return object::kCoffRelAmd64Addr64;
  switch (t.arch) {
    case object::CodeArch::X86_64: return 1;     // R_X86_64_64
    case object::CodeArch::AArch64: return 257;  // R_AARCH64_ABS64
    case object::CodeArch::Ppc64le: return 38;   // R_PPC64_ADDR64
  }
  return 0;
}

// Little helpers over the object under construction.
class Builder {
 public:
  explicit Builder(const HostTarget& t, std::string source) : t_(t) { obj_.source_name = std::move(source); }

  RelocatableObject& obj() { return obj_; }
  const HostTarget& target() const { return t_; }

  std::uint32_t section(std::string name, SectionKind kind, std::uint64_t align) {
    Section s;
    s.name = std::move(name);
    s.kind = kind;
    s.align = align;
    return obj_.add_section(std::move(s));
  }
  std::uint64_t size(std::uint32_t sec) const { return obj_.sections[sec].size(); }
  // Appends bytes (after zero padding to `align`); returns their offset.
  std::uint64_t append(std::uint32_t sec, Chunk c, std::uint64_t align = 1) {
    Section& s = obj_.sections[sec];
    std::uint64_t at = s.size();
    std::uint64_t aligned = align_to(at, align);
    if (aligned != at) s.data.push_back(Chunk::zeros(aligned - at));
    s.data.push_back(std::move(c));
    return aligned;
  }
  std::uint32_t local(std::string name, std::uint32_t sec, std::uint64_t value, std::uint64_t size,
                      SymbolType type = SymbolType::Object) {
    Symbol s;
    s.name = std::move(name);
    s.section = static_cast<std::int32_t>(sec);
    s.value = value;
    s.size = size;
    s.type = type;
    return obj_.add_symbol(std::move(s));
  }
  std::uint32_t function(std::string name) {  // defined later by the code emitter
    Symbol s;
    s.name = std::move(name);
    s.type = SymbolType::Func;
    return obj_.add_symbol(std::move(s));
  }
  std::uint32_t undefined(std::string name, bool hidden = false, Binding b = Binding::Global) {
    Symbol s;
    s.name = std::move(name);
    s.binding = b;
    s.hidden = hidden && !t_.coff;
    return obj_.add_symbol(std::move(s));
  }
  void pointer(std::uint32_t sec, std::uint64_t off, std::uint32_t sym, std::int64_t addend = 0) {
    obj_.relocs.push_back(object::Reloc{sec, off, abs64_type(t_), sym, addend});
  }
  // Appends a zeroed record of `n` bytes with the given (offset, symbol, addend) pointers.
  struct Ptr {
    std::uint64_t at;
    std::uint32_t sym;
    std::int64_t addend = 0;
  };
  std::uint64_t record(std::uint32_t sec, std::vector<std::byte> bytes, std::initializer_list<Ptr> ptrs,
                       std::uint64_t align = kPtr) {
    std::uint64_t off = append(sec, Chunk::owned(std::move(bytes)), align);
    for (const Ptr& p : ptrs) pointer(sec, off + p.at, p.sym, p.addend);
    return off;
  }

 private:
  HostTarget t_;
  RelocatableObject obj_;
};

std::string numbered(std::string_view base, std::size_t i) {
  return i == 0 ? std::string(base) : fmt::format("{}.{}", base, i);
}

// __start_/__stop_ symbols of an entry section. ELF: the linker defines them
// for a section with a C-identifier name, so the object only needs the
// section to exist (an empty one with a dummy symbol). COFF: the linker sorts
// "<sec>$OA" < "<sec>$OE" (entries) < "<sec>$OZ", so the wrapper defines the
// bounds itself in $OA/$OZ, as weak externals with a default like LLVM's weak_odr.
struct Bounds {
  std::uint32_t start, stop;
};

Bounds entry_bounds(Builder& b, const std::string& sec, bool llvm14_dummy, std::vector<std::string>& directives) {
  if (!b.target().coff) {
    std::uint32_t s = b.section(sec, SectionKind::EntryTable, 8);
    if (llvm14_dummy) {
      Symbol d;
      d.name = "__dummy.omp_offloading.entry";
      d.section = static_cast<std::int32_t>(s);
      d.binding = Binding::Global;
      d.hidden = true;
      d.type = SymbolType::Object;
      b.obj().add_symbol(std::move(d));
    } else {
      b.local("__dummy." + sec, s, 0, 0);
    }
    return {b.undefined("__start_" + sec, true), b.undefined("__stop_" + sec, true)};
  }
  auto bound = [&](const std::string& name, const char* suffix) {
    std::uint32_t s = b.section(sec + suffix, SectionKind::EntryTable, 8);
    Symbol def;
    def.name = ".weak." + name + ".default";
    def.section = static_cast<std::int32_t>(s);
    def.binding = Binding::Global;
    std::uint32_t d = b.obj().add_symbol(std::move(def));
    Symbol w;
    w.name = name;
    w.binding = Binding::Weak;
    w.weak_default = static_cast<std::int32_t>(d);
    if (b.target().mingw) directives.push_back(" -exclude-symbols:" + name);
    return b.obj().add_symbol(std::move(w));
  };
  std::uint32_t start = bound("__start_" + sec, "$OA");
  std::uint32_t stop = bound("__stop_" + sec, "$OZ");
  return {start, stop};
}

// Constructor / destructor table sections, named the way LLVM lowers
// llvm.global_ctors / llvm.global_dtors for the target and priority.
std::string structor_section(const HostTarget& t, bool ctor, unsigned priority) {
  if (!t.coff) return fmt::format("{}.{}", ctor ? ".init_array" : ".fini_array", priority);
  if (t.mingw) return fmt::format("{}.{:05}", ctor ? ".ctors" : ".dtors", 65535 - priority);
  return fmt::format(".CRT$X{}A{:05}", ctor ? 'C' : 'T', priority);
}

void structor(Builder& b, bool ctor, unsigned priority, std::uint32_t fn) {
  std::uint32_t s = b.section(structor_section(b.target(), ctor, priority),
                              ctor ? SectionKind::InitArray : SectionKind::FiniArray, kPtr);
  b.record(s, std::vector<std::byte>(kPtr), {{0, fn}});
}

void finish_sections(Builder& b, const std::vector<std::string>& directives) {
  if (!b.target().coff) {
    b.section(".note.GNU-stack", SectionKind::GnuStack, 1);
  } else if (!directives.empty()) {
    std::string text;
    for (const std::string& d : directives) text += d;
    std::uint32_t s = b.section(".drectve", SectionKind::Directive, 1);
    b.append(s, Chunk::owned(std::vector<std::byte>(as_bytes(text).begin(), as_bytes(text).end())));
  }
}

std::vector<std::byte> le_bytes(std::initializer_list<std::pair<std::uint64_t, std::size_t>> fields, std::size_t n) {
  std::vector<std::byte> v(n);
  std::size_t at = 0;
  for (auto [value, width] : fields) {
    for (std::size_t i = 0; i < width; ++i) v[at + i] = static_cast<std::byte>(value >> (8 * i));
    at += width;
  }
  return v;
}

bool is_elf(Bytes d) {
  return d.size() >= 4 && d[0] == std::byte{0x7f} && d[1] == std::byte{'E'} && d[2] == std::byte{'L'} &&
         d[3] == std::byte{'F'};
}

// The triple recorded for a raw image wrapped into an OffloadBinary: the
// host's for an ELF of the host's machine (host offloading), the GPU triple
// for AMDGPU and CUDA ELF images, nothing otherwise.
std::string image_triple(Bytes d, const HostTarget& t) {
  if (!is_elf(d) || d.size() < 20) return {};
  std::uint16_t machine = d[5] == std::byte{2} ? static_cast<std::uint16_t>(std::to_integer<unsigned>(d[18]) << 8 |
                                                                           std::to_integer<unsigned>(d[19]))
                                               : load_le<std::uint16_t>(d.data() + 18);
  if (!t.coff && machine == t.elf_machine) return t.triple;
  if (machine == 224) return "amdgcn-amd-amdhsa";   // EM_AMDGPU
  if (machine == 190) return "nvptx64-nvidia-cuda";  // EM_CUDA
  return {};
}

formats::ImageKind image_kind(const Image& img) {
  Bytes d = img.file->bytes();
  if (formats::is_llvm_bitcode(d)) return formats::ImageKind::Bitcode;
  if (is_elf(d)) return formats::ImageKind::Object;
  auto dot = img.path.find_last_of('.');
  auto slash = img.path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return formats::ImageKind::None;
  return formats::image_kind_from_extension(std::string_view(img.path).substr(dot + 1));
}

// ---------------------------------------------------------------------------
// OpenMP
// ---------------------------------------------------------------------------
RelocatableObject build_openmp(const Options& o, const HostTarget& t) {
  const bool v14 = o.scheme == OpenMPScheme::Llvm14;
  Builder b(t, v14 ? "offload.wrapper.object" : "offload.wrapper.module");
  std::vector<std::string> directives;
  const std::uint32_t text = b.section(".text.startup", SectionKind::Code, 16);
  const std::string entries =
      o.entries == target::EntryAbi::Unified56 ? "llvm_offload_entries" : "omp_offloading_entries";
  // The dummy symbol's declaration order follows LLVM's module: bounds first.
  Bounds bounds = entry_bounds(b, entries, v14, directives);

  // Images: raw (LLVM 14) or as OffloadBinaries (LLVM 19).
  // LLVM 14 gives raw images no alignment; libomptarget's ELF reader rejects
  // an image that lands on an odd address, so each one is 16-aligned here.
  const std::uint32_t imgsec = v14 ? b.section(t.coff ? ".rdata" : ".rodata", SectionKind::ReadOnly, 16)
                                   : b.section(o.relocatable ? ".llvm.offloading.relocatable" : ".llvm.offloading",
                                               SectionKind::Offloading, 8);
  struct Placed {
    std::uint32_t sym;  // the embedded image (or OffloadBinary) symbol
    std::uint64_t begin, end;  // the raw image, relative to that symbol
  };
  std::vector<Placed> placed;
  for (std::size_t i = 0; i < o.images.size(); ++i) {
    const Image& img = o.images[i];
    const Bytes data = img.file->bytes();
    std::uint64_t off, begin, end, total;
    if (v14) {
      off = b.append(imgsec, Chunk::of_file(img.file, 0, data.size()), 16);
      begin = off, end = off + data.size(), total = data.size();
    } else if (formats::has_offload_binary_magic(data)) {
      // Already an OffloadBinary (e.g. from .llvm.offloading of a clang -c object): embed it as is.
      formats::OffloadBinary ob = formats::read_offload_binary(data, 0, img.path);
      if (ob.size != data.size() && !o.as_given)
        fail(img.path, "holds 0x{:x} bytes but its first OffloadBinary is 0x{:x} bytes; give one binary per file",
             data.size(), ob.size);
      off = b.append(imgsec, Chunk::of_file(img.file, 0, data.size()), 8);
      begin = off + ob.entries.at(0).image_offset;
      end = begin + ob.entries.at(0).image_size;
      total = data.size();
    } else if (o.as_given) {
      // llvm-offload-wrapper: any other bytes are the image themselves.
      off = b.append(imgsec, Chunk::of_file(img.file, 0, data.size()), 8);
      begin = off, end = off + data.size(), total = data.size();
    } else {
      formats::OffloadImageDesc desc;
      desc.image_kind = static_cast<std::uint16_t>(image_kind(img));
      desc.offload_kind = static_cast<std::uint16_t>(formats::OffloadKind::OpenMP);
      desc.image_size = data.size();
      std::string triple = image_triple(data, t);
      if (!triple.empty()) desc.strings.push_back({"triple", triple});
      if (!img.offload_arch.empty()) desc.strings.push_back({"arch", img.offload_arch});
      // LLVM serialises an image's strings in its DenseMap's iteration order.
      std::vector<std::string_view> keys;
      for (const formats::OffloadString& kv : desc.strings) keys.push_back(kv.key);
      std::vector<formats::OffloadString> ordered;
      for (std::size_t k : formats::densemap_iteration_order(keys)) ordered.push_back(desc.strings[k]);
      desc.strings = std::move(ordered);
      formats::OffloadBinaryFrame frame = formats::frame_offload_binary_v1(desc);
      const std::uint64_t head = frame.head.size();
      off = b.append(imgsec, Chunk::owned(std::move(frame.head)), 8);
      b.append(imgsec, Chunk::of_file(img.file, 0, data.size()));
      if (frame.tail_padding) b.append(imgsec, Chunk::zeros(frame.tail_padding));
      begin = off + head, end = begin + data.size(), total = frame.total_size();
    }
    placed.push_back({b.local(numbered(".omp_offloading.device_image", i), imgsec, off, total), begin - off, end - off});
  }

  // Offload-arch strings (the image-info extension).
  const bool info = !o.images.empty() && !o.images[0].offload_arch.empty();
  std::vector<std::uint32_t> arch_syms;
  if (info) {
    std::uint32_t archsec = b.section(".offload_arch_list", SectionKind::ReadOnly, 1);
    for (std::size_t i = 0; i < o.images.size(); ++i) {
      std::string s = o.images[i].offload_arch;
      std::vector<std::byte> bytes(as_bytes(s).begin(), as_bytes(s).end());
      bytes.push_back(std::byte{0});
      std::uint64_t off = b.append(archsec, Chunk::owned(std::move(bytes)));
      arch_syms.push_back(b.local(numbered("__offload_arch", i), archsec, off, s.size() + 1));
    }
  }

  // __tgt_device_image[N], __tgt_bin_desc, __tgt_image_info[N].
  const std::uint32_t rel = b.section(t.coff ? ".rdata" : ".data.rel.ro", SectionKind::RelRo, 16);
  const std::uint64_t n = o.images.size();
  for (const Placed& p : placed)
    b.record(rel, std::vector<std::byte>(4 * kPtr),
             {{0, p.sym, static_cast<std::int64_t>(p.begin)},
              {kPtr, p.sym, static_cast<std::int64_t>(p.end)},
              {2 * kPtr, bounds.start},
              {3 * kPtr, bounds.stop}});
  b.local(".omp_offloading.device_images", rel, 0, n * 4 * kPtr);
  const std::uint32_t images_sym = static_cast<std::uint32_t>(b.obj().symbols.size() - 1);
  std::uint64_t desc_off = b.record(rel, le_bytes({{n, 4}}, 4 * kPtr),
                                    {{kPtr, images_sym}, {2 * kPtr, bounds.start}, {3 * kPtr, bounds.stop}});
  const std::uint32_t desc = b.local(".omp_offloading.descriptor", rel, desc_off, 4 * kPtr);
  std::vector<std::uint32_t> infos;
  for (std::size_t i = 0; info && i < o.images.size(); ++i) {
    // { i32 version = 1, i32 image_number, i32 number_images, ptr offload_arch, ptr compile_opts = null }
    std::uint64_t off = b.record(rel, le_bytes({{1, 4}, {i, 4}, {n, 4}}, 3 * kPtr + 8), {{2 * kPtr, arch_syms[i]}});
    infos.push_back(b.local(numbered(".offload_image_info", i), rel, off, 4 * kPtr));
  }

  // Code.
  object::CodeEmitter code(b.obj(), text, {t.arch, t.coff});
  const std::uint32_t reg = b.function(".omp_offloading.descriptor_reg");
  const std::uint32_t unreg = b.function(".omp_offloading.descriptor_unreg");
  std::vector<Step> steps;
  if (info) {
    // Weak: upstream libomptarget has no __tgt_register_image_info, and the
    // object must still link and run there; the call is skipped when it is absent.
    std::uint32_t f = b.undefined("__tgt_register_image_info", false, t.coff ? Binding::Global : Binding::Weak);
    for (std::uint32_t i : infos) steps.push_back({StepKind::CallWeakWithAddress, f, i});
  }
  steps.push_back({StepKind::CallWithAddress, b.undefined("__tgt_register_lib"), desc});
  if (!v14) steps.push_back({StepKind::CallWithAddress, b.undefined("atexit"), unreg});
  code.straight_function(reg, steps);
  const Step unreg_steps[] = {{StepKind::CallWithAddress, b.undefined("__tgt_unregister_lib"), desc}};
  code.straight_function(unreg, unreg_steps);

  structor(b, true, v14 ? 1 : 101, reg);
  if (v14) structor(b, false, 1, unreg);
  finish_sections(b, directives);
  return std::move(b.obj());
}

// ---------------------------------------------------------------------------
// CUDA / HIP
// ---------------------------------------------------------------------------
struct FatBinary {
  std::vector<Chunk> chunks;
  std::uint64_t size = 0;
};

// HIP device code objects -> an uncompressed offload bundle aligned to 4096,
// like clang-linker-wrapper's "clang-offload-bundler -type=o -bundle-align=4096
// -targets=host-<host>,hip-amdgcn-amd-amdhsa--<arch>... -input=/dev/null -input=<img>...".
FatBinary hip_bundle(const Options& o, const HostTarget& t) {
  target::Triple host(t.triple);
  std::vector<std::string> ids{
      target::BundleId(fmt::format("host-{}-{}-{}", host.arch_name(), host.vendor_name(), host.os_name())).str()};
  std::vector<std::uint64_t> sizes{0};
  for (const Image& img : o.images) {
    if (img.offload_arch.empty())
      fail(img.path, "a HIP device image needs an --offload-arch to be bundled (or give one ready offload bundle)");
    ids.push_back(target::BundleId("hip-amdgcn-amd-amdhsa--" + img.offload_arch).str());
    sizes.push_back(img.file->size());
  }
  formats::BinaryBundleLayout layout = formats::layout_binary_bundle(ids, sizes, 4096);
  FatBinary fb;
  std::uint64_t pos = layout.header.size();
  fb.chunks.push_back(Chunk::owned(std::move(layout.header)));
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (layout.offsets[i] > pos) fb.chunks.push_back(Chunk::zeros(layout.offsets[i] - pos));
    fb.chunks.push_back(Chunk::of_file(o.images[i - 1].file, 0, sizes[i]));
    pos = layout.offsets[i] + sizes[i];
  }
  fb.size = pos;
  if (!o.compress) return fb;

  // CCOB v2 around the whole bundle, as clang-offload-bundler -compress writes it.
  if (fb.size > 0xffffffffu) fail("", "HIP bundle of 0x{:x} bytes exceeds the compressed format's 4 GiB limit", fb.size);
  codec::Params params;
  params.method = codec::Method::Zstd;
  params.level = o.compression_level;
  Md5 md5;
  std::vector<std::byte> compressed;
  codec::Compressor zc(params, fb.size, [&](Bytes b) { compressed.insert(compressed.end(), b.begin(), b.end()); });
  for (const Chunk& c : fb.chunks) {
    Bytes b = c.file ? c.file->bytes().subspan(c.file_offset, c.file_size) : Bytes(c.bytes);
    md5.update(b);
    zc.write(b);
  }
  zc.finish();
  formats::CcobHeader h;
  h.version = 2;
  h.method = params.method;
  h.uncompressed_size = fb.size;
  h.hash = md5.truncated();
  h.header_size = formats::ccob_header_size(2);
  h.total_size = h.header_size + compressed.size();
  if (*h.total_size > 0xffffffffu) fail("", "compressed HIP bundle exceeds the compressed format's 4 GiB limit");
  FatBinary out;
  out.chunks.push_back(Chunk::owned(formats::write_ccob_header(h)));
  out.size = *h.total_size;
  out.chunks.push_back(Chunk::owned(std::move(compressed)));
  return out;
}

RelocatableObject build_fatbin(const Options& o, const HostTarget& t) {
  const bool cuda = o.kind == Kind::Cuda;
  const std::string x = cuda ? "cuda" : "hip";
  FatBinary fb;
  const Bytes first = o.images[0].file->bytes();
  const bool ready =
      cuda || o.as_given || formats::has_binary_bundle_magic(first) || formats::has_ccob_magic(first);
  if (ready) {
    if (o.images.size() != 1 && o.as_given) fail("", "CUDA / HIP offloading uses a single fatbinary or offload bundle");
    if (o.images.size() != 1)
      fail(o.images[1].path, "{} wraps exactly one fat binary; {} files were given", cuda ? "CUDA" : "HIP",
           o.images.size());
    fb.chunks.push_back(Chunk::of_file(o.images[0].file, 0, first.size()));
    fb.size = first.size();
  } else {
    fb = hip_bundle(o, t);
  }

  Builder b(t, "offload.wrapper.module");
  std::vector<std::string> directives;
  const std::uint32_t text = b.section(".text.startup", SectionKind::Code, 16);
  const bool v1 = o.entries == target::EntryAbi::Unified56;
  Bounds bounds = entry_bounds(b, v1 ? "llvm_offload_entries" : x + "_offloading_entries", false, directives);

  // The fat binary. LLVM gives it no alignment; 8 (CUDA) and 4096 (HIP, the
  // bundle's own alignment) keep the runtime's view of it aligned.
  const std::uint32_t fatsec = b.section(cuda ? ".nv_fatbin" : ".hip_fatbin", SectionKind::ReadOnly, cuda ? 8 : 4096);
  for (Chunk& c : fb.chunks) b.append(fatsec, std::move(c));
  const std::uint32_t image = b.local(".fatbin_image", fatsec, 0, fb.size);

  const std::uint32_t seg = b.section(cuda ? ".nvFatBinSegment" : ".hipFatBinSegment", SectionKind::RelRo, 8);
  const std::uint32_t magic = cuda ? 0x466243B1 : 0x48495046;
  b.record(seg, le_bytes({{magic, 4}, {1, 4}}, 8 + 2 * kPtr), {{8, image}});
  const std::uint32_t wrapper = b.local(".fatbin_wrapper", seg, 0, 8 + 2 * kPtr);

  const std::uint32_t bss = b.section(".bss", SectionKind::Bss, kPtr);
  b.obj().sections[bss].bss_size = kPtr;
  const std::uint32_t handle = b.local("." + x + ".binary_handle", bss, 0, kPtr);

  object::CodeEmitter code(b.obj(), text, {t.arch, t.coff});
  const std::uint32_t reg = b.function("." + x + ".fatbin_reg");
  const std::uint32_t unreg = b.function("." + x + ".fatbin_unreg");
  const std::uint32_t globals = b.function("." + x + ".globals_reg");
  const std::string rt = cuda ? "__cuda" : "__hip";
  std::vector<Step> steps{{StepKind::CallSaveHandle, b.undefined(rt + "RegisterFatBinary"), wrapper, handle},
                          {StepKind::CallWithHandle, globals}};
  if (cuda) steps.push_back({StepKind::CallWithHandle, b.undefined("__cudaRegisterFatBinaryEnd")});
  steps.push_back({StepKind::CallWithAddress, b.undefined("atexit"), unreg});
  code.straight_function(reg, steps);
  const Step unreg_steps[] = {{StepKind::CallWithLoaded, b.undefined(rt + "UnregisterFatBinary"), handle}};
  code.straight_function(unreg, unreg_steps);

  object::RegistrationCallees callees;
  callees.function = b.undefined(rt + "RegisterFunction");
  callees.var = b.undefined(rt + "RegisterVar");
  // LLVM emits no surface/texture registration for CUDA (19 and 22: only the
  // declarations; clang-linker-wrapper and llvm-offload-wrapper pass
  // EmitSurfacesAndTextures=false); HIP gets both.
  if (!cuda) {
    callees.surface = b.undefined(rt + "RegisterSurface");
    callees.texture = b.undefined(rt + "RegisterTexture");
  }
  object::EntryLayout layout;  // LLVM <= 19 defaults
  if (v1) {
    layout = {56, 16, 24, 32, 12, 40, 10, static_cast<std::uint16_t>(cuda ? 2 : 4), 48};
    callees.managed = b.undefined(rt + "RegisterManagedVar");
  }
  code.globals_loop(globals, bounds.start, bounds.stop, layout, callees);

  structor(b, true, 101, reg);
  finish_sections(b, directives);
  return std::move(b.obj());
}

// ---------------------------------------------------------------------------
// SYCL (LLVM 23's module, compiled): the first input embedded whole (aligned
// as LLVM aligns a global without an alignment), registered by its address and size from priority-1 structors.
// ---------------------------------------------------------------------------
RelocatableObject build_sycl(const Options& o, const HostTarget& t) {
  Builder b(t, "offload.wrapper.module");
  const std::uint32_t text = b.section(".text.startup", SectionKind::Code, 16);
  const Image& img = o.images[0];
  const std::uint64_t size = img.file->size();
  // The global has no alignment of its own: LLVM's DataLayout gives an
  // initialised one larger than 16 bytes 16, a smaller one its type's
  // preferred alignment ([N x i8]: i8's, 4 on AArch64 ("i8:8:32"), else 1).
  const std::uint64_t small = t.arch == object::CodeArch::AArch64 ? 4 : 1;
  const std::uint32_t sec = b.section(".llvm.offloading", SectionKind::Offloading, size > 16 ? 16 : small);
  b.append(sec, Chunk::of_file(img.file, 0, size));
  const std::uint32_t image = b.local(".sycl_offloading.binary", sec, 0, size);

  object::CodeEmitter code(b.obj(), text, {t.arch, t.coff});
  const std::uint32_t reg = b.function("sycl.descriptor_reg");
  const std::uint32_t unreg = b.function("sycl.descriptor_unreg");
  const Step reg_steps[] = {{StepKind::CallWithAddressAndValue, b.undefined("__sycl_register_lib"), image, 0, size}};
  code.straight_function(reg, reg_steps);
  const Step unreg_steps[] = {
      {StepKind::CallWithAddressAndValue, b.undefined("__sycl_unregister_lib"), image, 0, size}};
  code.straight_function(unreg, unreg_steps);

  structor(b, true, 1, reg);
  structor(b, false, 1, unreg);
  finish_sections(b, {});
  return std::move(b.obj());
}

void validate(const Options& o) {
  if (o.images.empty()) fail("", "no device images to wrap");
  std::size_t with_arch = 0;
  for (const Image& img : o.images) {
    if (!img.file) fail(img.path, "image was not opened");
    if (img.file->size() == 0 && !o.as_given) fail(img.path, "device image is empty");
    with_arch += img.offload_arch.empty() ? 0 : 1;
  }
  if (with_arch != 0 && with_arch != o.images.size())
    fail("", "{} --offload-arch values for {} images: give one per image or none", with_arch, o.images.size());
}

}  // namespace

object::ObjectBytes build_wrapper(const Options& o) {
  const HostTarget t = host_target(o.triple);
  validate(o);
  RelocatableObject obj = o.kind == Kind::OpenMP ? build_openmp(o, t)
                          : o.kind == Kind::Sycl ? build_sycl(o, t)
                                                 : build_fatbin(o, t);
  if (t.coff) return object::write_coff(obj, object::kCoffMachineAmd64);
  return object::write_elf(obj, object::ElfTarget{true, false, t.elf_machine, t.elf_flags, true});
}

void write_wrapper(const Options& o, const std::string& output) {
  object::ObjectBytes bytes = build_wrapper(o);
  OutputFile out(output);
  bytes.write_to(out);
  out.commit();
}

}  // namespace ot::wrap
