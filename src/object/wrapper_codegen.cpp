#include "object/wrapper_codegen.h"

#include <array>

namespace ot::object {
namespace {

// ----------------------------------------------------------------------------
// Relocation type numbers (ELF psABIs; PE/COFF for AMD64).
// ----------------------------------------------------------------------------
constexpr std::uint32_t R_X86_64_PC32 = 2, R_X86_64_PLT32 = 4, R_X86_64_GOTPCREL = 9;
constexpr std::uint32_t IMAGE_REL_AMD64_REL32 = 4;
constexpr std::uint32_t R_AARCH64_ADR_PREL_PG_HI21 = 275, R_AARCH64_ADD_ABS_LO12_NC = 277, R_AARCH64_CALL26 = 283,
                        R_AARCH64_LDST64_ABS_LO12_NC = 286, R_AARCH64_ADR_GOT_PAGE = 311,
                        R_AARCH64_LD64_GOT_LO12_NC = 312;
constexpr std::uint32_t R_PPC64_REL24 = 10, R_PPC64_GOT16_HA = 17, R_PPC64_TOC16_LO = 48, R_PPC64_TOC16_HA = 50,
                        R_PPC64_GOT16_LO_DS = 59, R_PPC64_TOC16_LO_DS = 64, R_PPC64_REL16_LO = 250,
                        R_PPC64_REL16_HA = 252;

// Code bytes of one function plus local branch fixups, appended to the code section.
class Asm {
 public:
  Asm(RelocatableObject& obj, std::uint32_t text) : obj_(obj), text_(text) {
    Section& s = obj_.sections[text_];
    if (s.data.empty() || s.data.back().file) s.data.push_back(Chunk{});
  }
  std::vector<std::byte>& code() { return obj_.sections[text_].data.back().bytes; }
  std::uint64_t base() const {  // section offset of the current chunk
    std::uint64_t n = 0;
    const Section& s = obj_.sections[text_];
    for (std::size_t i = 0; i + 1 < s.data.size(); ++i) n += s.data[i].size();
    return n;
  }
  std::uint64_t here() { return base() + code().size(); }
  void u8(std::uint8_t b) { code().push_back(static_cast<std::byte>(b)); }
  void bytes(std::initializer_list<std::uint8_t> bs) {
    for (std::uint8_t b : bs) u8(b);
  }
  void u32le(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void reloc(std::uint64_t off, std::uint32_t type, std::uint32_t sym, std::int64_t addend) {
    obj_.relocs.push_back(Reloc{text_, off, type, sym, addend});
  }
  void pad_to(std::uint64_t align, std::initializer_list<std::uint8_t> filler) {
    while (here() % align != 0)
      for (std::uint8_t b : filler) u8(b);
  }
  // Labels: bound positions, and fixups patched by the architecture in finish().
  int label() {
    labels_.push_back(-1);
    return static_cast<int>(labels_.size() - 1);
  }
  void bind(int l) { labels_[l] = static_cast<std::int64_t>(code().size()); }
  struct Fixup {
    std::size_t at;  // byte index in code() of the instruction (or field)
    int label;
    int kind;
  };
  void fixup(std::size_t at, int l, int kind) { fixups_.push_back({at, l, kind}); }
  std::int64_t target(int l) const {
    if (labels_[l] < 0) fail("", "internal error: unbound label in generated code");
    return labels_[l];
  }
  const std::vector<Fixup>& fixups() const { return fixups_; }
  void define(std::uint32_t fn, std::uint64_t start, std::uint8_t other = 0) {
    Symbol& s = obj_.symbols[fn];
    s.section = static_cast<std::int32_t>(text_);
    s.value = start;
    s.size = here() - start;
    s.type = SymbolType::Func;
    s.elf_other_flags = other;
  }
  RelocatableObject& obj() { return obj_; }

 private:
  RelocatableObject& obj_;
  std::uint32_t text_;
  std::vector<std::int64_t> labels_;
  std::vector<Fixup> fixups_;
};

// ============================================================================
// x86-64
// ============================================================================
// Registers by encoding number.
enum X : std::uint8_t { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

class X64 {
 public:
  X64(Asm& a, bool coff) : a_(a), coff_(coff) {}

  // REX prefix, emitted only when needed (as assemblers do).
  void rex(bool w, std::uint8_t reg, std::uint8_t base) {
    std::uint8_t r = static_cast<std::uint8_t>(0x40 | (w ? 8 : 0) | ((reg >> 3) << 2) | (base >> 3));
    if (r != 0x40) a_.u8(r);
  }
  // ModRM (+SIB, +disp) for [base + disp].
  void mem(std::uint8_t reg, std::uint8_t base, std::int32_t disp) {
    std::uint8_t mod = disp == 0 && (base & 7) != 5 ? 0 : (disp >= -128 && disp <= 127 ? 1 : 2);
    a_.u8(static_cast<std::uint8_t>(mod << 6 | (reg & 7) << 3 | (base & 7)));
    if ((base & 7) == 4) a_.u8(0x24);  // SIB: base only
    if (mod == 1) a_.u8(static_cast<std::uint8_t>(disp));
    if (mod == 2) a_.u32le(static_cast<std::uint32_t>(disp));
  }
  void rr(std::uint8_t op, bool w, std::uint8_t reg, std::uint8_t rm) {
    rex(w, reg, rm);
    a_.u8(op);
    a_.u8(static_cast<std::uint8_t>(0xc0 | (reg & 7) << 3 | (rm & 7)));
  }
  void rm(std::initializer_list<std::uint8_t> op, bool w, std::uint8_t reg, std::uint8_t base, std::int32_t disp) {
    rex(w, reg, base);
    a_.bytes(op);
    mem(reg, base, disp);
  }
  // [rip + sym + addend] with the 32-bit field last in the instruction (tail = bytes after it).
  void rip(std::initializer_list<std::uint8_t> op, bool w, std::uint8_t reg, std::uint32_t sym, std::uint32_t type) {
    rex(w, reg, 0);
    a_.bytes(op);
    a_.u8(static_cast<std::uint8_t>((reg & 7) << 3 | 5));
    a_.reloc(a_.here(), type, sym, -4);
    a_.u32le(0);
  }
  std::uint32_t pcrel() const { return coff_ ? IMAGE_REL_AMD64_REL32 : R_X86_64_PC32; }
  std::uint32_t plt() const { return coff_ ? IMAGE_REL_AMD64_REL32 : R_X86_64_PLT32; }

