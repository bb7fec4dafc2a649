"""Terminal text: what a note or a file name holds, stripped of control sequences before a terminal shows it.

A note's text, heading, title or tags and a file's name are anyone's writing (a page saved from
the web, a vault shared by a colleague); printed raw, an OSC 52 in them writes the clipboard, an
OSC 0 the window's title, a CSI 2J clears the screen, an SGR 8 hides what follows and a carriage
return writes over a line. So every escape sequence (CSI, OSC, DCS, SOS, PM, APC, and the 8-bit
C1 forms) goes whole, payload and all, and every other control character but the tab and the
newline goes too, with Unicode's bidirectional overrides (they reorder what a line shows). A
`--json` answer is not passed through here: JSON escapes its own.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the same, 8-bit
    # OSC, DCS, SOS, PM, APC: a string up to its terminator (BEL or ST), else to the line's end
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\n]*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]",  # any other escape: two or three characters
    re.MULTILINE,
)
# Unicode's bidirectional embeddings, overrides and isolates reorder what follows them on screen
# ("Trojan Source"): a name `evil\u202egnp.md` shows as `evildm.png`. They go like controls.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")  # C0 but tab and newline, DEL, C1
_CONTROL_OR_LAYOUT = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")


def clean(text: str) -> str:
    """`text` with every escape sequence and control character removed, tabs and newlines kept."""
    if not _CONTROL.search(text):
        return text  # the common case, unchanged
    return _CONTROL.sub("", _SEQUENCE.sub("", text.replace("\r\n", "\n")))


def visible(text: str, keep: str = "\n\t") -> str:
    """`text` with each control character but those in `keep` as `?`, as `ls` shows a name: for
    what names a file (a path, an error naming one), where dropping a sequence would show the name
    of another file (`a\x1b[2J.md` as `a.md`)."""
    return _CONTROL_OR_LAYOUT.sub(lambda m: m.group() if m.group() in keep else "?", text)


def json_safe(text: str) -> str:
    """JSON text with the characters JSON leaves raw, DEL and the C1 controls, written as \\u escapes
    (they can stand only inside strings, so the JSON means the same)."""
    return re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)
