"""Compiler wrappers for the project's kernel builds (boot test, make
verify, make bisect-check): ccache, distcc, icecc, or a combination such as
"ccache distcc", given as CC_WRAPPER to make and --cc-wrapper to the
scripts.  "auto" means ccache when it is installed, else none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .run import ToolError

AUTO = "auto"
PACKAGES = {"ccache": "ccache", "distcc": "distcc", "icecc": "icecc",
            "pump": "distcc-pump"}


def resolve_wrapper(choice: str) -> tuple[str, str]:
    """(wrapper, note): the wrapper words to put before gcc, and what the
    user should be told about the choice ("" when nothing to say)."""
    if choice == AUTO:
        if shutil.which("ccache"):
            return "ccache", ""
        return "", ("ccache is not installed: building without a "
                    "compiler wrapper")
    for word in choice.split():
        if not shutil.which(word):
            package = PACKAGES.get(word, word)
            raise ToolError(f"compiler wrapper {word}: not found; install "
                            f"it (apt-get install {package}) or set "
                            "CC_WRAPPER= for none")
    return " ".join(choice.split()), ""


def cc(wrapper: str, compiler: str = "gcc") -> str:
    """The CC= value for kbuild."""
    return f"{wrapper} {compiler}".strip()


def wrapper_env(wrapper: str, ksrc: Path, build_dir: Path) -> dict[str, str]:
    """Environment for the wrapper: ccache takes paths relative to the
    common parent of source and build directory, so that trees at the same
    place relative to their build directories share the cache, and runs in
    depend mode (unless the user's environment says otherwise)."""
    env: dict[str, str] = {}
    if "ccache" not in wrapper.split():
        return env
    if "CCACHE_BASEDIR" not in os.environ:
        base = os.path.commonpath([ksrc.resolve(), build_dir.resolve()])
        if base != "/":
            env["CCACHE_BASEDIR"] = base
    # Depend mode: a miss is hashed from the compiler's own -MD output
    # instead of a second preprocessor run.  Measured here on 30 objects of
    # kernel/ with an empty cache: gcc 22-26 s, ccache 34-38 s, ccache in
    # depend mode 18-20 s (4 s once warm).  kbuild passes -Wp,-MMD.
    if "CCACHE_DEPEND" not in os.environ:
        env["CCACHE_DEPEND"] = "1"
    return env
