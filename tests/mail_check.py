#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The series as the tools people send with take it, offline.

  - git send-email, its --smtp-server a capture script in a scratch
    directory (never the network): every patch reaches exactly the
    addresses of its To: and Cc: headers (and its author, whom send-email
    copies), under its own Message-ID;
  - b4 am on the series as one mbox finds the whole thread;
  - scripts/checkpatch.pl --strict on every patch (not the cover letter):
    0 errors and no finding in the commit message (line length, subject,
    tags); the diff's warnings counted per type, those the series adds
    apart from those already in the lines it changes (checkpatch run on
    the patch reversed, where the old lines are the added ones).

TAP on stdout; the last line is 'N passed, N failed'.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import email.utils
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Optional, Sequence

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import convert  # noqa: E402
from nsgen.run import run  # noqa: E402

CAPTURE = '''#!/bin/sh
# sendmail for git send-email: recipients in "$@", the message on stdin.
dir=$(dirname "$0")/captured
mkdir -p "$dir"
n=$(ls "$dir" | wc -l)
{ printf 'X-Rcpt: %s\\n' "$*"; cat; } > "$dir/$n.eml"
'''


def headers(path: Path) -> email.message.Message:
    with path.open('rb') as f:
        return email.message_from_binary_file(f, policy=email.policy.compat32)


def addresses(msg: email.message.Message, *names: str) -> set[str]:
    found = email.utils.getaddresses(
        [str(v) for n in names for v in msg.get_all(n, [])])
    return {addr.lower() for _, addr in found if addr}


def send_email(patches: list[Path], work: Path) -> list[str]:
    """Problems found sending patches through the capture script."""
    script = work / 'capture.sh'
    work.mkdir(parents=True, exist_ok=True)
    script.write_text(CAPTURE)
    script.chmod(0o755)
    captured = work / 'captured'
    if captured.exists():
        for f in captured.iterdir():
            f.unlink()
    sender = headers(patches[0])['From']
    run(['git', 'send-email', '--confirm=never', '--no-thread',
         f'--smtp-server={script}', '--suppress-cc=body',
         f'--from={sender}', *patches], timeout=600,
        env={'HOME': str(work), 'GIT_CONFIG_NOSYSTEM': '1'})
    got = sorted(captured.iterdir(), key=lambda p: int(p.stem))
    if len(got) != len(patches):
        return [f'{len(got)} messages captured for {len(patches)} patches']
    problems = []
    for patch, mail in zip(patches, got):
        want = headers(patch)
        sent = headers(mail)
        rcpt = {a.lower() for a in sent['X-Rcpt'].split() if '@' in a}
        expected = addresses(want, 'To', 'Cc', 'From')
        if rcpt != expected:
            problems.append(f'{patch.name}: sent to {sorted(rcpt)}, '
                            f'expected {sorted(expected)}')
        if sent['Message-Id'] != want['Message-ID']:
            problems.append(f"{patch.name}: Message-Id {sent['Message-Id']}"
                            f", the patch has {want['Message-ID']}")
    return problems


def b4_am(patches: list[Path], work: Path) -> Optional[str]:
    work.mkdir(parents=True, exist_ok=True)
    mbox = work / 'series.mbox'
    mbox.write_bytes(b''.join(p.read_bytes() for p in patches))
    out = work / 'b4'
    out.mkdir(parents=True, exist_ok=True)
    cover = headers(patches[0])['Message-ID'].strip('<> ')
    # b4 stops, without a word, where git has no identity: the sender's.
    name, addr = email.utils.parseaddr(headers(patches[0])['From'])
    (work / '.gitconfig').write_text(
        f'[user]\n\tname = {name}\n\temail = {addr}\n')
    proc = run(['b4', '--offline-mode', 'am', '-m', mbox, '-o', out, cover],
               timeout=600, check=False,
               env={'HOME': str(work), 'XDG_CACHE_HOME': str(work / 'cache'),
                    'GIT_CONFIG_NOSYSTEM': '1'})
    text = proc.stdout + (proc.stderr or '')
    m = re.search(r'Total patches: (\d+)', text)
    if proc.returncode or not m:
        return f'b4 am: exit {proc.returncode}: {text.strip()[-300:]}'
    if int(m.group(1)) != len(patches) - 1:
        return f'b4 am found {m.group(1)} patches of {len(patches) - 1}'
    return None


