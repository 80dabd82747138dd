"""nsgen/cross.py: which architecture preprocesses a file, and the
options that build its object."""

from __future__ import annotations

from pathlib import Path

from nsgen import cross


def test_files_go_to_their_architecture() -> None:
    assert cross.target_of("drivers/dma-buf/dma-buf.c") is cross.NATIVE
    assert cross.target_of("arch/x86/kernel/fpu/core.c") is cross.NATIVE
    assert cross.target_of("arch/arm64/crypto/aes-glue.c").cross == \
        "aarch64-linux-gnu-"
    assert cross.target_of("arch/powerpc/crypto/vmx.c").config == \
        "ppc64le_defconfig"
    # the directory arch/ itself, a file directly in it: native
    assert cross.target_of("arch/Kconfig") is cross.NATIVE


def test_an_architecture_without_a_compiler_is_named() -> None:
    loongarch = cross.target_of("arch/loongarch/kernel/x.c")
    assert cross.unknown_reason(loongarch) is None
    assert not loongarch.package
    assert loongarch.unavailable_reason() == (
        "Debian 12 has no cross compiler for loongarch "
        "(loongarch64-linux-gnu-gcc)")
    alpha = cross.target_of("arch/alpha/kernel/x.c")
    assert cross.unknown_reason(alpha) == \
        "verify has no cross target for arch/alpha"


def test_group_keeps_the_table_order_and_packages() -> None:
    files = ["arch/s390/crypto/aes_s390.c", "fs/a.c",
             "arch/arm64/crypto/aes-glue.c", "arch/alpha/x.c", "fs/b.c"]
    groups = cross.group(files)
    assert [t.name for t in groups] == ["x86", "arm64", "s390", "alpha"]
    assert groups[cross.NATIVE] == ["fs/a.c", "fs/b.c"]
    # only packages of targets whose compiler is missing, never "" or gcc
    for package in cross.packages(files):
        assert package.startswith("gcc-") and package.endswith("-gnu")


def test_options_from_the_makefile(tmp_path: Path) -> None:
    d = tmp_path / "arch/arm/crypto"
    d.mkdir(parents=True)
    (d / "Makefile").write_text(
        "obj-$(CONFIG_CRYPTO_AES_ARM_BS) += aes-arm-bs.o\n"
        "obj-$(CONFIG_CRYPTO_SHA1_ARM) += sha1-arm.o \\\n"
        "\tplain.o\n"
        "aes-arm-bs-y\t:= aes-neonbs-core.o aes-neonbs-glue.o\n"
        "sha1-arm-$(CONFIG_KERNEL_MODE_NEON) += sha1-neon.o\n"
        "# obj-$(CONFIG_COMMENTED) += aes-neonbs-glue.o\n")
    assert cross.options_for(tmp_path, "arch/arm/crypto/aes-neonbs-glue.c") \
        == ["CRYPTO_AES_ARM_BS"]
    assert cross.options_for(tmp_path, "arch/arm/crypto/plain.c") == \
        ["CRYPTO_SHA1_ARM"]
    assert cross.options_for(tmp_path, "arch/arm/crypto/sha1-neon.c") == \
        ["CRYPTO_SHA1_ARM", "KERNEL_MODE_NEON"]
    # #included by another file (arm64's aes-glue.c): no line names it
    assert cross.options_for(tmp_path, "arch/arm/crypto/aes-glue.c") == []


def test_a_driver_only_another_arch_can_preprocess(tmp_path: Path) -> None:
    """A file outside arch/ that includes an <asm/...> header x86 lacks goes
    to the one architecture its options depend on (6.1's VMX driver)."""
    src = tmp_path
    for d, text in {
        "arch/x86/include/asm/io.h": "",
        "include/asm-generic/bitops.h": "",
        "arch/powerpc/include/asm/cputable.h": "",
        "drivers/crypto/Kconfig": "config CRYPTO_DEV_VMX\n"
                                  "\tdepends on PPC64 && VSX\n",
        "drivers/crypto/vmx/Kconfig": "config CRYPTO_DEV_VMX_ENCRYPT\n"
                                      "\tdepends on CRYPTO_DEV_VMX\n",
        "drivers/crypto/vmx/Makefile":
            "obj-$(CONFIG_CRYPTO_DEV_VMX_ENCRYPT) += vmx-crypto.o\n"
            "vmx-crypto-objs := vmx.o aes.o\n",
        "drivers/crypto/vmx/vmx.c": "#include <asm/cputable.h>\n",
        "drivers/crypto/vmx/aes.c": "#include <asm/io.h>\n",
        "drivers/tty/Kconfig": "config SERIAL_X\n\tdepends on !S390\n",
        "drivers/tty/Makefile": "obj-$(CONFIG_SERIAL_X) += x.o\n",
        "drivers/tty/x.c": "#include <asm/cputable.h>\n",
    }.items():
        (src / d).parent.mkdir(parents=True, exist_ok=True)
        (src / d).write_text(text)
    k = cross.Kconfig(src)
    assert cross.missing_asm_headers(src, "drivers/crypto/vmx/vmx.c") == \
        ["cputable.h"]
    assert cross.target_of("drivers/crypto/vmx/vmx.c", src, k).name == \
        "powerpc"
    # x86 has the header: stays native whatever Kconfig says
    assert cross.target_of("drivers/crypto/vmx/aes.c", src, k) is \
        cross.NATIVE
    # "!S390" is no dependency on s390: no architecture to go to
    assert cross.target_of("drivers/tty/x.c", src, k) is cross.NATIVE
    groups = cross.group(["drivers/crypto/vmx/vmx.c"], src)
    assert [t.name for t in groups] == ["powerpc"]
