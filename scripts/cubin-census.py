#!/usr/bin/env python3
"""SASS census of an object's kernels where no cuobjdump is (the CPU hosts have none).

usage: scripts/cubin-census.py OBJECT [PATTERN]

Reads the cubins inside OBJECT's .nv_fatbin (uncompressed, as nvcc writes them here) and prints,
per cubin (its -arch from the toolkit note) and kernel whose name contains PATTERN: the number
of SASS instructions (every sm_70+ instruction is 16 bytes, so the .text size / 16, the count
cuobjdump -sass lists), its local-memory instructions (LDL, STL: register spills, where they sit
in the kernel by thousands of instructions), and for each innermost loop that issues wgmma its
instruction count and opcodes. Opcodes are the low 12 bits of an instruction; the names below were matched against
code whose instructions are known (IGMMA only in sm_90a code, as many as the source's wgmma;
R2UR the 8 moves a k-step the old main loop made; LDL and STL as many as ptxas -v's spill bytes
over 4 in gemmBankKernel<4>: 231 and 133 for 924 and 532 bytes). A loop is a backward branch (BRA) with its
target; branch targets decode as 4 * (bits 16..23 | bits 34.. << 8) from the next instruction,
which puts every BRA of the GEMM bank's kernels on an instruction inside its function. On the
GPU host, cuobjdump -sass shows the same loops by name.
"""
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

NAMES = {0x9f1: 'IGMMA', 0x2ca: 'R2UR', 0x291: 'ULEA', 0x290: 'UIADD3', 0x890: 'UIADD3', 0x882: 'UMOV',
         0xc82: 'UMOV', 0x983: 'LDL', 0x387: 'STL', 0x947: 'BRA', 0xc0c: 'ISETP', 0x80c: 'ISETP', 0x20c: 'ISETP', 0x824: 'IMAD',
         0x424: 'IMAD.MOV', 0xe24: 'IMAD.U32', 0x237: 'IMMA', 0x83b: 'LDSM', 0x9c5: 'WARPGROUP/WARPSYNC'}
BRA, IGMMA = 0x947, 0x9f1
LDL, STL = 0x983, 0x387


def cubins(obj):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, 'fatbin')
        subprocess.run(['objcopy', '-O', 'binary', '--only-section=.nv_fatbin', obj, out], check=True)
        data = open(out, 'rb').read()
    for m in re.finditer(b'\x7fELF\x02', data):
        elf = data[m.start():]
        shoff, = struct.unpack_from('<Q', elf, 0x28)
        shentsize, shnum, _ = struct.unpack_from('<HHH', elf, 0x3a)
        yield elf[:shoff + shnum * shentsize]


def sections(elf):
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    headers = [struct.unpack_from('<IIQQQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for name, _, _, _, offset, size in headers:
        yield elf[names + name:elf.index(b'\0', names + name)].decode(), elf[offset:offset + size]


def opcode(word):
    return word[0] & 0xfff


def branch_target(address, word):
    lo, hi = word
    upper = (lo >> 34) | ((hi & 0x3ffff) << 30)
    if upper >> 47:
        upper -= 1 << 48
    return address + 16 + 4 * (((lo >> 16) & 0xff) | (upper << 8))


def wgmma_loops(words):
    """Innermost loops holding an IGMMA: (head address, branch address)."""
    loops = []
    for i, w in enumerate(words):
        if opcode(w) == BRA:
            head = branch_target(16 * i, w)
            if head <= 16 * i and any(opcode(x) == IGMMA for x in words[head // 16:i + 1]):
                loops.append((head, 16 * i))
    return [(a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops)]


def main():
    obj, pattern = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ''
    for elf in cubins(obj):
        parts = dict(sections(elf))
        arch = re.search(rb'-arch (sm_\w+)', parts.get('.note.nv.tkinfo', b''))
        arch = arch.group(1).decode() if arch else '?'
        for name, text in sorted(parts.items()):
            if not name.startswith('.text.') or pattern not in name:
                continue
            words = [struct.unpack_from('<QQ', text, i) for i in range(0, len(text), 16)]
            print('%-7s %s: %d instructions' % (arch, name[6:], len(words)))
            local = [i for i, w in enumerate(words) if opcode(w) in (LDL, STL)]
            if local:
                loads = sum(1 for i in local if opcode(words[i]) == LDL)
                bins = collections.Counter(i // 1000 for i in local)
                print('        local memory: %d LDL, %d STL; by thousand instructions: %s' %
                      (loads, len(local) - loads, ' '.join('%d:%d' % b for b in sorted(bins.items()))))
            for head, branch in wgmma_loops(words):
                body = words[head // 16:branch // 16 + 1]
                counts = collections.Counter(NAMES.get(opcode(w), '%03x' % opcode(w)) for w in body)
                print('        wgmma loop %#x..%#x: %d instructions: %s' %
                      (head, branch, len(body), ', '.join('%s %d' % c for c in counts.most_common())))


if __name__ == '__main__':
    main()
