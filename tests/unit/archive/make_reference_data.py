#!/usr/bin/env python3
"""Regenerates reference_data.h: small inputs and the archives LLVM 19 builds
from them, for the archive unit tests. Needs /usr/lib/llvm-19/bin.

  x.o   llvm-mc -filetype=obj of the assembly below (x86_64 ELF)
  y.bc  clang-19 -c -emit-llvm -O1 of the C below (carries an irsymtab)
  sym.a llvm-ar rcsD sym.a x.o y.bc x.o          (GNU, "/" symbol table, 644, deterministic)
  pk.a  clang-offload-packager dir/multi.bin --image=file=pk.a --archive
        with multi.bin = three images "abc", "defg", "" (long-name table, no symbol table)
  pk2.a the same from m.bin (names stored inline)
  sym64.a  SYM64_THRESHOLD=0 llvm-ar rcsD sym64.a x.o   (the 64-bit "/SYM64/" symbol table)
  e.o   llvm-mc: 19-packager-3.bin in an SHT_LLVM_OFFLOADING ".llvm.offloading" section, its third
        binary again in ".other_name" (same type), junk in a PROGBITS ".llvm.offloading.progbits"
  c.obj llvm-mc (x86_64 COFF): the second binary of 19-packager-3.bin in ".llvm.offloading" (at an
        offset that is not 8-aligned), the third in ".llvm.offloading$aux", junk in ".rdata"
  emb.bc  clang-19 -c -emit-llvm of "int x;" with -Xclang -fembed-offload-object=p3.bin twice
          (two globals in .llvm.offloading, as -fopenmp -flto makes them)
  off.a  llvm-ar rcD off.a e.o c.obj p3.bin;  nest.a  llvm-ar rcD nest.a off.a p3.bin
Run: python3 make_reference_data.py > reference_data.h
"""
import os
import shutil
import subprocess
import tempfile

LLVM = '/usr/lib/llvm-19/bin'
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'shared', 'reference',
                      'observed', 'golden')
ELF_S = '''
  .section .llvm.offloading,"e",@llvm_offloading
  .incbin "p3.bin"
  .section .other_name,"e",@llvm_offloading
  .incbin "p3.bin", 0x180
  .section .llvm.offloading.progbits,"a",@progbits
  .ascii "junk that is not parsed"
'''
COFF_S = '''
  .section .llvm.offloading,"dr"
  .incbin "p3.bin", 0xb0, 0xd0
  .section .llvm.offloading$aux,"dr"
  .incbin "p3.bin", 0x180
  .section .rdata,"dr"
  .ascii "x"
'''
ASM = '''
  .text
  .globl foo
  .type foo,@function
foo: ret
  .weak wk
wk: ret
local_fn: ret
  .globl hidden_g
  .hidden hidden_g
hidden_g: ret
  .comm common_c,4,4
  .globl undefined_user
  .set abs_sym, 0x10
  .globl abs_sym
  call undefined_ext
'''
C = '''
int g = 1;
static int s;
extern int u;
int f(void) { return g + s; }
__attribute__((weak)) int w(void) { return u; }
static int local(void) { return 3; }
int use_local(void) { return local(); }
__attribute__((visibility("hidden"))) int hid;
static int counter;
int bump(void) { return ++counter; }
'''


def run(args, cwd):
    subprocess.run(args, cwd=cwd, check=True)


def blob(name, data):
    lines = ['inline constexpr unsigned char %s[] = {' % name]
    for i in range(0, len(data), 20):
        lines.append('    ' + ', '.join('0x%02x' % b for b in data[i:i + 20]) + ',')
    lines.append('};')
    return '\n'.join(lines)


def main():
    d = tempfile.mkdtemp()
    with open(os.path.join(d, 'x.s'), 'w') as f:
        f.write(ASM)
    with open(os.path.join(d, 'y.c'), 'w') as f:
        f.write(C)
    run([LLVM + '/llvm-mc', '-triple=x86_64-pc-linux-gnu', '-filetype=obj', 'x.s', '-o', 'x.o'], d)
    run([LLVM + '/clang', '--target=x86_64-pc-linux-gnu', '-O1', '-c', '-emit-llvm', 'y.c', '-o', 'y.bc'], d)
    run([LLVM + '/llvm-ar', 'rcsD', 'sym.a', 'x.o', 'y.bc', 'x.o'], d)
    subprocess.run([LLVM + '/llvm-ar', 'rcsD', 'sym64.a', 'x.o'], cwd=d, check=True,
                   env=dict(os.environ, SYM64_THRESHOLD='0'))
    shutil.copy(os.path.join(GOLDEN, '19-packager-3.bin'), os.path.join(d, 'p3.bin'))
    for name, text in (('e.s', ELF_S), ('c.s', COFF_S)):
        with open(os.path.join(d, name), 'w') as f:
            f.write(text)
    run([LLVM + '/llvm-mc', '-triple=x86_64-pc-linux-gnu', '-filetype=obj', 'e.s', '-o', 'e.o'], d)
    run([LLVM + '/llvm-mc', '-triple=x86_64-pc-windows-msvc', '-filetype=obj', 'c.s', '-o', 'c.obj'], d)
    run([LLVM + '/llvm-ar', 'rcD', 'off.a', 'e.o', 'c.obj', 'p3.bin'], d)
    with open(os.path.join(d, 'x.c'), 'w') as f:
        f.write('int x;\n')
    run([LLVM + '/clang', '--target=x86_64-pc-linux-gnu', '-c', '-emit-llvm', 'x.c', '-Xclang',
         '-fembed-offload-object=p3.bin', '-Xclang', '-fembed-offload-object=p3.bin', '-o', 'emb.bc'], d)
    run([LLVM + '/llvm-ar', 'rcD', 'nest.a', 'off.a', 'p3.bin'], d)
    os.makedirs(os.path.join(d, 'dir'))
    for n, data in (('i1', b'abc'), ('i2', b'defg'), ('i3', b'')):
        with open(os.path.join(d, n), 'wb') as f:
            f.write(data)
    run([LLVM + '/clang-offload-packager', '-o', 'dir/multi.bin', '--image=file=i1,triple=t,arch=a',
         '--image=file=i2,triple=t,arch=b', '--image=file=i3,triple=t,arch=c'], d)
    run(['cp', 'dir/multi.bin', 'm.bin'], d)
    run([LLVM + '/clang-offload-packager', 'dir/multi.bin', '--image=file=pk.a', '--archive'], d)
    run([LLVM + '/clang-offload-packager', 'm.bin', '--image=file=pk2.a', '--archive'], d)
    out = ['// Generated by make_reference_data.py from LLVM 19 tools: do not edit.', '#pragma once', '',
           'namespace ot::testdata {', '']
    for name, fname in (('kElfObject', 'x.o'), ('kBitcode', 'y.bc'), ('kSymArchive', 'sym.a'),
                        ('kPackagerArchive', 'pk.a'), ('kPackagerArchiveShort', 'pk2.a'),
                        ('kSym64Archive', 'sym64.a'), ('kOffloadElf', 'e.o'), ('kOffloadCoff', 'c.obj'),
                        ('kOffloadArchive', 'off.a'), ('kNestedArchive', 'nest.a'), ('kEmbeddedBitcode', 'emb.bc')):
        with open(os.path.join(d, fname), 'rb') as f:
            out.append(blob(name, f.read()))
        out.append('')
    out.append('}  // namespace ot::testdata')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
