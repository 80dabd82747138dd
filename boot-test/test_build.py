# SPDX-License-Identifier: GPL-2.0-only
"""The build side of the boot test: configuration checks, the KUnit suites
read from a tree, the test modules, the initramfs list, the command line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import boot_config
import boot_dkms
import boot_initramfs
import boot_intree
import boot_kernel
import boot_modules
import run

FRAGMENT = """\
# comment
CONFIG_KVM=m
CONFIG_KUNIT=y
# CONFIG_MODULE_SIG is not set
CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y
"""


def test_parse_config_reads_values_and_unset() -> None:
    assert boot_config.parse_config(FRAGMENT) == {
        'CONFIG_KVM': 'm',
        'CONFIG_KUNIT': 'y',
        'CONFIG_MODULE_SIG': 'n',
        'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST': 'y',
    }


def test_missing_options_names_each_dropped_option() -> None:
    # As on a pristine tree: olddefconfig dropped the unknown KUnit option.
    config = ('CONFIG_KVM=m\nCONFIG_KUNIT=y\n'
              '# CONFIG_MODULE_SIG is not set\n')
    assert boot_config.missing_options(FRAGMENT, config) == [
        'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y requested, not set in .config']


def test_missing_options_value_changed() -> None:
    config = ('CONFIG_KVM=y\nCONFIG_KUNIT=y\nCONFIG_MODULE_SIG=y\n'
              'CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST=y\n')
    assert boot_config.missing_options(FRAGMENT, config) == [
        'CONFIG_KVM=m requested, y in .config',
        'CONFIG_MODULE_SIG=n requested, y in .config']


def test_missing_options_none_when_all_survived() -> None:
    assert boot_config.missing_options(FRAGMENT, FRAGMENT) == []


def test_fragment_is_valid() -> None:
    options = boot_config.parse_config(boot_config.FRAGMENT.read_text())
    assert options['CONFIG_KVM'] == 'm'
    assert options['CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST'] == 'y'
    assert options['CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS'] == 'n'


def test_kunit_suites_are_read_from_the_tree(tmp_path: Path) -> None:
    (tmp_path / 'kernel/module').mkdir(parents=True)
    (tmp_path / 'kernel/module/Makefile').write_text(
        'obj-y += main.o\n'
        'obj-$(CONFIG_MODULE_EXPORT_FOR_KUNIT_TEST) += export_for_kunit.o\n')
    (tmp_path / 'kernel/module/export_for_kunit.c').write_text(
        'static struct kunit_suite renamed_suite = {\n'
        '\t.name = "module_export_for_renamed",\n'
        '\t.test_cases = cases,\n};\n')
    fragment = tmp_path / 'fragment'
    fragment.write_text(FRAGMENT + 'CONFIG_OTHER_KUNIT_TEST=m\n')
    assert boot_config.kunit_suites(tmp_path, fragment) == [
        'module_export_for_renamed']


def test_no_suite_when_the_tree_lacks_the_test(tmp_path: Path) -> None:
    fragment = tmp_path / 'fragment'
    fragment.write_text(FRAGMENT)
    assert boot_config.kunit_suites(tmp_path, fragment) == []


def test_make_args_carry_wrapper_and_jobs(tmp_path: Path) -> None:
    b = boot_kernel.Build(tmp_path / 'src', tmp_path / 'build', 8,
                          'ccache distcc')
    assert b.make_args('bzImage') == [
        'make', '-C', str(tmp_path / 'src'), f'O={tmp_path / "build"}',
        'CC=ccache distcc gcc', '-j8', 'bzImage']
    assert boot_kernel.Build(tmp_path, tmp_path).cc == 'gcc'


def test_every_module_has_a_source() -> None:
    for spec in boot_modules.MODULES:
        assert spec.source_file.is_file()


def test_every_guest_case_is_a_function_of_init() -> None:
    init = boot_initramfs.INIT.read_text()
    functions = set(re.findall(r'^(\w+)\(\) \{', init, re.M))
    cases = boot_initramfs.guest_cases()
    assert len(cases) == len(set(cases)) > 0
    assert set(cases) <= functions
    used = {n for spec in boot_modules.MODULES for n in spec.uses}
    for spec in boot_modules.MODULES:
        if spec.name not in used:
            assert any(case.startswith(spec.name) for case in cases), \
                spec.name
    enforce = boot_initramfs.guest_cases(boot_initramfs.GUEST_CASES_ENFORCE)
    assert len(enforce) == len(set(enforce)) > 0
    assert set(enforce) <= functions
    # the signed kvm must load under enforcement too
    assert 'kvm_loads_with_irqbypass' in enforce


def test_initramfs_list_adds_built_modules_only(tmp_path: Path) -> None:
    b = boot_kernel.Build(tmp_path, tmp_path)
    ko = boot_modules.module_dir(b, 'clevo_wmi') / 'clevo_wmi.ko'
    ko.parent.mkdir(parents=True)
    ko.write_bytes(b'')
    text = boot_initramfs.list_file(boot_modules.built(b))
    assert text.startswith(boot_initramfs.LIST.read_text())
    assert text.endswith(f'file /modules/clevo_wmi.ko {ko} 0644 0 0\n')
    assert '/modules/tuxedo_io.ko' not in text
    assert 'file /guest-cases ${GUEST_CASES}' in text


def test_nsdeps_source_imports_nothing_and_imports_of() -> None:
    assert boot_modules.imports_of(
        boot_modules.NSDEPS_SOURCE.read_text()) == []
    text = ('#include <linux/module.h>\n'
            'MODULE_IMPORT_NS("DMA_BUF");\n'
            '\tMODULE_IMPORT_NS("module:kvm");\n'
            '/* MODULE_IMPORT_NS(X) in a comment */\n')
    assert boot_modules.imports_of(text) == [
        'MODULE_IMPORT_NS("DMA_BUF");', 'MODULE_IMPORT_NS("module:kvm");']


def test_parser_defaults_and_required_ksrc(tmp_path: Path) -> None:
    args = run.setup_parser().parse_args(['--ksrc', str(tmp_path)])
    assert args.ksrc == tmp_path
    assert args.step == 'run'
    assert args.accel == 'auto'
    assert args.cc_wrapper == 'auto'
    assert args.out.parts[-2:] == ('out', 'boot-test')
    assert run.setup_parser().parse_args(
        ['boot', '--ksrc', 'k']).step == 'boot'
    with pytest.raises(SystemExit):
        run.setup_parser().parse_args([])


def test_a_missing_wrapper_is_one_line_error(tmp_path: Path) -> None:
    assert run.main(['config', '--ksrc', str(tmp_path),
                     '--cc-wrapper', 'no-such-wrapper']) == 1


SYMVERS = ('0x00000000\tanon_inode_make_secure_inode\tvmlinux\t'
           'EXPORT_SYMBOL_GPL\tmodule:kvm\n'
           '0x00000000\tdma_buf_put\tvmlinux\tEXPORT_SYMBOL_GPL\tDMA_BUF\n'
           '0x00000000\tktime_get\tvmlinux\tEXPORT_SYMBOL_GPL\t\n')
ANON = next(s for s in boot_modules.MODULES
            if s.name == 'anon_inode_intruder')


def test_a_kvm_only_export_of_the_kernel_is_tested() -> None:
    symbols = boot_modules.exports(SYMVERS)
    assert symbols['dma_buf_put'] == ('EXPORT_SYMBOL_GPL', 'DMA_BUF')
    assert boot_modules.skip_reason(ANON, symbols) is None
    for spec in boot_modules.MODULES:
        if not spec.needs_kvm_only:
            assert boot_modules.skip_reason(spec, {}) is None
    upstream = boot_modules.exports(SYMVERS.replace(
        'module:kvm', 'module:kvm,kvm-amd,kvm-intel'))
    assert boot_modules.skip_reason(ANON, upstream) is None


def test_without_the_kvm_only_export_the_module_is_skipped() -> None:
    # 6.1: exported to everybody; a kernel without the symbol; a module:
    # namespace for other modules.
    everybody = boot_modules.exports(SYMVERS.replace('module:kvm', ''))
    assert boot_modules.skip_reason(ANON, everybody) == (
        'this kernel exports anon_inode_make_secure_inode to every module '
        '(EXPORT_SYMBOL_GPL), not to kvm only')
    assert boot_modules.skip_reason(ANON, {}) == (
        'this kernel does not export anon_inode_make_secure_inode')
    other = boot_modules.exports(SYMVERS.replace('module:kvm',
                                                 'module:kvmfoo'))
    assert 'namespace module:kvmfoo' in boot_modules.skip_reason(ANON, other)


def test_skipped_modules_reach_the_guest_as_skip_files(tmp_path: Path
                                                       ) -> None:
    b = boot_kernel.Build(tmp_path, tmp_path / 'build')
    b.build_dir.mkdir()
    (b.build_dir / 'Module.symvers').write_text(
        SYMVERS.replace('module:kvm', ''))
    skipped = boot_modules.skipped(b)
    assert sorted(skipped) == ['anon_inode_import_intruder',
                               'anon_inode_intruder']
    files = boot_initramfs.write_skips(skipped, tmp_path / 'out')
    text = boot_initramfs.list_file([], files)
    path = tmp_path / 'out' / 'skip' / 'anon_inode_intruder.skip'
    assert f'file /modules/anon_inode_intruder.skip {path} 0644 0 0' in text
    assert path.read_text() == skipped['anon_inode_intruder'] + '\n'


def test_forge_name_renames_only_the_module(tmp_path: Path) -> None:
    spec = next(s for s in boot_modules.MODULES if s.forged_name)
    old = spec.kbuild_name.encode()
    ko = (b'\x7fELF' + old + b'_init\0' + old + b'.c\0'
          + b'name=' + old + b'\0' + b'\0' * 8 + old + b'\0')
    (tmp_path / f'{spec.kbuild_name}.ko').write_bytes(ko)
    b = boot_kernel.Build(tmp_path, tmp_path)
    assert boot_modules.finish(b, spec, tmp_path) is None
    forged = (tmp_path / f'{spec.name}.ko').read_bytes()
    new = spec.forged_name.encode()
    assert forged.count(new + b'\0') == 2
    assert old + b'_init\0' in forged and old + b'.c\0' in forged
    (tmp_path / f'{spec.kbuild_name}.ko').write_bytes(old + b'_init\0')
    assert 'names itself 0 time(s)' in boot_modules.finish(b, spec, tmp_path)


def test_impostors_are_kvm_and_signed_differently() -> None:
    impostors = [s for s in boot_modules.MODULES if s.kbuild_name == 'kvm']
    assert sorted(s.sign for s in impostors) == [
        '', 'secondary', 'secondary-carried', 'unknown']
    assert all(s.refused_by_loader for s in impostors)
    cases = boot_initramfs.guest_cases()
    # before the real kvm loads: same module name
    assert max(cases.index(f'{s.name}_refused') for s in impostors) < \
        cases.index('kvm_loads_with_irqbypass')


def test_bare_spellings_skip_where_the_kernel_takes_strings_only() -> None:
    """A kernel with the series' two-spelling path, or one that still
    stringifies, builds bare namespaces; upstream's strings-only one not."""
    extmod = ('#define __ns_as_written(ns)\t__stringify(ns)\n'
              '#define EXPORT_SYMBOL_NS(sym, ns)\t'
              '__EXPORT_SYMBOL(sym, "", ns)\n')
    old = ('#define EXPORT_SYMBOL_NS(sym, ns)\t'
           '__EXPORT_SYMBOL(sym, "", __stringify(ns))\n')
    upstream = '#define EXPORT_SYMBOL_NS(sym, ns)\t__EXPORT_SYMBOL(sym, "", ns)\n'
    assert boot_modules.strings_only(extmod) is None
    assert boot_modules.strings_only(old) is None
    reason = boot_modules.strings_only(upstream)
    assert reason and 'string literals only' in reason
    bare = next(s for s in boot_modules.MODULES if s.name == 'ns_import_bare')
    quoted = next(s for s in boot_modules.MODULES
                  if s.name == 'ns_export_quoted')
    assert boot_modules.skip_reason(bare, {}, reason) == reason
    assert boot_modules.skip_reason(quoted, {}, reason) is None


