"""The code of one function read out of a cubin (ELF64 little-endian) with `struct`: what a
`mode="pcsampling"` profile keeps for the viewer to disassemble."""
from __future__ import annotations

import struct

import pytest

from lepton.backends.cupti.pcsampling.cubin import function_code

FOO_CODE = bytes(range(48))  # three 16-byte instructions
BAR_CODE = b"\xee" * 16


def elf64(sections: dict[str, bytes]) -> bytes:
    """A minimal ELF64 little-endian file: a null section, `sections` in order, then .shstrtab."""
    names = b"\x00" + b"".join(name.encode() + b"\x00" for name in [*sections, ".shstrtab"])
    bodies = [*sections.values(), names]
    offsets, at = [], 64
    for body in bodies:
        offsets.append(at)
        at += len(body)
    table_offset = (at + 7) // 8 * 8
    header = b"\x7fELF\x02\x01\x01\x33\x07" + bytes(7) + struct.pack(
        "<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, table_offset, 0x5A, 64, 0, 0, 64, len(bodies) + 1, len(bodies))
    table, name_at = [bytes(64)], 1
    for name, body, offset in zip([*sections, ".shstrtab"], bodies, offsets):
        kind = 3 if name == ".shstrtab" else 1  # SHT_STRTAB, SHT_PROGBITS
        table.append(struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, len(body), 0, 0, 16, 0))
        name_at += len(name) + 1
    data = header + b"".join(bodies)
    return data + bytes(table_offset - len(data)) + b"".join(table)


CUBIN = elf64({".nv.info": b"\x01" * 24, ".text.foo": FOO_CODE, ".text.bar": BAR_CODE})


# -- the cubin reader ------------------------------------------------------------------------------------
def test_a_functions_code_is_its_text_section():
    assert function_code(CUBIN, "foo") == FOO_CODE
    assert function_code(CUBIN, "bar") == BAR_CODE


@pytest.mark.parametrize("function", ["fo", "foo2", "nv.info", ""])
def test_a_function_the_cubin_lacks_has_no_code(function):
    assert function_code(CUBIN, function) is None


@pytest.mark.parametrize("blob", [b"", b"not an elf", CUBIN[:100], b"\x7fELF\x01\x01" + CUBIN[6:]])
def test_a_cut_or_foreign_file_has_no_code(blob):
    assert function_code(blob, "foo") is None