  void push(std::uint8_t r) { rex(false, 0, r), a_.u8(static_cast<std::uint8_t>(0x50 | (r & 7))); }
  void pop(std::uint8_t r) { rex(false, 0, r), a_.u8(static_cast<std::uint8_t>(0x58 | (r & 7))); }
  void mov(std::uint8_t dst, std::uint8_t src) { rr(0x89, true, src, dst); }        // mov dst, src
  void mov32(std::uint8_t dst, std::uint8_t src) { rr(0x89, false, src, dst); }     // mov dst32, src32
  void load(std::uint8_t dst, std::uint8_t base, std::int32_t d) { rm({0x8b}, true, dst, base, d); }
  void load32(std::uint8_t dst, std::uint8_t base, std::int32_t d) { rm({0x8b}, false, dst, base, d); }
  void load16z(std::uint8_t dst, std::uint8_t base, std::int32_t d) { rm({0x0f, 0xb7}, false, dst, base, d); }
  void store(std::uint8_t base, std::int32_t d, std::uint8_t src) { rm({0x89}, true, src, base, d); }
  void store_imm(std::uint8_t base, std::int32_t d, std::int32_t imm) {  // mov qword [base+d], imm32
    rm({0xc7}, true, 0, base, d);
    a_.u32le(static_cast<std::uint32_t>(imm));
  }
  void lea_rip(std::uint8_t dst, std::uint32_t sym) { rip({0x8d}, true, dst, sym, pcrel()); }
  void load_rip(std::uint8_t dst, std::uint32_t sym) { rip({0x8b}, true, dst, sym, pcrel()); }
  void store_rip(std::uint32_t sym, std::uint8_t src) { rip({0x89}, true, src, sym, pcrel()); }
  void load_got(std::uint8_t dst, std::uint32_t sym) { rip({0x8b}, true, dst, sym, R_X86_64_GOTPCREL); }
  void call(std::uint32_t sym) {
    a_.u8(0xe8);
    a_.reloc(a_.here(), plt(), sym, -4);
    a_.u32le(0);
  }
  void call_reg(std::uint8_t r) { rex(false, 0, r), a_.u8(0xff), a_.u8(static_cast<std::uint8_t>(0xd0 | (r & 7))); }
  void test(std::uint8_t a, std::uint8_t b) { rr(0x85, true, b, a); }
  void cmp(std::uint8_t a, std::uint8_t b) { rr(0x39, true, b, a); }  // cmp a, b
  void grp1_imm8(std::uint8_t ext, bool w, std::uint8_t r, std::int8_t imm) {  // add/and/sub/cmp r, imm8
    rex(w, 0, r);
    a_.u8(0x83);
    a_.u8(static_cast<std::uint8_t>(0xc0 | ext << 3 | (r & 7)));
    a_.u8(static_cast<std::uint8_t>(imm));
  }
  void add_imm(std::uint8_t r, std::int8_t imm) { grp1_imm8(0, true, r, imm); }
  void sub_imm(std::uint8_t r, std::int8_t imm) { grp1_imm8(5, true, r, imm); }
  void and32_imm(std::uint8_t r, std::int8_t imm) { grp1_imm8(4, false, r, imm); }
  void cmp32_imm(std::uint8_t r, std::int8_t imm) { grp1_imm8(7, false, r, imm); }
  void shr32_imm(std::uint8_t r, std::uint8_t imm) {
    rex(false, 0, r);
    a_.u8(0xc1);
    a_.u8(static_cast<std::uint8_t>(0xe8 | (r & 7)));
    a_.u8(imm);
  }
  void mov32_imm(std::uint8_t r, std::uint32_t imm) {
    rex(false, 0, r);
    a_.u8(static_cast<std::uint8_t>(0xb8 | (r & 7)));
    a_.u32le(imm);
  }
  void xor32(std::uint8_t r) { rr(0x31, false, r, r); }
  // r = v: mov $v, %r32 (zero-extends) when it fits, else movabs $v, %r.
  void mov64_imm(std::uint8_t r, std::uint64_t v) {
    if (v <= 0xffffffffu) return mov32_imm(r, static_cast<std::uint32_t>(v));
    rex(true, 0, r);
    a_.u8(static_cast<std::uint8_t>(0xb8 | (r & 7)));
    a_.u32le(static_cast<std::uint32_t>(v)), a_.u32le(static_cast<std::uint32_t>(v >> 32));
  }
  // Branches always take a 32-bit displacement (fixup kind 0 = rel32 ending at the field).
  void jcc(std::uint8_t cc, int label) {
    a_.bytes({0x0f, static_cast<std::uint8_t>(0x80 | cc)});
    a_.fixup(a_.code().size(), label, 0);
    a_.u32le(0);
  }
  void jmp(int label) {
    a_.u8(0xe9);
    a_.fixup(a_.code().size(), label, 0);
    a_.u32le(0);
  }
  void ret() { a_.u8(0xc3); }
  void finish() {
    for (const Asm::Fixup& f : a_.fixups()) {
      std::int64_t rel = a_.target(f.label) - static_cast<std::int64_t>(f.at + 4);
      store_le<std::uint32_t>(a_.code().data() + f.at, static_cast<std::uint32_t>(static_cast<std::int32_t>(rel)));
    }
  }

