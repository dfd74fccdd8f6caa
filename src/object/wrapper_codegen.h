// Machine code for the wrapper's constructors, destructors and registration
// loop, per architecture, with their relocations: x86-64 (System V and
// Windows x64), AArch64 (AAPCS64) and ppc64le (ELFv2). Every stub is written
// in wrapper_codegen.cpp next to its assembly.
//
// Two shapes of function cover everything the wrapper needs:
//   - a straight-line function made of Steps (the OpenMP descriptor_reg/unreg,
//     the CUDA/HIP fatbin_reg/unreg and the SYCL descriptor_reg/unreg functions);
//   - the CUDA/HIP "globals_reg" loop over an offload-entry table.
// All code is position independent: data is reached PC- or TOC-relative,
// calls go through the PLT, and a weak function is tested through the GOT
// before it is called.
#pragma once

#include <cstdint>
#include <span>

#include "object/relocatable.h"

namespace ot::object {

enum class CodeArch : std::uint8_t { X86_64, AArch64, Ppc64le };

struct CodeTarget {
  CodeArch arch = CodeArch::X86_64;
  bool coff = false;  // x86-64 only: Windows x64 calling convention, COFF relocations
};

enum class StepKind : std::uint8_t {
  CallWithAddress,      // callee(&operand)
  CallWeakWithAddress,  // if (&callee != 0) callee(&operand)   (callee is a weak undefined symbol)
  CallSaveHandle,       // h = callee(&operand); operand2 = h   (operand2: a pointer-sized variable)
  CallWithHandle,       // callee(h)
  CallWithLoaded,       // callee(*operand)                      (operand: a pointer-sized variable)
  CallWithAddressAndValue,  // callee(&operand, value)             (value: a 64-bit integer)
};

struct Step {
  StepKind kind;
  std::uint32_t callee;        // symbol index
  std::uint32_t operand = 0;   // symbol index
  std::uint32_t operand2 = 0;  // symbol index (CallSaveHandle)
  std::uint64_t value = 0;     // CallWithAddressAndValue's second argument
};

// Byte offsets inside one offload entry, and the entry's size.
struct EntryLayout {
  std::uint32_t stride = 32;
  std::uint32_t addr = 0, name = 8, size = 16, flags = 24, data = 28;
  std::int32_t kind = -1;        // offset of a u16 kind field to filter on, or -1
  std::uint16_t kind_value = 0;  // entries of another kind are skipped
  std::int32_t aux_addr = -1;    // offset of the aux pointer (managed variables), or -1
};

inline constexpr std::uint32_t kNoCallee = 0xffffffff;

// The runtime's registration functions called by the loop. surface, texture and
// managed may be kNoCallee: entries of that type are then skipped.
struct RegistrationCallees {
  std::uint32_t function = kNoCallee;  // (h, addr, name, name, -1, null x5) -> i32
  std::uint32_t var = kNoCallee;       // (h, addr, name, name, i32 extern, i64 size, i32 constant, i32 0)
  std::uint32_t surface = kNoCallee;   // (h, addr, name, name, i32 textype, i32 extern)
  std::uint32_t texture = kNoCallee;   // (h, addr, name, name, i32 textype, i32 normalized, i32 extern)
  std::uint32_t managed = kNoCallee;   // (h, aux_addr, addr, name, i64 size, i32 data)
};

// Appends functions to one code section of `obj`. Each call defines `fn`
// (a symbol already in obj.symbols) as a function at the new code: the
// section, value, size and type are set here, and for ppc64 the ELFv2
// local-entry bits.
class CodeEmitter {
 public:
  CodeEmitter(RelocatableObject& obj, std::uint32_t text_section, CodeTarget target);

  void straight_function(std::uint32_t fn, std::span<const Step> steps);
  void globals_loop(std::uint32_t fn, std::uint32_t start, std::uint32_t stop, const EntryLayout& layout,
                    const RegistrationCallees& callees);

  // Function alignment used in the code section.
  static std::uint64_t alignment(CodeArch arch);

 private:
  RelocatableObject& obj_;
  std::uint32_t text_;
  CodeTarget target_;
};

}  // namespace ot::object
