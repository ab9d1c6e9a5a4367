#!/usr/bin/env python3
"""SASS census of an object's kernels where no cuobjdump is (the CPU hosts have none).

usage: scripts/cubin-census.py OBJECT [PATTERN] [--lines N]
       (OBJECT: nvcc's object, or a cubin from ptxas -o / nvcc -cubin)

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

--lines N (code built with -lineinfo, as the project's CUDA code is): each kernel's N source lines
with the most SASS instructions, and its local-memory instructions by source line, from the
cubin's DWARF line table (.debug_line: SASS address -> file and line; the innermost line, not
where it was inlined from). Static counts: what a line compiles to, not how often it runs.
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
    data = open(obj, 'rb').read(0x14)
    if data[:4] == b'\x7fELF' and struct.unpack_from('<H', data, 0x12)[0] == 190:  # EM_CUDA: ptxas -o's cubin
        yield open(obj, 'rb').read()
        return
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


def uleb(b, p):
    value = shift = 0
    while True:
        byte = b[p]
        p += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if byte < 0x80:
            return value, p


def sleb(b, p):
    value, end = uleb(b, p)
    bits = 7 * (end - p)
    return (value - (1 << bits) if value >> (bits - 1) & 1 else value), end


def line_rows(elf):
    """{text section index: [(address, file, line)]} from .debug_line (DWARF 2-4 line programs);
    each sequence's DW_LNE_set_address is relocated (.rela.debug_line) to its kernel's section."""
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    headers = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    index = {elf[names + h[0]:elf.index(b'\0', names + h[0])].decode(): i for i, h in enumerate(headers)}
    body = lambda i: elf[headers[i][4]:headers[i][4] + headers[i][5]]
    if '.debug_line' not in index or '.symtab' not in index:
        return {}
    symtab = body(index['.symtab'])
    symbol_section = [struct.unpack_from('<IBBHQQ', symtab, k)[3] for k in range(0, len(symtab), 24)]
    relocated = {}
    if '.rela.debug_line' in index:
        rela = body(index['.rela.debug_line'])
        for k in range(0, len(rela), 24):
            offset, info, addend = struct.unpack_from('<QQq', rela, k)
            relocated[offset] = (symbol_section[info >> 32], addend)
    dl = body(index['.debug_line'])
    rows = collections.defaultdict(list)
    p = 0
    while p < len(dl):
        length, = struct.unpack_from('<I', dl, p)
        end = p + 4 + length
        version, = struct.unpack_from('<H', dl, p + 4)
        header_length, = struct.unpack_from('<I', dl, p + 6)
        program = p + 10 + header_length
        q = p + 10
        min_instruction = dl[q]
        q += 2 if version >= 4 else 1
        line_base, = struct.unpack_from('<b', dl, q + 1)
        line_range, opcode_base = dl[q + 2], dl[q + 3]
        standard_lengths = list(dl[q + 4:q + 3 + opcode_base])
        q += 3 + opcode_base
        while dl[q]:  # include directories
            q = dl.index(b'\0', q) + 1
        q += 1
        files = []
        while dl[q]:
            e = dl.index(b'\0', q)
            files.append(os.path.basename(dl[q:e].decode()))
            q = e + 1
            for _ in range(3):
                _, q = uleb(dl, q)
        p = program
        address, file, line, section = 0, 1, 1, None
        row = lambda: rows[section].append((address, files[file - 1] if 0 < file <= len(files) else '?', line))
        while p < end:
            op = dl[p]
            p += 1
            if op >= opcode_base:
                adjusted = op - opcode_base
                address += adjusted // line_range * min_instruction
                line += line_base + adjusted % line_range
                row()
            elif op == 0:  # extended
                size, p = uleb(dl, p)
                sub, operand = dl[p], p + 1
                p += size
                if sub == 1:
                    address, file, line = 0, 1, 1
                elif sub == 2:
                    section, addend = relocated.get(operand, (None, 0))
                    address = struct.unpack_from('<Q', dl, operand)[0] + addend
            elif op == 1:
                row()
            elif op == 2:
                step, p = uleb(dl, p)
                address += step * min_instruction
            elif op == 3:
                step, p = sleb(dl, p)
                line += step
            elif op == 4:
                file, p = uleb(dl, p)
            elif op == 8:
                address += (255 - opcode_base) // line_range * min_instruction
            elif op == 9:
                address += struct.unpack_from('<H', dl, p)[0]
                p += 2
            elif op in (5, 12):
                _, p = uleb(dl, p)
            elif op not in (6, 7, 10, 11):
                for _ in range(standard_lengths[op - 1]):
                    _, p = uleb(dl, p)
        p = end
    return {k: sorted(v) for k, v in rows.items()}


def by_line(rows, words):
    """(instructions, local-memory instructions) per 'file:line' of one kernel."""
    count, local = collections.Counter(), collections.Counter()
    for k, (address, file, line) in enumerate(rows):
        stop = rows[k + 1][0] if k + 1 < len(rows) else 16 * len(words)
        for i in range(address // 16, min(stop, 16 * len(words)) // 16):
            key = f'{file}:{line}'
            count[key] += 1
            local[key] += opcode(words[i]) in (LDL, STL)
    return count, local


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
    args = sys.argv[1:]
    lines = 0
    if '--lines' in args:
        at = args.index('--lines')
        lines = int(args[at + 1])
        del args[at:at + 2]
    if not args:
        sys.exit(__doc__)
    obj, pattern = args[0], args[1] if len(args) > 1 else ''
    for elf in cubins(obj):
        parts = dict(sections(elf))
        section_names = [name for name, _ in sections(elf)]
        rows = line_rows(elf) if lines else {}
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
            if lines:
                count, local = by_line(rows.get(section_names.index(name), []), words)
                print('        source lines by SASS instructions: ' +
                      ', '.join('%s %d' % c for c in count.most_common(lines)))
                if +local:
                    print('        local memory by source line: ' +
                          ', '.join('%s %d' % c for c in (+local).most_common(lines)))


if __name__ == '__main__':
    main()