 private:
  Asm& a_;
  bool coff_;
};

constexpr std::uint8_t CC_E = 0x4, CC_NE = 0x5;

// Straight-line functions. h lives in rbx (callee-saved in both conventions).
//   System V:                     Windows x64:
//     push %rbx                     push %rbx
//                                   sub  $32, %rsp          # shadow space
//     <steps>                       <steps>
//                                   add  $32, %rsp
//     pop  %rbx                     pop  %rbx
//     ret                           ret
// Steps (a0 = %rdi on System V, %rcx on Windows):
//   CallWithAddress:     lea  sym(%rip), a0            # R_X86_64_PC32 / REL32  sym-4
//                        call callee                   # R_X86_64_PLT32 / REL32 callee-4
//   CallWeakWithAddress: mov  callee@GOTPCREL(%rip), %rax   # R_X86_64_GOTPCREL callee-4
//                        test %rax, %rax
//                        je   1f
//                        lea  sym(%rip), a0
//                        call *%rax
//                     1:
//   CallSaveHandle:      lea  sym(%rip), a0 ; call callee
//                        mov  %rax, %rbx
//                        mov  %rax, handle(%rip)      # PC32 handle-4
//   CallWithHandle:      mov  %rbx, a0 ; call callee
//   CallWithLoaded:      mov  handle(%rip), a0 ; call callee
//   CallWithAddressAndValue: lea sym(%rip), a0
//                        mov  $value, a1d              # movabs $value, a1 above 32 bits (a1 = %rsi / %rdx)
//                        call callee
void x64_straight(Asm& a, bool coff, std::span<const Step> steps) {
  X64 x(a, coff);
  const std::uint8_t a0 = coff ? RCX : RDI;
  x.push(RBX);
  if (coff) x.sub_imm(RSP, 32);
  for (const Step& s : steps) {
    switch (s.kind) {
      case StepKind::CallWithAddress:
        x.lea_rip(a0, s.operand);
        x.call(s.callee);
        break;
      case StepKind::CallWeakWithAddress: {
        if (coff) {  // COFF has no GOT to test a weak undefined function through: call it directly.
          x.lea_rip(a0, s.operand);
          x.call(s.callee);
          break;
        }
        int skip = a.label();
        x.load_got(RAX, s.callee);
        x.test(RAX, RAX);
        x.jcc(CC_E, skip);
        x.lea_rip(a0, s.operand);
        x.call_reg(RAX);
        a.bind(skip);
        break;
      }
      case StepKind::CallSaveHandle:
        x.lea_rip(a0, s.operand);
        x.call(s.callee);
        x.mov(RBX, RAX);
        x.store_rip(s.operand2, RAX);
        break;
      case StepKind::CallWithHandle:
        x.mov(a0, RBX);
        x.call(s.callee);
        break;
      case StepKind::CallWithLoaded:
        x.load_rip(a0, s.operand);
        x.call(s.callee);
        break;
      case StepKind::CallWithAddressAndValue:
        x.lea_rip(a0, s.operand);
        x.mov64_imm(coff ? RDX : RSI, s.value);
        x.call(s.callee);
        break;
    }
  }
  if (coff) x.add_imm(RSP, 32);
  x.pop(RBX);
  x.ret();
  x.finish();
}

// Where an argument comes from when the loop sets up a call.
struct ArgSrc {
  enum Kind : std::uint8_t { Reg, Imm, Field32, Field64, Bit } kind;
  std::int32_t value = 0;  // Reg: register; Imm: value; Field*: entry offset; Bit: entry offset of flags
  std::uint8_t shift = 0;  // Bit: (flags >> shift) & 1
};
ArgSrc reg(std::uint8_t r) { return {ArgSrc::Reg, r}; }
ArgSrc imm(std::int32_t v) { return {ArgSrc::Imm, v}; }
ArgSrc field32(std::uint32_t off) { return {ArgSrc::Field32, static_cast<std::int32_t>(off)}; }
ArgSrc field64(std::uint32_t off) { return {ArgSrc::Field64, static_cast<std::int32_t>(off)}; }
ArgSrc bit(std::uint32_t flags_off, std::uint8_t shift) {
  return {ArgSrc::Bit, static_cast<std::int32_t>(flags_off), shift};
}

// The registration loop (System V; Windows x64 differs only in argument
// registers, the 32-byte shadow space and the frame size):
//     push %rbp ; push %r15 ; push %r14 ; push %r13 ; push %r12 ; push %rbx
//     sub  $FRAME, %rsp                 # outgoing stack arguments (40 / 88 on Windows)
//     mov  a0, %r12                     # h
//     lea  __start_<sec>(%rip), %rbx    # PC32
//     lea  __stop_<sec>(%rip), %r13     # PC32
//     cmp  %r13, %rbx
//     je   .Lend
// .Lloop:
//    [movzwl KIND(%rbx), %eax ; cmp $K, %eax ; jne .Lnext]      # LLVM 20+ layout only
//     mov  ADDR(%rbx), %r14
//     mov  NAME(%rbx), %r15
//     mov  SIZE(%rbx), %rbp
//     test %rbp, %rbp
//     jne  .Lvar
//     <args h, addr, name, name, -1, 0, 0, 0, 0, 0> ; call RegisterFunction ; jmp .Lnext
// .Lvar:
//     mov  FLAGS(%rbx), %eax ; and $7, %eax
//     test %eax,%eax ; je .Lglobal
//    [cmp $1, %eax ; je .Lmanaged] [cmp $2, %eax ; je .Lsurface] [cmp $3, %eax ; je .Ltexture]
//     jmp  .Lnext
// .Lglobal:  <h, addr, name, name, (flags>>3)&1, size, (flags>>4)&1, 0>        call RegisterVar ; jmp .Lnext
// .Lmanaged: <h, aux, addr, name, size, data>                                  call RegisterManagedVar ; jmp .Lnext
// .Lsurface: <h, addr, name, name, data, (flags>>3)&1>                         call RegisterSurface ; jmp .Lnext
// .Ltexture: <h, addr, name, name, data, (flags>>5)&1, (flags>>3)&1>           call RegisterTexture
// .Lnext:
//     add  $STRIDE, %rbx
//     cmp  %r13, %rbx
//     jne  .Lloop
// .Lend:
//     add  $FRAME, %rsp ; pop %rbx ; pop %r12 ; pop %r13 ; pop %r14 ; pop %r15 ; pop %rbp
//     ret
// An argument is set with mov/lea into its register, or through %rax into
// its stack slot ([%rsp + 8*i] after the register arguments, above the
// shadow space on Windows); bit fields go through
//     mov FLAGS(%rbx), %eax ; shr $n, %eax ; and $1, %eax
void x64_loop(Asm& a, bool coff, std::uint32_t start, std::uint32_t stop, const EntryLayout& L,
              const RegistrationCallees& c) {
  X64 x(a, coff);
  static constexpr std::array<std::uint8_t, 6> sysv{RDI, RSI, RDX, RCX, R8, R9};
  static constexpr std::array<std::uint8_t, 4> win{RCX, RDX, R8, R9};
  const std::span<const std::uint8_t> regs = coff ? std::span<const std::uint8_t>(win) : sysv;
  const std::int32_t stack_base = coff ? 32 : 0;
  const std::int8_t frame = coff ? 88 : 40;

  auto set_args = [&](std::initializer_list<ArgSrc> args) {
    std::size_t i = 0;
    for (const ArgSrc& s : args) {
      const bool in_reg = i < regs.size();
      const std::uint8_t dst = in_reg ? regs[i] : static_cast<std::uint8_t>(RAX);
      const std::int32_t slot = stack_base + 8 * static_cast<std::int32_t>(i - regs.size());
      switch (s.kind) {
        case ArgSrc::Reg:
          if (in_reg)
            x.mov(dst, static_cast<std::uint8_t>(s.value));
          else
            x.store(RSP, slot, static_cast<std::uint8_t>(s.value));
          break;
        case ArgSrc::Imm:
          if (!in_reg)
            x.store_imm(RSP, slot, s.value);
          else if (s.value == 0)
            x.xor32(dst);
          else
            x.mov32_imm(dst, static_cast<std::uint32_t>(s.value));
          break;
        case ArgSrc::Field32:
          x.load32(dst, RBX, s.value);
          if (!in_reg) x.store(RSP, slot, RAX);
          break;
        case ArgSrc::Field64:
          x.load(dst, RBX, s.value);
          if (!in_reg) x.store(RSP, slot, RAX);
          break;
        case ArgSrc::Bit:
          x.load32(RAX, RBX, s.value);
          x.shr32_imm(RAX, s.shift);
          x.and32_imm(RAX, 1);
          if (in_reg)
            x.mov32(dst, RAX);
          else
            x.store(RSP, slot, RAX);
          break;
      }
      ++i;
    }
  };

  const std::uint8_t a0 = regs[0];
  x.push(RBP), x.push(R15), x.push(R14), x.push(R13), x.push(R12), x.push(RBX);
  x.sub_imm(RSP, frame);
  x.mov(R12, a0);
  x.lea_rip(RBX, start);
  x.lea_rip(R13, stop);
  int l_end = a.label(), l_loop = a.label(), l_next = a.label(), l_var = a.label();
  x.cmp(RBX, R13);
  x.jcc(CC_E, l_end);
  a.bind(l_loop);
  if (L.kind >= 0) {
    x.load16z(RAX, RBX, L.kind);
    x.cmp32_imm(RAX, static_cast<std::int8_t>(L.kind_value));
    x.jcc(CC_NE, l_next);
  }
  x.load(R14, RBX, static_cast<std::int32_t>(L.addr));
  x.load(R15, RBX, static_cast<std::int32_t>(L.name));
  x.load(RBP, RBX, static_cast<std::int32_t>(L.size));
  x.test(RBP, RBP);
  x.jcc(CC_NE, l_var);
  set_args({reg(R12), reg(R14), reg(R15), reg(R15), imm(-1), imm(0), imm(0), imm(0), imm(0), imm(0)});
  x.call(c.function);
  x.jmp(l_next);
  a.bind(l_var);
  int l_global = a.label(), l_managed = a.label(), l_surface = a.label(), l_texture = a.label();
  x.load32(RAX, RBX, static_cast<std::int32_t>(L.flags));
  x.and32_imm(RAX, 7);
  x.cmp32_imm(RAX, 0);
  x.jcc(CC_E, l_global);
  const bool managed = c.managed != kNoCallee && L.aux_addr >= 0;
  if (managed) x.cmp32_imm(RAX, 1), x.jcc(CC_E, l_managed);
  if (c.surface != kNoCallee) x.cmp32_imm(RAX, 2), x.jcc(CC_E, l_surface);
  if (c.texture != kNoCallee) x.cmp32_imm(RAX, 3), x.jcc(CC_E, l_texture);
  x.jmp(l_next);
  a.bind(l_global);
  set_args({reg(R12), reg(R14), reg(R15), reg(R15), bit(L.flags, 3), reg(RBP), bit(L.flags, 4), imm(0)});
  x.call(c.var);
  x.jmp(l_next);
  if (managed) {
    a.bind(l_managed);
    set_args({reg(R12), field64(static_cast<std::uint32_t>(L.aux_addr)), reg(R14), reg(R15), reg(RBP),
              field32(L.data)});
    x.call(c.managed);
    x.jmp(l_next);
  }
  if (c.surface != kNoCallee) {
    a.bind(l_surface);
    set_args({reg(R12), reg(R14), reg(R15), reg(R15), field32(L.data), bit(L.flags, 3)});
    x.call(c.surface);
    x.jmp(l_next);
  }
  if (c.texture != kNoCallee) {
    a.bind(l_texture);
    set_args({reg(R12), reg(R14), reg(R15), reg(R15), field32(L.data), bit(L.flags, 5), bit(L.flags, 3)});
    x.call(c.texture);
  }
  a.bind(l_next);
  x.add_imm(RBX, static_cast<std::int8_t>(L.stride));
  x.cmp(RBX, R13);
  x.jcc(CC_NE, l_loop);
  a.bind(l_end);
  x.add_imm(RSP, frame);
  x.pop(RBX), x.pop(R12), x.pop(R13), x.pop(R14), x.pop(R15), x.pop(RBP);
  x.ret();
  x.finish();
}

// ============================================================================
// AArch64 (AAPCS64, ELF)
// ============================================================================
constexpr std::uint32_t XZR = 31, SP = 31;

class A64 {
 public:
  explicit A64(Asm& a) : a_(a) {}
  void ins(std::uint32_t w) { a_.u32le(w); }
  void adrp(std::uint32_t rd, std::uint32_t sym, std::uint32_t type = R_AARCH64_ADR_PREL_PG_HI21) {
    a_.reloc(a_.here(), type, sym, 0);
    ins(0x90000000 | rd);
  }
  void add_lo12(std::uint32_t rd, std::uint32_t rn, std::uint32_t sym) {
    a_.reloc(a_.here(), R_AARCH64_ADD_ABS_LO12_NC, sym, 0);
    ins(0x91000000 | rn << 5 | rd);
  }
  void addr(std::uint32_t rd, std::uint32_t sym) { adrp(rd, sym), add_lo12(rd, rd, sym); }
  void add_imm(std::uint32_t rd, std::uint32_t rn, std::uint32_t imm) { ins(0x91000000 | imm << 10 | rn << 5 | rd); }
  void sub_imm(std::uint32_t rd, std::uint32_t rn, std::uint32_t imm) { ins(0xd1000000 | imm << 10 | rn << 5 | rd); }
  void ldr(std::uint32_t rt, std::uint32_t rn, std::uint32_t off) { ins(0xf9400000 | (off / 8) << 10 | rn << 5 | rt); }
  void str(std::uint32_t rt, std::uint32_t rn, std::uint32_t off) { ins(0xf9000000 | (off / 8) << 10 | rn << 5 | rt); }
  void ldr_w(std::uint32_t rt, std::uint32_t rn, std::uint32_t off) { ins(0xb9400000 | (off / 4) << 10 | rn << 5 | rt); }
  void ldrh(std::uint32_t rt, std::uint32_t rn, std::uint32_t off) { ins(0x79400000 | (off / 2) << 10 | rn << 5 | rt); }
  void ldr_lo12(std::uint32_t rt, std::uint32_t rn, std::uint32_t sym, std::uint32_t type) {
    a_.reloc(a_.here(), type, sym, 0);
    ins(0xf9400000 | rn << 5 | rt);
  }
  void str_lo12(std::uint32_t rt, std::uint32_t rn, std::uint32_t sym) {
    a_.reloc(a_.here(), R_AARCH64_LDST64_ABS_LO12_NC, sym, 0);
    ins(0xf9000000 | rn << 5 | rt);
  }
  static std::uint32_t imm7(std::int32_t off) { return static_cast<std::uint32_t>(off / 8) & 0x7f; }
  void stp(std::uint32_t a, std::uint32_t b, std::uint32_t rn, std::int32_t off) {
    ins(0xa9000000 | imm7(off) << 15 | b << 10 | rn << 5 | a);
  }
  void ldp(std::uint32_t a, std::uint32_t b, std::uint32_t rn, std::int32_t off) {
    ins(0xa9400000 | imm7(off) << 15 | b << 10 | rn << 5 | a);
  }
  void stp_pre(std::uint32_t a, std::uint32_t b, std::int32_t off) {
    ins(0xa9800000 | imm7(off) << 15 | b << 10 | SP << 5 | a);
  }
  void ldp_post(std::uint32_t a, std::uint32_t b, std::int32_t off) {
    ins(0xa8c00000 | imm7(off) << 15 | b << 10 | SP << 5 | a);
  }
  void mov(std::uint32_t rd, std::uint32_t rm) { ins(0xaa0003e0 | rm << 16 | rd); }
  void mov_w(std::uint32_t rd, std::uint32_t rm) { ins(0x2a0003e0 | rm << 16 | rd); }
  void movz_w(std::uint32_t rd, std::uint32_t v) { ins(0x52800000 | v << 5 | rd); }
  void movn_w(std::uint32_t rd, std::uint32_t v) { ins(0x12800000 | v << 5 | rd); }
  // rd = v: movz of the low half-word, movk of every other non-zero one.
  void mov_imm64(std::uint32_t rd, std::uint64_t v) {
    ins(0xd2800000 | static_cast<std::uint32_t>(v & 0xffff) << 5 | rd);  // movz xd, #v
    for (std::uint32_t hw = 1; hw < 4; ++hw)
      if (std::uint32_t part = static_cast<std::uint32_t>(v >> (16 * hw)) & 0xffff; part != 0)
        ins(0xf2800000 | hw << 21 | part << 5 | rd);  // movk xd, #part, lsl #16*hw
  }
  void ubfx_w(std::uint32_t rd, std::uint32_t rn, std::uint32_t lsb, std::uint32_t width) {
    ins(0x53000000 | lsb << 16 | (lsb + width - 1) << 10 | rn << 5 | rd);
  }
  void cmp(std::uint32_t rn, std::uint32_t rm) { ins(0xeb00001f | rm << 16 | rn << 5); }
  void cmp_w_imm(std::uint32_t rn, std::uint32_t imm) { ins(0x7100001f | imm << 10 | rn << 5); }
  void bl(std::uint32_t sym) {
    a_.reloc(a_.here(), R_AARCH64_CALL26, sym, 0);
    ins(0x94000000);
  }
  void blr(std::uint32_t rn) { ins(0xd63f0000 | rn << 5); }
  void ret() { ins(0xd65f03c0); }
  // Local branches (fixup kinds: 0 = b imm26, 1 = b.cond / cbz imm19).
  void b(int l) { a_.fixup(a_.code().size(), l, 0), ins(0x14000000); }
  void bcond(std::uint32_t cond, int l) { a_.fixup(a_.code().size(), l, 1), ins(0x54000000 | cond); }
  void cbz(std::uint32_t rt, int l) { a_.fixup(a_.code().size(), l, 1), ins(0xb4000000 | rt); }
  void cbnz(std::uint32_t rt, int l) { a_.fixup(a_.code().size(), l, 1), ins(0xb5000000 | rt); }
  void cbz_w(std::uint32_t rt, int l) { a_.fixup(a_.code().size(), l, 1), ins(0x34000000 | rt); }
  void finish() {
    for (const Asm::Fixup& f : a_.fixups()) {
      std::int64_t words = (a_.target(f.label) - static_cast<std::int64_t>(f.at)) / 4;
      std::byte* p = a_.code().data() + f.at;
      std::uint32_t w = load_le<std::uint32_t>(p);
      if (f.kind == 0)
        w |= static_cast<std::uint32_t>(words) & 0x3ffffff;
      else
        w |= (static_cast<std::uint32_t>(words) & 0x7ffff) << 5;
      store_le<std::uint32_t>(p, w);
    }
  }

