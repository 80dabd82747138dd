"""What each step of the series does on this tree, decided before it runs.

patches/steps.conf says, for each hand-written step, what the tree shows
when upstream already did the step, and which variant of the patch fits
which tree, each by a pattern in one of the tree's files (never a version
number).  A hand-written step is then

* applied as written, when its own condition holds;
* applied in a variant (patches/VARIANT/PATCH), when that one's holds;
* already in this tree (skipped, and said so);
* refused, with a one-line reason, when nothing fits or the patch chosen
  does not apply (the generator stops there).

Generated steps decide for themselves (nsgen/convert.py): they change what
is left, or find nothing left ("already in this tree").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from .drift import Fit, describe_failed, fit
from .run import ToolError
from .series import apply_check
from .tree import Repo


class Kind(Enum):
    APPLIES = "applies"
    DRIFT = "applies with drift"
    VARIANT = "applies in a variant"
    ALREADY = "already in this tree"
    REFUSED = "refused"


@dataclass(frozen=True)
class Probe:
    """FILE of the tree matches REGEX (multi-line mode); why that matters."""
    path: str
    regex: str
    why: str

    def holds(self, root: Path) -> bool:
        f = root / self.path
        if not f.is_file():
            return False
        text = f.read_text(encoding="utf-8", errors="surrogateescape")
        return re.search(self.regex, text, re.M) is not None

    def describe(self) -> str:
        return f"{self.path} ~ /{self.regex}/"


@dataclass
class StepRule:
    """What patches/steps.conf says about one step."""
    step: str
    already: list[Probe] = field(default_factory=list)   # any one
    needs: list[Probe] = field(default_factory=list)     # all
    # (variant directory, its probes), in the order of the file
    variants: list[tuple[str, list[Probe]]] = field(default_factory=list)
    offenders: bool = False     # the patch adds names to the offender table


@dataclass(frozen=True)
class Decision:
    step: str                 # line of patches/series
    kind: Kind
    reason: str               # one line
    variant: str = ""         # variant directory, for Kind.VARIANT
    patch: Path | None = None  # the file to apply
    fit: Fit | None = None    # where its hunks land on this tree
    # the probes that chose the patch ('FILE REGEX -- WHY'), which a
    # refreshed variant keeps
    probes: tuple[str, ...] = ()
    proof: str = ""           # how a fuzzed application was proven

    @property
    def drift(self) -> str:
        return self.fit.drift() if self.fit is not None else ""

    def line(self) -> str:
        what = self.kind.value
        if self.variant and self.kind is Kind.VARIANT:
            what = f"applies in the variant {self.variant}"
        if self.drift and self.kind is not Kind.REFUSED:
            what += " (" if self.kind is Kind.DRIFT else ", with drift ("
            what += self.drift + (f"; {self.proof})" if self.proof else ")")
        return f"{what}: {self.reason}" if self.reason else what


LINE_RE = re.compile(r"(already|needs|variant|offenders)\s*:\s*(.*)")


def _probe(text: str, where: str) -> tuple[str, Probe]:
    """'[VARIANT] FILE REGEX -- WHY' (VARIANT only for variant lines)."""
    body, sep, why = text.partition(" -- ")
    if not sep or not why.strip():
        raise ToolError(f"{where}: expected '... FILE REGEX -- WHY'")
    parts = body.split(None, 1)
    if len(parts) != 2:
        raise ToolError(f"{where}: expected 'FILE REGEX -- WHY'")
    path, regex = parts[0], parts[1].strip()
    try:
        re.compile(regex)
    except re.error as e:
        raise ToolError(f"{where}: bad regex {regex!r}: {e}") from None
    return path, Probe(path, regex, why.strip())


def read_rules(path: Path) -> dict[str, StepRule]:
    """Parse patches/steps.conf: '[STEP]' headers, then rule lines."""
    rules: dict[str, StepRule] = {}
    cur: StepRule | None = None
    if not path.is_file():
        return rules
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        where = f"{path.name}:{n}"
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[(.+)\]", line)
        if m:
            cur = rules.setdefault(m.group(1).strip(), StepRule(m.group(1).strip()))
            continue
        m = LINE_RE.fullmatch(line)
        if not m or cur is None:
            raise ToolError(f"{where}: expected '[STEP]' or 'already:', "
                            "'needs:', 'variant:', 'offenders:' under one")
        key, rest = m.groups()
        if key == "offenders":
            cur.offenders = rest.strip() == "yes"
        elif key == "variant":
            name, _, probe_text = rest.strip().partition(" ")
            if not re.fullmatch(r"[\w.+-]+", name):
                raise ToolError(f"{where}: bad variant name {name!r}")
            _, probe = _probe(probe_text, where)
            for v, probes in cur.variants:
                if v == name:
                    probes.append(probe)
                    break
            else:
                cur.variants.append((name, [probe]))
        else:
            _, probe = _probe(rest, where)
            (cur.already if key == "already" else cur.needs).append(probe)
    return rules


def check_rules(rules: dict[str, StepRule], patch_dir: Path,
                patches: list[str]) -> None:
    """Every rule names a step of the series and every variant file exists."""
    for step, rule in rules.items():
        if step not in patches:
            raise ToolError(f"steps.conf: [{step}] is not a hand-written "
                            "patch of patches/series")
        for v, _ in rule.variants:
            if not (patch_dir / v / step).is_file():
                raise ToolError(f"steps.conf: [{step}]: variant {v}: "
                                f"{patch_dir.name}/{v}/{step} does not exist")


def decide(repo: Repo, patch_dir: Path, step: str,
           rule: StepRule | None) -> Decision:
    """Decide a hand-written step on the work tree as it stands now."""
    root = repo.work_tree
    assert root is not None
    rule = rule or StepRule(step)
    for p in rule.already:
        if p.holds(root):
            return Decision(step, Kind.ALREADY, p.why)
    chosen: tuple[str, list[Probe]] | None = None
    for v, probes in rule.variants:
        if all(p.holds(root) for p in probes):
            chosen = (v, probes)
            break
    if chosen is None:
        if not all(p.holds(root) for p in rule.needs):
            looked = [p.describe() for p in rule.needs] + \
                [p.describe() for _, ps in rule.variants for p in ps]
            return Decision(step, Kind.REFUSED,
                            "no variant fits this tree (looked for "
                            + "; ".join(looked) + ")")
        kind, variant, patch = Kind.APPLIES, "", patch_dir / step
        why = "; ".join(p.why for p in rule.needs)
        used = rule.needs
    else:
        kind, variant, patch = Kind.VARIANT, chosen[0], \
            patch_dir / chosen[0] / step
        why = "; ".join(p.why for p in chosen[1])
        used = chosen[1]
    probes = tuple(f"{p.path} {p.regex} -- {p.why}" for p in used)
    exact = apply_check(repo, patch) is None
    f = fit(root, patch, exact)
    if f.failed or f.trouble:
        name = f"{variant}/{step}" if variant else step
        return Decision(step, Kind.REFUSED,
                        f"{name} fits this tree but does not apply: "
                        f"{describe_failed(f)}", variant, patch, f, probes)
    if f.drift() and kind is Kind.APPLIES:
        kind = Kind.DRIFT
    if rule.offenders:
        built = modules_built(repo, added_strings(patch))
        if built:
            return Decision(step, Kind.REFUSED,
                            f"{built[0]} is a module this tree builds (a "
                            "Kbuild file has it): an in-tree module cannot "
                            "be a licence offender; drop it from the patch",
                            variant, patch)
    return Decision(step, kind, why, variant, patch, f, probes)


def added_strings(patch: Path) -> list[str]:
    """The string literals a patch adds, one per added line ('+\t"name",')."""
    names = []
    for line in patch.read_text(errors="replace").splitlines():
        m = re.fullmatch(r'\+\s*"([\w-]+)",?\s*', line)
        if m:
            names.append(m.group(1))
    return names


def _module_regex(name: str) -> str:
    """name as kbuild writes it in an obj- line ('name*': any name that
    starts so); '-' and '_' are one."""
    stem = re.escape(name.rstrip("*")).replace(r"\-", "-")
    stem = re.sub(r"[-_]", "[-_]", stem)
    return stem + (r"[\w-]*" if name.endswith("*") else "")


def modules_built(repo: Repo, names: list[str]) -> list[str]:
    """Those of names that some Makefile/Kbuild of the tree builds as a
    module (for 'name*', one whose name starts so), in one git grep."""
    if not names:
        return []
    pattern = "|".join(f"({_module_regex(n)})" for n in names)
    out = repo.git("grep", "-h", "-E", rf"obj-.*[[:space:]=/]({pattern})\.o\b",
                   "--", "*Makefile", "*Kbuild", check=False)
    return [n for n in names if re.search(
        rf"obj-.*[\s=/]{_module_regex(n)}\.o\b", out)]


def module_makefiles(repo: Repo, names: list[str]) -> list[str]:
    """The Makefiles/Kbuild files that build the modules of names."""
    if not names:
        return []
    pattern = "|".join(f"({_module_regex(n)})" for n in names)
    return repo.git("grep", "-l", "-E",
                    rf"obj-.*[[:space:]=/]({pattern})\.o\b",
                    "--", "*Makefile", "*Kbuild", check=False).split()


def module_built(repo: Repo, name: str) -> bool:
    """Does some Makefile/Kbuild of the tree build a module called name?"""
    return bool(modules_built(repo, [name]))


def generated_decision(name: str, changed: bool, notes: list[str]) -> Decision:
    """The decision a generated step made by running: it changed what was
    left, or found the tree already had all of it."""
    step = f"generate: {name}"
    if changed:
        return Decision(step, Kind.APPLIES, "; ".join(notes))
    return Decision(step, Kind.ALREADY, "; ".join(notes) or "nothing left to change")