def test_in_tree_check_skips_where_the_kernel_has_none() -> None:
    assert boot_intree.skip_reason(
        '#define __namespace_must_be_a_string_literal(ns)\t"" ns\n') is None
    assert 'no __namespace_must_be_a_string_literal' in \
        boot_intree.skip_reason('#define EXPORT_SYMBOL_NS(sym, ns) x\n')


def test_in_tree_source_spells_each_variant() -> None:
    for _, export, import_, _ in boot_intree.VARIANTS:
        text = boot_intree.SOURCE.format(export=export, import_=import_)
        assert f'boot_test_ns_spelling, {export});' in text
        assert f'MODULE_IMPORT_NS({import_});' in text


def test_dkms_make_args_are_those_of_dkms_conf() -> None:
    conf = ('MAKE[0]="make -C ${kernel_source_dir} '
            'M=${dkms_tree}/${PACKAGE_NAME}/${PACKAGE_VERSION}/build '
            'DKMS_BUILD=1"\n')
    assert boot_dkms.make_args(conf) == ['DKMS_BUILD=1']


def test_dkms_namespace_errors_are_failures_not_skips() -> None:
    bare = ("evdi_gem.c:35:18: error: expected ',' or ';' before 'DMA_BUF'\n"
            "include/linux/module.h:299:33: note: in expansion of macro "
            "'MODULE_INFO'\n"
            "evdi_gem.c:35:1: note: in expansion of macro "
            "'MODULE_IMPORT_NS'\n")
    assert boot_dkms.not_namespace_error(bare) is None
    api = "evdi_fb.c:10:5: error: implicit declaration of function 'x'\n"
    assert boot_dkms.not_namespace_error(api) == api.strip()
    modpost = (api + "ERROR: modpost: module evdi uses symbol dma_buf_put "
               "from namespace DMA_BUF, but does not import it.\n")
    assert boot_dkms.not_namespace_error(modpost) is None


def test_the_guest_must_run_the_kernel_the_build_made() -> None:
    serial = '[    0.000000] Linux version 6.1.192-gb3f12d323144 (root@vm)\n'
    assert run.booted_release_problems(serial, '6.1.192-gb3f12d323144') == []
    assert run.booted_release_problems(serial, '6.1.192-g616f9c1a4844') == [
        'the guest booted Linux 6.1.192-gb3f12d323144, the build made '
        '6.1.192-g616f9c1a4844']
    assert run.booted_release_problems('', '6.1.192') == []