 private:
  Asm& a_;
};

constexpr std::uint32_t COND_EQ = 0, COND_NE = 1;

// Straight-line functions, h in x19:
//     stp  x29, x30, [sp, #-32]!
//     mov  x29, sp
//     str  x19, [sp, #16]
//   CallWithAddress:     adrp x0, sym                  # R_AARCH64_ADR_PREL_PG_HI21 sym
//                        add  x0, x0, :lo12:sym        # R_AARCH64_ADD_ABS_LO12_NC sym
//                        bl   callee                   # R_AARCH64_CALL26 callee
//   CallWeakWithAddress: adrp x8, :got:callee          # R_AARCH64_ADR_GOT_PAGE callee
//                        ldr  x8, [x8, :got_lo12:callee]   # R_AARCH64_LD64_GOT_LO12_NC callee
//                        cbz  x8, 1f
//                        adrp x0, sym ; add x0, x0, :lo12:sym
//                        blr  x8
//                     1:
//   CallSaveHandle:      adrp x0, sym ; add x0, x0, :lo12:sym ; bl callee
//                        mov  x19, x0
//                        adrp x8, handle               # ADR_PREL_PG_HI21
//                        str  x0, [x8, :lo12:handle]   # R_AARCH64_LDST64_ABS_LO12_NC
//   CallWithHandle:      mov  x0, x19 ; bl callee
//   CallWithLoaded:      adrp x8, handle ; ldr x0, [x8, :lo12:handle] ; bl callee
//   CallWithAddressAndValue: adrp x0, sym ; add x0, x0, :lo12:sym
//                        movz x1, #value[15:0] ; movk x1, #value[16k+15:16k], lsl #16k (non-zero parts)
//                        bl   callee
//     ldr  x19, [sp, #16]
//     ldp  x29, x30, [sp], #32
//     ret
void a64_straight(Asm& a, std::span<const Step> steps) {
  A64 m(a);
  m.stp_pre(29, 30, -32);
  m.add_imm(29, SP, 0);
  m.str(19, SP, 16);
  for (const Step& s : steps) {
    switch (s.kind) {
      case StepKind::CallWithAddress:
        m.addr(0, s.operand);
        m.bl(s.callee);
        break;
      case StepKind::CallWeakWithAddress: {
        int skip = a.label();
        m.adrp(8, s.callee, R_AARCH64_ADR_GOT_PAGE);
        m.ldr_lo12(8, 8, s.callee, R_AARCH64_LD64_GOT_LO12_NC);
        m.cbz(8, skip);
        m.addr(0, s.operand);
        m.blr(8);
        a.bind(skip);
        break;
      }
      case StepKind::CallSaveHandle:
        m.addr(0, s.operand);
        m.bl(s.callee);
        m.mov(19, 0);
        m.adrp(8, s.operand2);
        m.str_lo12(0, 8, s.operand2);
        break;
      case StepKind::CallWithHandle:
        m.mov(0, 19);
        m.bl(s.callee);
        break;
      case StepKind::CallWithLoaded:
        m.adrp(8, s.operand);
        m.ldr_lo12(0, 8, s.operand, R_AARCH64_LDST64_ABS_LO12_NC);
        m.bl(s.callee);
        break;
      case StepKind::CallWithAddressAndValue:
        m.addr(0, s.operand);
        m.mov_imm64(1, s.value);
        m.bl(s.callee);
        break;
    }
  }
  m.ldr(19, SP, 16);
  m.ldp_post(29, 30, 32);
  m.ret();
  m.finish();
}

// The registration loop; x19 = entry, x20 = h, x21 = stop, x22 = addr,
// x23 = name, x24 = size, w9 = scratch. Frame (80 bytes):
//   [sp, #0..16) outgoing stack arguments 9 and 10, [sp, #16] x29/x30, [sp, #32..80) x19-x24.
//     sub  sp, sp, #80
//     stp  x29, x30, [sp, #16] ; add x29, sp, #16
//     stp  x19, x20, [sp, #32] ; stp x21, x22, [sp, #48] ; stp x23, x24, [sp, #64]
//     mov  x20, x0
//     adrp x19, __start_<sec> ; add x19, x19, :lo12:__start_<sec>
//     adrp x21, __stop_<sec>  ; add x21, x21, :lo12:__stop_<sec>
//     cmp  x19, x21 ; b.eq .Lend
// .Lloop:
//    [ldrh w9, [x19, #KIND] ; cmp w9, #K ; b.ne .Lnext]          # LLVM 20+ layout only
//     ldr  x22, [x19, #ADDR] ; ldr x23, [x19, #NAME] ; ldr x24, [x19, #SIZE]
//     cbnz x24, .Lvar
//     mov x0, x20 ; mov x1, x22 ; mov x2, x23 ; mov x3, x23 ; mov w4, #-1
//     mov x5, xzr ; mov x6, xzr ; mov x7, xzr ; str xzr, [sp] ; str xzr, [sp, #8]
//     bl   RegisterFunction ; b .Lnext
// .Lvar:
//     ldr  w9, [x19, #FLAGS] ; ubfx w9, w9, #0, #3
//     cbz  w9, .Lglobal ; [cmp w9, #1 ; b.eq .Lmanaged] [cmp w9, #2 ; b.eq .Lsurface] [cmp w9, #3 ; b.eq .Ltexture]
//     b    .Lnext
// .Lglobal:  x0..x7 = h, addr, name, name, ubfx(flags,3,1), size, ubfx(flags,4,1), 0 ; bl RegisterVar ; b .Lnext
// .Lmanaged: h, [x19,#AUX], addr, name, size, ldr w5 [x19,#DATA] ; bl RegisterManagedVar ; b .Lnext
// .Lsurface: h, addr, name, name, data, ubfx(flags,3,1) ; bl RegisterSurface ; b .Lnext
// .Ltexture: h, addr, name, name, data, ubfx(flags,5,1), ubfx(flags,3,1) ; bl RegisterTexture
// .Lnext:
//     add  x19, x19, #STRIDE ; cmp x19, x21 ; b.ne .Lloop
// .Lend:
//     ldp x23, x24, [sp, #64] ; ldp x21, x22, [sp, #48] ; ldp x19, x20, [sp, #32]
//     ldp x29, x30, [sp, #16] ; add sp, sp, #80 ; ret
void a64_loop(Asm& a, std::uint32_t start, std::uint32_t stop, const EntryLayout& L, const RegistrationCallees& c) {
  A64 m(a);
  auto set_args = [&](std::initializer_list<ArgSrc> args) {
    std::uint32_t i = 0;
    for (const ArgSrc& s : args) {
      const bool in_reg = i < 8;
      const std::uint32_t dst = in_reg ? i : 9;
      switch (s.kind) {
        case ArgSrc::Reg:
          if (in_reg)
            m.mov(dst, static_cast<std::uint32_t>(s.value));
          else
            m.str(static_cast<std::uint32_t>(s.value), SP, 8 * (i - 8));
          break;
        case ArgSrc::Imm:
          if (!in_reg && s.value == 0)
            m.str(XZR, SP, 8 * (i - 8));
          else if (s.value == 0)
            m.mov(dst, XZR);
          else if (s.value == -1)
            m.movn_w(dst, 0);
          else
            m.movz_w(dst, static_cast<std::uint32_t>(s.value));
          break;
        case ArgSrc::Field32: m.ldr_w(dst, 19, static_cast<std::uint32_t>(s.value)); break;
        case ArgSrc::Field64: m.ldr(dst, 19, static_cast<std::uint32_t>(s.value)); break;
        case ArgSrc::Bit:
          m.ldr_w(dst, 19, static_cast<std::uint32_t>(s.value));
          m.ubfx_w(dst, dst, s.shift, 1);
          break;
      }
      if (!in_reg && s.kind != ArgSrc::Reg && !(s.kind == ArgSrc::Imm && s.value == 0)) m.str(9, SP, 8 * (i - 8));
      ++i;
    }
  };
  m.sub_imm(SP, SP, 80);
  m.stp(29, 30, SP, 16);
  m.add_imm(29, SP, 16);
  m.stp(19, 20, SP, 32);
  m.stp(21, 22, SP, 48);
  m.stp(23, 24, SP, 64);
  m.mov(20, 0);
  m.addr(19, start);
  m.addr(21, stop);
  int l_end = a.label(), l_loop = a.label(), l_next = a.label(), l_var = a.label();
  m.cmp(19, 21);
  m.bcond(COND_EQ, l_end);
  a.bind(l_loop);
  if (L.kind >= 0) {
    m.ldrh(9, 19, static_cast<std::uint32_t>(L.kind));
    m.cmp_w_imm(9, L.kind_value);
    m.bcond(COND_NE, l_next);
  }
  m.ldr(22, 19, L.addr);
  m.ldr(23, 19, L.name);
  m.ldr(24, 19, L.size);
  m.cbnz(24, l_var);
  set_args({reg(20), reg(22), reg(23), reg(23), imm(-1), imm(0), imm(0), imm(0), imm(0), imm(0)});
  m.bl(c.function);
  m.b(l_next);
  a.bind(l_var);
  int l_global = a.label(), l_managed = a.label(), l_surface = a.label(), l_texture = a.label();
  m.ldr_w(9, 19, L.flags);
  m.ubfx_w(9, 9, 0, 3);
  m.cbz_w(9, l_global);
  const bool managed = c.managed != kNoCallee && L.aux_addr >= 0;
  if (managed) m.cmp_w_imm(9, 1), m.bcond(COND_EQ, l_managed);
  if (c.surface != kNoCallee) m.cmp_w_imm(9, 2), m.bcond(COND_EQ, l_surface);
  if (c.texture != kNoCallee) m.cmp_w_imm(9, 3), m.bcond(COND_EQ, l_texture);
  m.b(l_next);
  a.bind(l_global);
  set_args({reg(20), reg(22), reg(23), reg(23), bit(L.flags, 3), reg(24), bit(L.flags, 4), imm(0)});
  m.bl(c.var);
  m.b(l_next);
  if (managed) {
    a.bind(l_managed);
    set_args({reg(20), field64(static_cast<std::uint32_t>(L.aux_addr)), reg(22), reg(23), reg(24), field32(L.data)});
    m.bl(c.managed);
    m.b(l_next);
  }
  if (c.surface != kNoCallee) {
    a.bind(l_surface);
    set_args({reg(20), reg(22), reg(23), reg(23), field32(L.data), bit(L.flags, 3)});
    m.bl(c.surface);
    m.b(l_next);
  }
  if (c.texture != kNoCallee) {
    a.bind(l_texture);
    set_args({reg(20), reg(22), reg(23), reg(23), field32(L.data), bit(L.flags, 5), bit(L.flags, 3)});
    m.bl(c.texture);
  }
  a.bind(l_next);
  m.add_imm(19, 19, L.stride);
  m.cmp(19, 21);
  m.bcond(COND_NE, l_loop);
  a.bind(l_end);
  m.ldp(23, 24, SP, 64);
  m.ldp(21, 22, SP, 48);
  m.ldp(19, 20, SP, 32);
  m.ldp(29, 30, SP, 16);
  m.add_imm(SP, SP, 80);
  m.ret();
  m.finish();
}

// ============================================================================
// ppc64le (ELFv2)
// ============================================================================
class Ppc {
 public:
  Ppc(Asm& a, std::uint32_t toc) : a_(a), toc_(toc) {}
  void ins(std::uint32_t w) { a_.u32le(w); }
  static std::uint32_t d(std::int32_t v) { return static_cast<std::uint32_t>(v) & 0xffff; }
  // D-form: op rt, d(ra)
  void dform(std::uint32_t op, std::uint32_t rt, std::uint32_t ra, std::int32_t disp) {
    ins(op << 26 | rt << 21 | ra << 16 | d(disp));
  }
  void addi(std::uint32_t rt, std::uint32_t ra, std::int32_t v) { dform(14, rt, ra, v); }
  void li(std::uint32_t rt, std::int32_t v) { addi(rt, 0, v); }
  void addis(std::uint32_t rt, std::uint32_t ra, std::int32_t v) { dform(15, rt, ra, v); }
  void ld(std::uint32_t rt, std::uint32_t ra, std::int32_t disp) { dform(58, rt, ra, disp & ~3); }
  void std_(std::uint32_t rs, std::uint32_t ra, std::int32_t disp) { dform(62, rs, ra, disp & ~3); }
  void stdu(std::uint32_t rs, std::uint32_t ra, std::int32_t disp) { dform(62, rs, ra, (disp & ~3) | 1); }
  void lwz(std::uint32_t rt, std::uint32_t ra, std::int32_t disp) { dform(32, rt, ra, disp); }
  void lhz(std::uint32_t rt, std::uint32_t ra, std::int32_t disp) { dform(40, rt, ra, disp); }
  void ori(std::uint32_t ra, std::uint32_t rs, std::uint32_t v) { ins(24u << 26 | rs << 21 | ra << 16 | (v & 0xffff)); }
  void oris(std::uint32_t ra, std::uint32_t rs, std::uint32_t v) { ins(25u << 26 | rs << 21 | ra << 16 | (v & 0xffff)); }
  void sldi32(std::uint32_t ra, std::uint32_t rs) {  // rldicr ra, rs, 32, 31
    ins(30u << 26 | rs << 21 | ra << 16 | 31u << 6 | 1u << 2 | 1u << 1);
  }
  // rt = v: lis + ori below 2^31 (lis sign-extends), else lis, ori, sldi 32, oris, ori.
  void li64(std::uint32_t rt, std::uint64_t v) {
    auto part = [&](int k) { return static_cast<std::uint32_t>(v >> (16 * k)) & 0xffff; };
    if (v < 0x80000000u) {
      addis(rt, 0, static_cast<std::int16_t>(part(1)));
      ori(rt, rt, part(0));
      return;
    }
    addis(rt, 0, static_cast<std::int16_t>(part(3)));
    ori(rt, rt, part(2));
    sldi32(rt, rt);
    oris(rt, rt, part(1));
    ori(rt, rt, part(0));
  }
  void mr(std::uint32_t ra, std::uint32_t rs) { ins(31u << 26 | rs << 21 | ra << 16 | rs << 11 | 444 << 1); }
  void mflr(std::uint32_t rt) { ins(0x7c0802a6 | rt << 21); }
  void mtlr(std::uint32_t rs) { ins(0x7c0803a6 | rs << 21); }
  void mtctr(std::uint32_t rs) { ins(0x7c0903a6 | rs << 21); }
  void bctrl() { ins(0x4e800421); }
  void blr() { ins(0x4e800020); }
  void nop() { ins(0x60000000); }
  void cmpld(std::uint32_t ra, std::uint32_t rb) { ins(31u << 26 | 1u << 21 | ra << 16 | rb << 11 | 32 << 1); }
  void cmpldi(std::uint32_t ra, std::uint32_t v) { ins(10u << 26 | 1u << 21 | ra << 16 | v); }
  void cmplwi(std::uint32_t ra, std::uint32_t v) { ins(10u << 26 | ra << 16 | v); }
  // rlwinm ra, rs, sh, mb, me
  void rlwinm(std::uint32_t ra, std::uint32_t rs, std::uint32_t sh, std::uint32_t mb, std::uint32_t me) {
    ins(21u << 26 | rs << 21 | ra << 16 | sh << 11 | mb << 6 | me << 1);
  }
  void extract_bit(std::uint32_t ra, std::uint32_t rs, std::uint32_t n) { rlwinm(ra, rs, (32 - n) & 31, 31, 31); }
  // Relocated forms.
  void addis_toc_ha(std::uint32_t rt, std::uint32_t sym) {
    a_.reloc(a_.here(), R_PPC64_TOC16_HA, sym, 0);
    addis(rt, 2, 0);
  }
  void addi_toc_lo(std::uint32_t rt, std::uint32_t ra, std::uint32_t sym) {
    a_.reloc(a_.here(), R_PPC64_TOC16_LO, sym, 0);
    addi(rt, ra, 0);
  }
  void addr(std::uint32_t rt, std::uint32_t sym) { addis_toc_ha(rt, sym), addi_toc_lo(rt, rt, sym); }
  void ld_toc_lo(std::uint32_t rt, std::uint32_t ra, std::uint32_t sym) {
    a_.reloc(a_.here(), R_PPC64_TOC16_LO_DS, sym, 0);
    ld(rt, ra, 0);
  }
  void std_toc_lo(std::uint32_t rs, std::uint32_t ra, std::uint32_t sym) {
    a_.reloc(a_.here(), R_PPC64_TOC16_LO_DS, sym, 0);
    std_(rs, ra, 0);
  }
  void bl(std::uint32_t sym) {  // bl sym ; nop (the linker turns the nop into a TOC restore when needed)
    a_.reloc(a_.here(), R_PPC64_REL24, sym, 0);
    ins(0x48000001);
    nop();
  }
  // Global entry point: r2 = .TOC. computed from r12 (the function's own address).
  //     addis r2, r12, (.TOC.-fn)@ha    # R_PPC64_REL16_HA .TOC.
  //     addi  r2, r2, (.TOC.-fn)@l      # R_PPC64_REL16_LO .TOC.+4
  void global_entry() {
    a_.reloc(a_.here(), R_PPC64_REL16_HA, toc_, 0);
    addis(2, 12, 0);
    a_.reloc(a_.here(), R_PPC64_REL16_LO, toc_, 4);
    addi(2, 2, 0);
  }
  // Local branches: kind 0 = b (I-form), kind 1 = bc (B-form).
  void b(int l) { a_.fixup(a_.code().size(), l, 0), ins(0x48000000); }
  void beq(int l) { a_.fixup(a_.code().size(), l, 1), ins(16u << 26 | 12u << 21 | 2u << 16); }
  void bne(int l) { a_.fixup(a_.code().size(), l, 1), ins(16u << 26 | 4u << 21 | 2u << 16); }
  void finish() {
    for (const Asm::Fixup& f : a_.fixups()) {
      std::int64_t off = a_.target(f.label) - static_cast<std::int64_t>(f.at);
      std::byte* p = a_.code().data() + f.at;
      std::uint32_t w = load_le<std::uint32_t>(p);
      w |= f.kind == 0 ? static_cast<std::uint32_t>(off) & 0x03fffffc : static_cast<std::uint32_t>(off) & 0xfffc;
      store_le<std::uint32_t>(p, w);
    }
  }

