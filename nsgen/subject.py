"""A generated commit's subject in the style of the subsystem it touches.

The prefix and the capitalisation come from the tree: MAINTAINERS names
each file's sections, and a section maintained in the tip tree (its T:
line names tip.git) follows Documentation/process/maintainer-tip.rst:
'subsys/component:' and a description that starts with an uppercase
letter ('x86/fpu: Export ...').  Other subsystems get the directory's
name and a lowercase description, as the module loader's log has it
('module: add ...').
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from .review import TYPE_LINE, maintainers_sections

TIP = "tip/tip.git"
GLOB = re.compile(r"[*?[]")


def _matches(pattern: str, path: str) -> bool:
    """Does a MAINTAINERS F:/X: pattern cover path (get_maintainer.pl's
    reading: a trailing '/' means the whole directory, shell globs else,
    and a pattern without one covers a directory of that name)?"""
    # A path that does not start with the pattern's literal start matches
    # neither way: most of MAINTAINERS' ~8,000 patterns end here, before
    # fnmatch compiles them.
    if not path.startswith(GLOB.split(pattern, 1)[0]):
        return False
    if pattern.endswith("/"):
        return path.startswith(pattern) or fnmatch.fnmatchcase(
            path, pattern + "*")
    return (fnmatch.fnmatchcase(path, pattern)
            or path.startswith(pattern.rstrip("/") + "/"))


def sections_of(maintainers: str, path: str) -> list[dict[str, list[str]]]:
    """The sections of MAINTAINERS text that cover path, their type lines
    by letter."""
    found = []
    for block in maintainers_sections(maintainers):
        types: dict[str, list[str]] = {}
        for line in block:
            m = TYPE_LINE.match(line)
            if m:
                types.setdefault(m.group(1), []).append(m.group(2).strip())
        if (any(_matches(p, path) for p in types.get("F", []))
                and not any(_matches(p, path) for p in types.get("X", []))):
            found.append(types)
    return found


def component(path: str) -> str:
    """'subsys/component' of a path: arch/x86/kernel/fpu/core.c ->
    x86/fpu, arch/x86/mm/fault.c -> x86/mm; elsewhere the file's
    directory (kernel/module/main.c -> module)."""
    parts = path.split("/")[:-1]
    if len(parts) >= 2 and parts[0] == "arch":
        rest = [p for p in parts[2:] if p != "kernel"]
        return "/".join([parts[1], *rest[:1]])
    return parts[-1] if parts else Path(path).stem


def subject(root: Path, path: str, description: str) -> str:
    """'prefix: description' for a commit that touches path, in the style
    of path's subsystem (see the module's doc)."""
    text = (root / "MAINTAINERS").read_text(encoding="utf-8",
                                            errors="replace") \
        if (root / "MAINTAINERS").is_file() else ""
    tip = any(TIP in t for s in sections_of(text, path)
              for t in s.get("T", []))
    first = description[:1].upper() if tip else description[:1].lower()
    return f"{component(path)}: {first}{description[1:]}"
