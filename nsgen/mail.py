"""The series as mail: who gets each patch, and one thread.

Addresses come from scripts/get_maintainer.pl's answers per file
(nsgen/review.py): a patch goes To the maintainers of the files it touches,
Cc their reviewers and lists; the cover letter to everyone its hand-written
patches go to.  The treewide conversion is addressed as treewide changes
are sent: To the module loader's maintainers, Cc the module, kbuild and
kernel lists (those of the loader and of modpost), with the per-subsystem
breakdown in who-to-ask.txt beside the series (its '---' says so)
instead of hundreds of Cc lines.

Message-IDs are derived from each file's content, every patch is
In-Reply-To the cover letter: the same series gives the same headers.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from .review import ROLE, by_section

LOADER = "kernel/module/main.c"
MODPOST = "scripts/mod/modpost.c"
DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)


@dataclass
class Addresses:
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)

    def add(self, other: "Addresses") -> None:
        for who in other.to:
            if who not in self.to:
                self.to.append(who)
        for who in other.cc:
            if who not in self.cc and who not in self.to:
                self.cc.append(who)
        self.cc = [who for who in self.cc if who not in self.to]


def entries(lines: list[str]) -> list[tuple[str, str]]:
    """(address, role) of get_maintainer.pl's lines for one file."""
    found = []
    for line in lines:
        m = ROLE.match(line.strip())
        if m:
            found.append((m.group("who"), m.group("role")))
    return found


def for_files(files: list[str], per_file: dict[str, list[str]]
              ) -> Addresses:
    """To the maintainers, Cc the reviewers, supporters and lists."""
    a = Addresses()
    for f in files:
        for who, role in entries(per_file.get(f, [])):
            if role.startswith("maintainer"):
                a.add(Addresses(to=[who]))
            else:
                a.add(Addresses(cc=[who]))
    return a


def treewide(per_file: dict[str, list[str]]) -> Addresses:
    """To the module loader's maintainers; Cc the loader's and modpost's
    lists (the module, kbuild and kernel lists)."""
    a = Addresses(to=[who for who, role in entries(per_file.get(LOADER, []))
                      if role.startswith("maintainer")])
    for f in (LOADER, MODPOST):
        a.add(Addresses(cc=[who for who, role in
                            entries(per_file.get(f, []))
                            if "list" in role]))
    return a


def message_id(text: str, sender_email: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape"))
    domain = sender_email.rpartition("@")[2] or "localhost"
    return f"<ns-series-{digest.hexdigest()[:24]}@{domain}>"


def _fold(name: str, addrs: list[str]) -> list[str]:
    if not addrs:
        return []
    lines = [f"{name}: {addrs[0]}"]
    for a in addrs[1:]:
        lines[-1] += ","
        lines.append(f" {a}")
    return lines


def with_headers(text: str, headers: list[str]) -> str:
    """text with headers added after its Date: header, and git's own
    headers (From:, Subject:) each on one line: b4 0.12 cannot copy a
    folded one ("Header values may not contain linefeed")."""
    head, sep, rest = text.partition("\n\n")
    head = re.sub(r"\n[ \t]+", " ", head)
    lines = head.split("\n")
    at = next((i + 1 for i, line in enumerate(lines)
               if line.startswith("Date: ")), len(lines))
    lines[at:at] = headers
    return "\n".join(lines) + sep + rest


def with_notes(text: str, notes: str) -> str:
    """text with notes after the first '---' line (not part of the commit)."""
    return re.sub(r"^---\n", lambda m: f"---\n{notes}\n", text, count=1,
                  flags=re.M)


def address_and_thread(files: list[Path], treewide_index: set[int],
                       per_file: dict[str, list[str]] | None,
                       wide: list[str] | None, sender_email: str,
                       cc_files: dict[int, list[str]] | None = None,
                       reply_to: str = "") -> None:
    """Rewrite the series in place: To/Cc, Message-ID, In-Reply-To.

    files[0] is the cover letter; treewide_index holds the positions of
    the treewide patches in files; per_file, get_maintainer.pl's answers
    for the other patches' files; wide, its answer for the treewide
    patches' files all at once; cc_files, per position, files outside a
    patch whose maintainers and lists it is Cc'd to (the Makefiles of the
    modules an export is restricted to); reply_to, the Message-ID of the
    last version's cover letter, which this one answers."""
    texts = [f.read_text(encoding="utf-8", errors="surrogateescape")
             for f in files]
    addrs: list[Addresses] = []
    cover = Addresses()
    for i, text in enumerate(texts):
        touched = DIFF_FILE.findall(text)
        if i == 0:
            addrs.append(cover)
            continue
        if per_file is None:
            addrs.append(Addresses())
        elif i in treewide_index:
            addrs.append(treewide(per_file))
            texts[i] = with_notes(text, (
                f"Who maintains the {len(touched)} files of this patch, by "
                "MAINTAINERS section:\nwho-to-ask.txt beside the series "
                f"({len(by_section(wide or []))} sections).\n"))
        else:
            a = for_files(touched, per_file)
            extra = for_files((cc_files or {}).get(i, []), per_file)
            a.add(Addresses(cc=extra.to + extra.cc))
            addrs.append(a)
            cover.add(a)
    ids = [message_id(t, sender_email) for t in texts]
    for i, f in enumerate(files):
        headers = _fold("To", addrs[i].to) + _fold("Cc", addrs[i].cc)
        headers.append(f"Message-ID: {ids[i]}")
        earlier = [f"<{reply_to}>"] if reply_to else []
        if i:
            headers += [f"In-Reply-To: {ids[0]}",
                        f"References: {' '.join(earlier + [ids[0]])}"]
        elif earlier:
            headers += [f"In-Reply-To: {earlier[0]}",
                        f"References: {earlier[0]}"]
        f.write_text(with_headers(texts[i], headers), encoding="utf-8",
                     errors="surrogateescape")