 private:
  Asm& a_;
  std::uint32_t toc_;
};

// st_other bits for "local entry point 8 bytes after the global one" (2 instructions).
constexpr std::uint8_t kPpcLocalEntry8 = 3 << 5;

// Straight-line functions (frame 48 bytes: 32-byte ELFv2 header + r31 + pad):
//     addis r2, r12, (.TOC.-fn)@ha ; addi r2, r2, (.TOC.-fn)@l     # global entry
//     mflr  r0
//     std   r31, -8(r1)
//     std   r0, 16(r1)
//     stdu  r1, -48(r1)
//     std   r2, 24(r1)                   # TOC save slot, restored after an indirect call
//   CallWithAddress:     addis r3, r2, sym@toc@ha ; addi r3, r3, sym@toc@l   # TOC16_HA / TOC16_LO
//                        bl callee ; nop                                     # REL24
//   CallWeakWithAddress: addis r12, r2, callee@got@ha ; ld r12, callee@got@l(r12)   # GOT16_HA / GOT16_LO_DS
//                        cmpldi r12, 0 ; beq 1f
//                        addis r3, r2, sym@toc@ha ; addi r3, r3, sym@toc@l
//                        mtctr r12 ; bctrl ; ld r2, 24(r1)
//                     1:
//   CallSaveHandle:      <address of sym in r3> ; bl callee ; nop
//                        mr r31, r3
//                        addis r4, r2, handle@toc@ha ; std r3, handle@toc@l(r4)    # TOC16_LO_DS
//   CallWithHandle:      mr r3, r31 ; bl callee ; nop
//   CallWithLoaded:      addis r3, r2, handle@toc@ha ; ld r3, handle@toc@l(r3) ; bl callee ; nop
//   CallWithAddressAndValue: <address of sym in r3>
//                        lis r4, value@h ; ori r4, r4, value@l       # value < 2^31; else
//                        (lis r4, value@highest ; ori r4, r4, value@higher ; sldi r4, r4, 32 ;
//                         oris r4, r4, value@h ; ori r4, r4, value@l)
//                        bl callee ; nop
//     addi  r1, r1, 48
//     ld    r0, 16(r1)
//     ld    r31, -8(r1)
//     mtlr  r0
//     blr
void ppc_straight(Asm& a, std::uint32_t toc, std::span<const Step> steps) {
  Ppc p(a, toc);
  p.global_entry();
  p.mflr(0);
  p.std_(31, 1, -8);
  p.std_(0, 1, 16);
  p.stdu(1, 1, -48);
  p.std_(2, 1, 24);
  for (const Step& s : steps) {
    switch (s.kind) {
      case StepKind::CallWithAddress:
        p.addr(3, s.operand);
        p.bl(s.callee);
        break;
      case StepKind::CallWeakWithAddress: {
        int skip = a.label();
        a.reloc(a.here(), R_PPC64_GOT16_HA, s.callee, 0);
        p.addis(12, 2, 0);
        a.reloc(a.here(), R_PPC64_GOT16_LO_DS, s.callee, 0);
        p.ld(12, 12, 0);
        p.cmpldi(12, 0);
        p.beq(skip);
        p.addr(3, s.operand);
        p.mtctr(12);
        p.bctrl();
        p.ld(2, 1, 24);
        a.bind(skip);
        break;
      }
      case StepKind::CallSaveHandle:
        p.addr(3, s.operand);
        p.bl(s.callee);
        p.mr(31, 3);
        p.addis_toc_ha(4, s.operand2);
        p.std_toc_lo(3, 4, s.operand2);
        break;
      case StepKind::CallWithHandle:
        p.mr(3, 31);
        p.bl(s.callee);
        break;
      case StepKind::CallWithLoaded:
        p.addis_toc_ha(3, s.operand);
        p.ld_toc_lo(3, 3, s.operand);
        p.bl(s.callee);
        break;
      case StepKind::CallWithAddressAndValue:
        p.addr(3, s.operand);
        p.li64(4, s.value);
        p.bl(s.callee);
        break;
    }
  }
  p.addi(1, 1, 48);
  p.ld(0, 1, 16);
  p.ld(31, 1, -8);
  p.mtlr(0);
  p.blr();
  p.finish();
}

// The registration loop. r26 = h, r27 = entry, r28 = stop, r29 = addr,
// r30 = name, r31 = size, r11/r12 = scratch. Frame 160 bytes: 32-byte
// header, 80-byte parameter save area (10 arguments; the 9th and 10th are
// stored at 96(r1) and 104(r1)), r26-r31 saved below the caller's stack pointer.
//     <global entry> ; mflr r0 ; std r26..r31, -48..-8(r1) ; std r0, 16(r1) ; stdu r1, -160(r1)
//     mr r26, r3
//     addis r27, r2, __start@toc@ha ; addi r27, r27, __start@toc@l
//     addis r28, r2, __stop@toc@ha  ; addi r28, r28, __stop@toc@l
//     cmpld r27, r28 ; beq .Lend
// .Lloop:
//    [lhz r11, KIND(r27) ; cmplwi r11, K ; bne .Lnext]          # LLVM 20+ layout only
//     ld r29, ADDR(r27) ; ld r30, NAME(r27) ; ld r31, SIZE(r27)
//     cmpldi r31, 0 ; bne .Lvar
//     r3..r10 = h, addr, name, name, -1, 0, 0, 0 ; std 0 -> 96(r1), 104(r1)
//     bl RegisterFunction ; nop ; b .Lnext
// .Lvar:
//     lwz r11, FLAGS(r27) ; rlwinm r11, r11, 0, 29, 31              # flags & 7
//     cmplwi r11, 0 ; beq .Lglobal ; [cmplwi r11, 1 ; beq .Lmanaged] [.. 2 .Lsurface] [.. 3 .Ltexture]
//     b .Lnext
// .Lglobal: r3..r10 = h, addr, name, name, (flags>>3)&1, size, (flags>>4)&1, 0 ; bl RegisterVar ; nop ; b .Lnext
// .Lmanaged/.Lsurface/.Ltexture: as on x86-64, arguments in r3..r9
// .Lnext:
//     addi r27, r27, STRIDE ; cmpld r27, r28 ; bne .Lloop
// .Lend:
//     addi r1, r1, 160 ; ld r0, 16(r1) ; mtlr r0 ; ld r26..r31, -48..-8(r1) ; blr
// Bit fields: lwz rX, FLAGS(r27) ; rlwinm rX, rX, 32-n, 31, 31.
void ppc_loop(Asm& a, std::uint32_t toc, std::uint32_t start, std::uint32_t stop, const EntryLayout& L,
              const RegistrationCallees& c) {
  Ppc p(a, toc);
  auto set_args = [&](std::initializer_list<ArgSrc> args) {
    std::uint32_t i = 0;
    for (const ArgSrc& s : args) {
      const bool in_reg = i < 8;
      const std::uint32_t dst = in_reg ? 3 + i : 11;
      switch (s.kind) {
        case ArgSrc::Reg: p.mr(dst, static_cast<std::uint32_t>(s.value)); break;
        case ArgSrc::Imm: p.li(dst, s.value); break;
        case ArgSrc::Field32: p.lwz(dst, 27, s.value); break;
        case ArgSrc::Field64: p.ld(dst, 27, s.value); break;
        case ArgSrc::Bit:
          p.lwz(dst, 27, s.value);
          p.extract_bit(dst, dst, s.shift);
          break;
      }
      if (!in_reg) p.std_(11, 1, static_cast<std::int32_t>(32 + 8 * i));
      ++i;
    }
  };
  p.global_entry();
  p.mflr(0);
  for (std::uint32_t r = 26; r <= 31; ++r) p.std_(r, 1, -8 * static_cast<std::int32_t>(32 - r));
  p.std_(0, 1, 16);
  p.stdu(1, 1, -160);
  p.mr(26, 3);
  p.addr(27, start);
  p.addr(28, stop);
  int l_end = a.label(), l_loop = a.label(), l_next = a.label(), l_var = a.label();
  p.cmpld(27, 28);
  p.beq(l_end);
  a.bind(l_loop);
  if (L.kind >= 0) {
    p.lhz(11, 27, L.kind);
    p.cmplwi(11, L.kind_value);
    p.bne(l_next);
  }
  p.ld(29, 27, static_cast<std::int32_t>(L.addr));
  p.ld(30, 27, static_cast<std::int32_t>(L.name));
  p.ld(31, 27, static_cast<std::int32_t>(L.size));
  p.cmpldi(31, 0);
  p.bne(l_var);
  set_args({reg(26), reg(29), reg(30), reg(30), imm(-1), imm(0), imm(0), imm(0), imm(0), imm(0)});
  p.bl(c.function);
  p.b(l_next);
  a.bind(l_var);
  int l_global = a.label(), l_managed = a.label(), l_surface = a.label(), l_texture = a.label();
  p.lwz(11, 27, static_cast<std::int32_t>(L.flags));
  p.rlwinm(11, 11, 0, 29, 31);
  p.cmplwi(11, 0);
  p.beq(l_global);
  const bool managed = c.managed != kNoCallee && L.aux_addr >= 0;
  if (managed) p.cmplwi(11, 1), p.beq(l_managed);
  if (c.surface != kNoCallee) p.cmplwi(11, 2), p.beq(l_surface);
  if (c.texture != kNoCallee) p.cmplwi(11, 3), p.beq(l_texture);
  p.b(l_next);
  a.bind(l_global);
  set_args({reg(26), reg(29), reg(30), reg(30), bit(L.flags, 3), reg(31), bit(L.flags, 4), imm(0)});
  p.bl(c.var);
  p.b(l_next);
  if (managed) {
    a.bind(l_managed);
    set_args({reg(26), field64(static_cast<std::uint32_t>(L.aux_addr)), reg(29), reg(30), reg(31), field32(L.data)});
    p.bl(c.managed);
    p.b(l_next);
  }
  if (c.surface != kNoCallee) {
    a.bind(l_surface);
    set_args({reg(26), reg(29), reg(30), reg(30), field32(L.data), bit(L.flags, 3)});
    p.bl(c.surface);
    p.b(l_next);
  }
  if (c.texture != kNoCallee) {
    a.bind(l_texture);
    set_args({reg(26), reg(29), reg(30), reg(30), field32(L.data), bit(L.flags, 5), bit(L.flags, 3)});
    p.bl(c.texture);
  }
  a.bind(l_next);
  p.addi(27, 27, static_cast<std::int32_t>(L.stride));
  p.cmpld(27, 28);
  p.bne(l_loop);
  a.bind(l_end);
  p.addi(1, 1, 160);
  p.ld(0, 1, 16);
  p.mtlr(0);
  for (std::uint32_t r = 26; r <= 31; ++r) p.ld(r, 1, -8 * static_cast<std::int32_t>(32 - r));
  p.blr();
  p.finish();
}

std::uint32_t toc_symbol(RelocatableObject& obj) {
  for (std::uint32_t i = 0; i < obj.symbols.size(); ++i)
    if (obj.symbols[i].name == ".TOC." && obj.symbols[i].section == kUndefined) return i;
  Symbol s;
  s.name = ".TOC.";
  s.binding = Binding::Global;
  return obj.add_symbol(std::move(s));
}

void pad(Asm& a, CodeArch arch) {
  switch (arch) {
    case CodeArch::X86_64: a.pad_to(16, {0x90}); break;                // nop
    case CodeArch::AArch64: a.pad_to(4, {0x1f, 0x20, 0x03, 0xd5}); break;  // nop
    case CodeArch::Ppc64le: a.pad_to(16, {0x00, 0x00, 0x00, 0x60}); break;  // nop (ori 0,0,0)
  }
}

}  // namespace

CodeEmitter::CodeEmitter(RelocatableObject& obj, std::uint32_t text_section, CodeTarget target)
    : obj_(obj), text_(text_section), target_(target) {
  obj_.sections[text_].align = alignment(target.arch);
}

std::uint64_t CodeEmitter::alignment(CodeArch arch) { return arch == CodeArch::AArch64 ? 4 : 16; }

void CodeEmitter::straight_function(std::uint32_t fn, std::span<const Step> steps) {
  // The TOC symbol is created before the code so that symbol indices stay stable.
  std::uint32_t toc = target_.arch == CodeArch::Ppc64le ? toc_symbol(obj_) : 0;
  Asm a(obj_, text_);
  pad(a, target_.arch);
  std::uint64_t start = a.here();
  switch (target_.arch) {
    case CodeArch::X86_64: x64_straight(a, target_.coff, steps); break;
    case CodeArch::AArch64: a64_straight(a, steps); break;
    case CodeArch::Ppc64le: ppc_straight(a, toc, steps); break;
  }
  a.define(fn, start, target_.arch == CodeArch::Ppc64le ? kPpcLocalEntry8 : 0);
}

void CodeEmitter::globals_loop(std::uint32_t fn, std::uint32_t start, std::uint32_t stop, const EntryLayout& layout,
                               const RegistrationCallees& callees) {
  if (callees.function == kNoCallee || callees.var == kNoCallee)
    fail("", "internal error: the registration loop needs the function and variable callees");
  std::uint32_t toc = target_.arch == CodeArch::Ppc64le ? toc_symbol(obj_) : 0;
  Asm a(obj_, text_);
  pad(a, target_.arch);
  std::uint64_t begin = a.here();
  switch (target_.arch) {
    case CodeArch::X86_64: x64_loop(a, target_.coff, start, stop, layout, callees); break;
    case CodeArch::AArch64: a64_loop(a, start, stop, layout, callees); break;
    case CodeArch::Ppc64le: ppc_loop(a, toc, start, stop, layout, callees); break;
  }
  a.define(fn, begin, target_.arch == CodeArch::Ppc64le ? kPpcLocalEntry8 : 0);
}

}  // namespace ot::object
