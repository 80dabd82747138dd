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


# Kconfig symbols that say "this architecture only" -> the arch/ directory.
ARCH_SYMBOL = re.compile(r"^(PPC\w*|S390|ARM64|ARM|RISCV|LOONGARCH)$")
ARCH_OF = {"S390": "s390", "ARM64": "arm64", "ARM": "arm", "RISCV": "riscv",
           "LOONGARCH": "loongarch"}
# How far 'depends on' is followed: the option's own, and those of the
# symbols it names (a driver's menu symbol); further, every driver reaches
# some architecture's symbol.
DEPTH = 2
CONFIG_ENTRY = re.compile(r"^\s*(?:menu)?config\s+(\w+)")
DEPENDS = re.compile(r"^\s*depends\s+on\s+(.*)")


class Kconfig:
    """The 'depends on' of every symbol of a tree's Kconfig files."""

    def __init__(self, src: Path) -> None:
        self.depends: dict[str, list[str]] = {}
        for f in src.rglob("Kconfig*"):
            if not f.is_file():
                continue
            symbol = None
            for line in f.read_text(errors="replace").splitlines():
                m = CONFIG_ENTRY.match(line)
                if m:
                    symbol = m.group(1)
                    continue
                m = DEPENDS.match(line)
                if m and symbol:
                    self.depends.setdefault(symbol, []).append(m.group(1))

    def arch_only(self, options: list[str]) -> str | None:
        """The one other architecture that options need (their 'depends on',
        followed through the symbols they name), or None: for x86, for an
        alternative (X86, COMPILE_TEST), or when none is named."""
        seen: set[str] = set()
        level = list(options)
        for _ in range(DEPTH):
            nxt = []
            for sym in level:
                if sym in seen:
                    continue
                seen.add(sym)
                for expr in self.depends.get(sym, []):
                    # "!S390" says where it does not build: no dependency
                    nxt += re.findall(r"(?<![!\w])[A-Z][A-Z0-9_]*", expr)
            level = nxt
        seen.update(level)
        if seen & {"X86", "X86_64", "X86_32", "COMPILE_TEST"}:
            return None
        arches = {("powerpc" if s.startswith("PPC") else ARCH_OF[s])
                  for s in seen if ARCH_SYMBOL.match(s)}
        return arches.pop() if len(arches) == 1 else None


def target_of(path: str, src: Path | None = None,
              kconfig: Kconfig | None = None) -> Target:
    """The target that preprocesses path (a path in the tree): the one of
    its arch/ directory; for a file elsewhere that includes an <asm/...>
    header x86 does not have, given the tree, the one architecture its
    options depend on (their Kconfig 'depends on')."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[0] == "arch" and parts[1] != NATIVE.name:
        return TARGETS.get(parts[1], Target(parts[1], parts[1], "", "", ""))
    if src is not None and kconfig is not None and parts[0] != "arch" \
            and missing_asm_headers(src, path):
        arch = kconfig.arch_only(options_for(src, path))
        if arch in TARGETS:
            return TARGETS[arch]
    return NATIVE


ASM_INCLUDE = re.compile(r'^\s*#\s*include\s*<asm/([\w/.-]+)>', re.M)
NATIVE_ASM = ("arch/x86/include/asm", "arch/x86/include/uapi/asm",
              "include/asm-generic", "include/uapi/asm-generic")


def missing_asm_headers(src: Path, path: str) -> list[str]:
    """The <asm/...> headers path includes that x86 has no version of
    (neither its own nor asm-generic's): x86 cannot preprocess it."""
    f = src / path
    if not f.is_file():
        return []
    return [h for h in ASM_INCLUDE.findall(f.read_text(errors="replace"))
            if not any((src / d / h).is_file() for d in NATIVE_ASM)]


def unknown_reason(t: Target) -> str | None:
    """Why verify cannot build for t at all (no entry in TARGETS), or None."""
    if TARGETS.get(t.name) is t:
        return None
    return f"verify has no cross target for arch/{t.name}"


def group(files: list[str], src: Path | None = None
          ) -> dict[Target, list[str]]:
    """files by target, in the order of TARGETS (then unknown ones); with
    the tree, a file outside arch/ that only another architecture builds
    goes to that one."""
    kconfig = Kconfig(src) if src is not None else None
    groups: dict[Target, list[str]] = {}
    for f in files:
        groups.setdefault(target_of(f, src, kconfig), []).append(f)
    order = list(TARGETS.values())
    return dict(sorted(groups.items(), key=lambda kv: (
        order.index(kv[0]) if kv[0] in order else len(order), kv[0].name)))


def packages(files: list[str], src: Path | None = None) -> list[str]:
    """The Debian packages of the compilers files need that are missing."""
    return sorted({t.package for t in group(files, src)
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
