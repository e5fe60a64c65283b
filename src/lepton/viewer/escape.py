"""Text from a profile made safe for a terminal: control characters shown as escapes.

Kernel and scope names come from whoever wrote the profile. An ESC or C1 control character sent
raw lets a name recolour the terminal, move the cursor, set the window title ("\x1b]0;...\x07") or
worse; a newline breaks the one-line-per-node tree. They are shown as Python writes them in a
string literal (`\x1b`, `\n`), so each node stays one visible line.
"""
from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0, DEL and C1 controls; the Unicode line and paragraph separators (a line break to many
# terminals and editors); the bidirectional overrides and isolates, which reorder what is shown
# (CVE-2021-42574, "Trojan Source").
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_UNICODE = [0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
ESCAPES = {code: _NAMED.get(chr(code), f"\\x{code:02x}") for code in _CONTROLS}
ESCAPES.update({code: f"\\u{code:04x}" for code in _UNICODE})


def printable(text: str) -> str:
    """`text` with every control character (and line separator, bidi override) as a backslash
    escape; other text, backslashes included, as it is."""
    if text.isprintable():  # no escape needed: Python's "printable" excludes all of the above
        return text
    return text.translate(ESCAPES)
