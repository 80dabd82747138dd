"""Where verify preprocesses each file: the architecture and configuration.

Every file is preprocessed for x86_64 with allmodconfig (the native
compiler, every driver an x86 kernel can have), except the files of
another architecture's arch/ARCH/ directory: those are preprocessed for
that architecture, with Debian's cross compiler and a small configuration
(the architecture's defconfig plus the options that build the file's
object, read from its Makefile) rather than allmodconfig.  An architecture
without a target here, or whose compiler Debian 12 does not ship, is named
as the reason its files are not preprocessed.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    """One architecture verify builds for."""
    name: str          # the directory under arch/
    arch: str          # make ARCH=
    cross: str         # make CROSS_COMPILE= ("" for the native compiler)
    package: str       # Debian 12 package of the compiler ("": none)
    config: str        # the configuration target (make CONFIG)

    @property
    def compiler(self) -> str:
        return f"{self.cross}gcc"

    @property
    def build_name(self) -> str:
        """The build directory's name under WORKDIR/verify."""
        return "build" if self is NATIVE else f"build-{self.name}"

    def available(self) -> bool:
        return shutil.which(self.compiler) is not None

    def unavailable_reason(self) -> str:
        if not self.package:
            return (f"Debian 12 has no cross compiler for {self.name} "
                    f"({self.compiler})")
        return f"{self.compiler} is not installed ({self.package})"

    def describe(self) -> str:
        return f"{self.arch} {self.config}"


NATIVE = Target("x86", "x86_64", "", "gcc", "allmodconfig")
TARGETS: dict[str, Target] = {t.name: t for t in (
    NATIVE,
    Target("arm", "arm", "arm-linux-gnueabihf-", "gcc-arm-linux-gnueabihf",
           "multi_v7_defconfig"),
    Target("arm64", "arm64", "aarch64-linux-gnu-", "gcc-aarch64-linux-gnu",
           "defconfig"),
    Target("powerpc", "powerpc", "powerpc64le-linux-gnu-",
           "gcc-powerpc64le-linux-gnu", "ppc64le_defconfig"),
    Target("riscv", "riscv", "riscv64-linux-gnu-", "gcc-riscv64-linux-gnu",
           "defconfig"),
    Target("s390", "s390", "s390x-linux-gnu-", "gcc-s390x-linux-gnu",
           "defconfig"),
    Target("loongarch", "loongarch", "loongarch64-linux-gnu-", "",
           "defconfig"),
)}


def target_of(path: str) -> Target:
    """The target that preprocesses path (a path in the tree)."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[0] == "arch" and parts[1] != NATIVE.name:
        return TARGETS.get(parts[1], Target(parts[1], parts[1], "", "", ""))
    return NATIVE


def unknown_reason(t: Target) -> str | None:
    """Why verify cannot build for t at all (no entry in TARGETS), or None."""
    if TARGETS.get(t.name) is t:
        return None
    return f"verify has no cross target for arch/{t.name}"


def group(files: list[str]) -> dict[Target, list[str]]:
    """files by target, in the order of TARGETS (then unknown ones)."""
    groups: dict[Target, list[str]] = {}
    for f in files:
        groups.setdefault(target_of(f), []).append(f)
    order = list(TARGETS.values())
    return dict(sorted(groups.items(), key=lambda kv: (
        order.index(kv[0]) if kv[0] in order else len(order), kv[0].name)))


def packages(files: list[str]) -> list[str]:
    """The Debian packages of the compilers files need that are missing."""
    return sorted({t.package for t in group(files)
                   if t.package and not t.available()})


ASSIGNMENT = re.compile(
    r"^[ \t]*([\w.-]+?)-(\$\((CONFIG_\w+)\)|y|m|objs)[ \t]*[:+]?=(.*)$",
    re.M)


def _assignments(makefile: Path) -> list[tuple[str, str | None, list[str]]]:
    """(left name, CONFIG_ option or None, words) of each obj-/composite
    assignment of a Makefile, continuation lines joined."""
    text = makefile.read_text(errors="replace").replace("\\\n", " ")
    return [(m.group(1), m.group(3), m.group(4).split())
            for m in ASSIGNMENT.finditer(text)]


def options_for(src: Path, path: str) -> list[str]:
    """The CONFIG_ options (without the prefix) that build path's object,
    from the Makefile or Kbuild file of its directory: obj-$(CONFIG_X) +=
    name.o, or name.o in a composite object that such a line builds.  A
    file that no line names (one #included by another) gives none."""
    folder = src / Path(path).parent
    rules = []
    for name in ("Makefile", "Kbuild"):
        if (folder / name).is_file():
            rules += _assignments(folder / name)
    found: list[str] = []
    wanted, seen = [Path(path).stem + ".o"], set()
    while wanted:
        obj = wanted.pop()
        if obj in seen:
            continue
        seen.add(obj)
        for left, option, words in rules:
            if obj not in words:
                continue
            if option:
                found.append(option.removeprefix("CONFIG_"))
            if left != "obj":
                wanted.append(left + ".o")
    return sorted(set(found))