def reverse(patch: str) -> str:
    """The diff part of a patch with its - and + lines swapped (without the
    commit message, whose warnings are the series' own)."""
    out = ['Subject: [PATCH] reversed\n\n---\n']
    start = patch.find('\ndiff --git ')
    for line in patch[start + 1:].splitlines(keepends=True):
        if line.startswith('--- a/') or line.startswith('+++ b/'):
            out.append(line)
        elif line.startswith('-'):
            out.append('+' + line[1:])
        elif line.startswith('+'):
            out.append('-' + line[1:])
        else:
            out.append(line)
    return ''.join(out)


def checkpatch(ksrc: Path, text: str, *extra: str) -> Counter[str]:
    proc = run(['perl', 'scripts/checkpatch.pl', '--strict', '--show-types',
                '--terse', '--no-summary', *extra, '-'], cwd=ksrc,
               stdin=text, timeout=3600, check=False,
               env={'PATH': '/usr/bin:/bin'})
    return Counter(f'{lvl}:{kind}' for lvl, kind in re.findall(
        r': (ERROR|WARNING|CHECK):(\w+):', proc.stdout))


# checkpatch's checks of the commit message itself (the diff's findings
# are judged against the lines it changes; the message has no such excuse).
MESSAGE_TYPES = frozenset((
    'COMMIT_LOG_LONG_LINE', 'COMMIT_MESSAGE', 'COMMIT_COMMENT_SYMBOL',
    'EMAIL_SUBJECT', 'GIT_COMMIT_ID', 'UNKNOWN_COMMIT_ID', 'BAD_SIGN_OFF',
    'DUPLICATE_SIGN_OFF', 'BAD_FIXES_TAG', 'FROM_SIGN_OFF_MISMATCH',
    'NO_AUTHOR_SIGN_OFF', 'BAD_STABLE_ADDRESS_STYLE', 'BAD_REPORTED_BY_LINK',
    'COMMIT_LOG_USE_LINK', 'COMMIT_LOG_VERSIONING'))


def checkpatch_case(ksrc: Path, patch: Path) -> tuple[Optional[str], str]:
    """(problem, the warnings: added / already in the changed lines)."""
    text = patch.read_text(encoding='utf-8', errors='surrogateescape')
    new = checkpatch(ksrc, text)
    old = checkpatch(ksrc, reverse(text), '--no-signoff')
    errors = sorted(k for k in new if k.startswith('ERROR:'))
    warnings = {k: n for k, n in new.items() if not k.startswith('ERROR:')}
    added = {k: n - old[k] for k, n in warnings.items() if n > old[k]}
    kept = {k: min(n, old[k]) for k, n in warnings.items() if old[k]}
    note = (f'added {dict(sorted(added.items())) or "none"}; already in '
            f'the changed lines {dict(sorted(kept.items())) or "none"}')
    if errors:
        return f'{sum(new[k] for k in errors)} error(s): {errors}', note
    message = sorted(k for k in new if k.split(':')[1] in MESSAGE_TYPES)
    if message:
        return f'the commit message: {message}', note
    return None, note


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--series', type=Path, required=True)
    ap.add_argument('--ksrc', type=Path, required=True,
                    help='the kernel tree (for scripts/checkpatch.pl)')
    ap.add_argument('--work', type=Path, required=True)
    args = ap.parse_args(argv)
    patches = sorted(args.series.glob('*.patch'))
    results: list[Optional[str]] = []

    def case(name: str, problem: Optional[str], note: str = '') -> None:
        results.append(problem)
        print(f'{"not ok" if problem else "ok"} {len(results)} {name}'
              f'{" # " + note if note else ""}', flush=True)
        for line in (problem or '').splitlines():
            print(f'    # {line}', flush=True)

    print('TAP version 13', flush=True)
    if len(patches) < 2:
        case('a series with a cover letter', f'{args.series}: '
             f'{len(patches)} files')
    else:
        problems = send_email(patches, args.work / 'send-email')
        case('git send-email sends each patch to its To and Cc',
             '\n'.join(problems) or None)
        case('b4 am finds the whole series', b4_am(patches,
                                                   args.work / 'b4am'))
        big = [f'{p.name}: {p.stat().st_size // 1000} KB' for p in patches
               if p.stat().st_size >= convert.MAIL_LIMIT]
        case(f'every mail under {convert.MAIL_LIMIT // 1000} KB (the lists\' '
             'limit)', f'over it: {", ".join(big)}' if big else None,
             f'largest {max(p.stat().st_size for p in patches) // 1000} KB')
        for p in patches[1:]:
            problem, note = checkpatch_case(args.ksrc, p)
            case(f'checkpatch --strict {p.name}: 0 errors, a clean '
                 'commit message', problem, note)
    failed = sum(1 for r in results if r)
    print(f'{len(results) - failed} passed, {failed} failed', flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    os.environ.setdefault('LC_ALL', 'C')
    sys.exit(main())
