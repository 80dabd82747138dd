# SPDX-License-Identifier: GPL-2.0-only
"""Module signatures for the boot test.

The kernel is built with CONFIG_MODULE_SIG and CONFIG_MODULE_SIG_ALL: its
build makes a key (certs/signing_key.pem) and 'make modules_install' signs
every module with it through scripts/sign-file.  The boot test installs the
modules into a staging directory that way, and the guest loads kvm and
irqbypass from there.

Two more keys sign copies of the impostor kvm: one the kernel never heard
of, and one whose certificate the build key signed, so that the guest can
enrol it into .secondary_trusted_keys (with enroll-key, built here from
enroll_key.c): the kernel then trusts it, but did not build it in.  That
second key also signs with its certificate carried in the signature
(openssl cms without -nocerts; sign-file leaves certificates out), which
the kernel can follow to the build key without any enrolment: the signer
is still not a built-in key.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from boot_kernel import Build
from nsgen.run import ToolError, run

HERE = Path(__file__).resolve().parent
ENROLL_SOURCE = HERE / 'enroll_key.c'
BUILD_KEY = 'certs/signing_key.pem'
# The extensions the kernel needs to find the signer of a certificate
# (authorityKeyIdentifier) and to verify module signatures with it.
EXTENSIONS = ('basicConstraints=critical,CA:FALSE\n'
              'keyUsage=digitalSignature\n'
              'subjectKeyIdentifier=hash\n'
              'authorityKeyIdentifier=keyid\n')


def keys_dir(b: Build) -> Path:
    return b.build_dir / 'boot-test-keys'


def release(b: Build) -> str:
    path = b.build_dir / 'include' / 'config' / 'kernel.release'
    if not path.is_file():
        raise ToolError(f'{path}: missing; build the kernel first')
    return path.read_text().strip()


def installed_modules(b: Build) -> Path:
    """Where modules_install put the signed modules (lib/modules/R/kernel)."""
    return (b.build_dir / 'boot-test-install' / 'lib' / 'modules'
            / release(b) / 'kernel')


def install_modules(b: Build, log: Path) -> Path:
    """make modules_install into the staging directory: every module signed
    with the build's key, as a distribution's install would sign it."""
    staging = b.build_dir / 'boot-test-install'
    if staging.exists():
        shutil.rmtree(staging)
    b.make(f'INSTALL_MOD_PATH={staging}', 'DEPMOD=true', 'modules_install',
           log=log)
    return installed_modules(b)


def is_signed(ko: Path) -> bool:
    return ko.read_bytes().endswith(b'~Module signature appended~\n')


def sig_hash(b: Build) -> str:
    m = re.search(r'^CONFIG_MODULE_SIG_HASH="([^"]+)"$',
                  (b.build_dir / '.config').read_text(), re.M)
    if not m:
        raise ToolError(f'{b.build_dir}/.config: no CONFIG_MODULE_SIG_HASH '
                        '(is CONFIG_MODULE_SIG set?)')
    return m.group(1)


def openssl(*args: str | Path, cwd: Path) -> None:
    run(['openssl', *args], cwd=cwd)


def make_keys(b: Build) -> Path:
    """unknown.pem (self-signed), secondary.pem + secondary.der (signed by
    the build key) and enroll-key, redone when the build key changes."""
    d = keys_dir(b)
    build_key = b.build_dir / BUILD_KEY
    if not build_key.is_file():
        raise ToolError(f'{build_key}: missing; is CONFIG_MODULE_SIG set?')
    stamp = hashlib.sha256(build_key.read_bytes()
                           + ENROLL_SOURCE.read_bytes()
                           + EXTENSIONS.encode()).hexdigest()
    if (d / 'stamp').is_file() and (d / 'stamp').read_text() == stamp:
        return d
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / 'ext.cnf').write_text(EXTENSIONS)
    openssl('req', '-new', '-x509', '-nodes', '-newkey', 'rsa:2048',
            '-days', '36500', '-subj', '/CN=boot test: a key the kernel '
            'does not know/', '-addext', 'keyUsage=digitalSignature',
            '-keyout', 'unknown.pem', '-out', 'unknown.pem', cwd=d)
    openssl('req', '-new', '-nodes', '-newkey', 'rsa:2048', '-subj',
            '/CN=boot test: a key signed by the build key/',
            '-keyout', 'secondary.pem', '-out', 'secondary.csr', cwd=d)
    openssl('x509', '-req', '-in', 'secondary.csr', '-CA', build_key,
            '-CAkey', build_key, '-set_serial', '2', '-days', '36500',
            '-extfile', 'ext.cnf', '-out', 'secondary.crt', cwd=d)
    with (d / 'secondary.pem').open('a') as f:
        f.write((d / 'secondary.crt').read_text())
    openssl('x509', '-in', 'secondary.crt', '-outform', 'DER',
            '-out', 'secondary.der', cwd=d)
    run(['gcc', '-static', '-O2', '-Wall', '-o', d / 'enroll-key',
         ENROLL_SOURCE])
    (d / 'stamp').write_text(stamp)
    return d


# How a module signature ends: the PKCS#7 message (DER), then struct
# module_signature (id_type 2 = PKCS#7, the message's length big-endian in
# its last four bytes), then the magic string.
MODULE_SIG_MAGIC = b'~Module signature appended~\n'
PKEY_ID_PKCS7 = 2
CARRIED = '-carried'


def sign(b: Build, key: str, ko: Path) -> None:
    """Sign ko in place with keys_dir/KEY.pem (key and certificate); with
    KEY ending in -carried, by openssl cms with the signer's certificate
    inside the signature."""
    if key.endswith(CARRIED):
        sign_carrying_cert(b, key[:-len(CARRIED)], ko)
        return
    sign_with(b, keys_dir(b) / f'{key}.pem', ko)


def sign_with(b: Build, pem: Path, ko: Path) -> None:
    """scripts/sign-file with pem (key and certificate in one file, as the
    build's certs/signing_key.pem is)."""
    run([b.build_dir / 'scripts' / 'sign-file', sig_hash(b), pem, pem, ko])


def sign_carrying_cert(b: Build, key: str, ko: Path) -> None:
    """Append a module signature whose PKCS#7 message carries the signer's
    certificate (no signed attributes: the kernel refuses them)."""
    d = keys_dir(b)
    sig = ko.with_name(ko.name + '.p7s')
    openssl('cms', '-sign', '-binary', '-noattr', '-md', sig_hash(b),
            '-outform', 'DER', '-in', ko, '-out', sig,
            '-signer', d / f'{key}.crt', '-inkey', d / f'{key}.pem',
            cwd=d)
    der = sig.read_bytes()
    sig.unlink()
    if b'\x30' != der[:1]:
        raise ToolError(f'openssl cms wrote no DER signature for {ko}')
    trailer = (bytes([0, 0, PKEY_ID_PKCS7, 0, 0, 0, 0, 0])
               + len(der).to_bytes(4, 'big') + MODULE_SIG_MAGIC)
    ko.write_bytes(ko.read_bytes() + der + trailer)
