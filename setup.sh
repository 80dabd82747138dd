#!/bin/bash
# Install what the project needs from Debian's archive (only what is
# missing), and unpack linux-source-6.12 into the work directory.
#
#   setup.sh deps             install missing packages
#   setup.sh unpack DIR       unpack /usr/src/linux-source-6.12.tar.xz into DIR
set -euo pipefail

PACKAGES=(coccinelle linux-source-6.12 python3 python3-pytest make gcc git
	  qemu-system-x86 busybox-static bc bison flex libelf-dev libssl-dev
	  cpio kmod ccache distcc perl python3-ply python3-git xz-utils shellcheck)
TARBALL=/usr/src/linux-source-6.12.tar.xz

die() {
	echo "setup.sh: error: $*" >&2
	exit 1
}

missing_packages() {
	local p
	for p in "${PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$'; then
			echo "$p"
		fi
	done
}

deps() {
	local missing
	mapfile -t missing < <(missing_packages)
	if [ "${#missing[@]}" -eq 0 ]; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})"
	fi
	echo "setup.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2 || die "apt-get update failed: check the network to Debian's archive"
	apt-get install -y -q "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
}

unpack() {
	local dest=$1 tmp
	[ -f "$TARBALL" ] || die "$TARBALL is missing: run 'make deps' (package linux-source-6.12)"
	if [ -f "$dest/linux-source-6.12/Makefile" ]; then
		return 0
	fi
	mkdir -p "$dest"
	tmp=$(mktemp -d "$dest/.unpack.XXXXXX")
	echo "setup.sh: unpacking $TARBALL into $dest" >&2
	tar -xf "$TARBALL" -C "$tmp"
	rm -rf "$dest/linux-source-6.12"
	mv "$tmp/linux-source-6.12" "$dest/linux-source-6.12"
	rmdir "$tmp"
}

case "${1:-}" in
deps) deps ;;
unpack) [ $# -eq 2 ] || die "usage: setup.sh unpack DIR"; unpack "$2" ;;
*) die "usage: setup.sh deps | unpack DIR" ;;
esac
