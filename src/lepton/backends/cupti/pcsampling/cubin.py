"""One function's code in a CUDA cubin: the bytes of its `.text.<function>` section, read with
`struct` from the ELF64 little-endian file CUDA writes. CUPTI's PC offsets count from its first
byte; on sm_70 and later each instruction is 16 bytes."""
from __future__ import annotations

import struct

_ELF64_LITTLE_ENDIAN = b"\x7fELF\x02\x01"  # magic, ELFCLASS64, ELFDATA2LSB
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr: name, type, flags, addr, offset, size, link, ...
_SHT_NOBITS = 8  # a section that takes no bytes in the file
_SHN_XINDEX = 0xFFFF  # the section-name table's index is in section 0's sh_link


class NotACubin(ValueError):
    """The bytes are not an ELF64 little-endian file, or its section table is cut short."""


def function_code(cubin: bytes, function: str) -> bytes | None:
    """The bytes of `function`'s `.text.<function>` section, or None where the cubin has none (or
    is not an ELF64 little-endian file)."""
    wanted = b".text." + function.encode("utf-8") + b"\x00"
    try:
        sections, names_index = _sections(cubin)
        if not sections:
            return None
        names = _contents(cubin, sections[names_index])
        for section in sections:
            start = section[0]
            if names[start:start + len(wanted)] == wanted:
                return _contents(cubin, section)
    except (struct.error, IndexError, NotACubin):
        return None
    return None


def _sections(cubin: bytes) -> tuple[list[tuple], int]:
    """The section headers and the index of the section-name table."""
    if cubin[:6] != _ELF64_LITTLE_ENDIAN:
        raise NotACubin("not an ELF64 little-endian file")
    (table_offset,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    if table_offset == 0:
        return [], 0
    if entry_size != _SECTION.size:
        raise NotACubin(f"section headers of {entry_size} bytes, not {_SECTION.size}")
    first = _SECTION.unpack_from(cubin, table_offset)
    count = count or first[5]  # past 0xff00 sections, ELF keeps the count in section 0's sh_size
    if names_index == _SHN_XINDEX:
        names_index = first[6]
    return [_SECTION.unpack_from(cubin, table_offset + i * entry_size) for i in range(count)], names_index


def _contents(cubin: bytes, section: tuple) -> bytes:
    offset, size = section[4], section[5]
    if section[1] == _SHT_NOBITS:
        return b""
    if offset + size > len(cubin):
        raise NotACubin("a section ends past the end of the file")
    return cubin[offset:offset + size]
