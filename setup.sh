#!/bin/bash
# Install what the project needs from Debian's archive (only what is
# missing), and fetch and unpack a linux-source-X package.
#
#   setup.sh deps               install missing packages (tools only)
#   setup.sh install PKG...     install those of PKG... that are missing
#                               (make verify: the cross compilers it needs)
#   setup.sh source KVER DIR    unpack linux-source-KVER into DIR/linux-source-KVER
#   setup.sh resolve KVER DIR   print KVER, or for 'N.x' the newest linux-source-N.*
#                               that Debian serves (private apt state in DIR/.apt)
#
# 'source' installs linux-source-KVER with apt when the machine's own
# sources carry it (6.1 and 6.12 on Debian 12).  Otherwise it downloads the
# package from Debian's newer suites (trixie, trixie-backports, sid; the
# newest version wins) with a private apt configuration in DIR/.apt, and
# never changes the machine's apt sources.  DIR/linux-source-KVER.package
# records the package and version, for the cover letter.
set -euo pipefail

PACKAGES=(coccinelle python3 python3-pytest make gcc git
	  qemu-system-x86 busybox-static bc bison flex libelf-dev libssl-dev
	  cpio kmod ccache distcc perl python3-ply python3-git xz-utils shellcheck
	  debian-archive-keyring linux-headers-amd64 git-email libmailtools-perl b4)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NEWER_SUITES=(trixie trixie-backports sid)
# Where the out-of-tree modules of the boot test come from (Debian 13).
DKMS_SUITE=trixie

die() {
	echo "setup.sh: error: $*" >&2
	exit 1
}

# (grep reads whole outputs: grep -q would end a pipe early, and pipefail
# would then report the writer's SIGPIPE as a failure)
installed() {
	local status
	status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[ "$status" = "install ok installed" ]
}

apt_install() {
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: $*; install them as root (apt-get install $*)"
	fi
	echo "setup.sh: installing $*" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2 || die "apt-get update failed: check the network to Debian's archive"
	apt-get install -y -q --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
}

# install_missing PKG...: apt-get install those not installed yet.
install_missing() {
	local p missing=()
	for p in "$@"; do
		installed "$p" || missing+=("$p")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		apt_install "${missing[@]}"
	fi
}

deps() {
	install_missing "${PACKAGES[@]}"
}

# The machine's own apt knows linux-source-KVER?
in_own_sources() {
	local policy
	policy=$(apt-cache policy "linux-source-$1" 2>/dev/null) || return 1
	[[ "$policy" =~ Candidate:\ [0-9] ]]
}

# A private apt state in $1 for Debian's newer suites, updated.
private_update() {
	local apt=$1 s
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
	: >"$apt/sources.list"
	for s in "${NEWER_SUITES[@]}"; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $s main" >>"$apt/sources.list"
	done
	apt_opts "$apt"
	apt-get "${APT_OPTS[@]}" -q update >&2 || die "apt-get update of $MIRROR (${NEWER_SUITES[*]}) failed"
}

# Download linux-source-KVER from Debian's newer suites with the private
# apt state in $2; print the .deb's path.
fetch_newer() {
	local kver=$1 apt=$2
	echo "setup.sh: linux-source-$kver is not in this machine's apt sources; fetching it from ${NEWER_SUITES[*]} (private apt configuration in $apt)" >&2
	private_update "$apt"
	(cd "$apt/debs" && rm -f ./*.deb && apt-get "${APT_OPTS[@]}" -q download "linux-source-$kver" >&2) ||
		die "no package linux-source-$kver in ${NEWER_SUITES[*]}: see 'apt-cache search linux-source' there"
	ls "$apt/debs/linux-source-${kver}"_*.deb
}

apt_opts() {
	local apt=$1
	APT_OPTS=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
		  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		  -o "Dir::State::Status=/dev/null" -o "Debug::NoLocking=1"
		  -o "APT::Sandbox::User=root" -o "Acquire::Languages=none")
}

# 'N.x': the newest linux-source-N.* in Debian's newer suites.
resolve() {
	local kver=$1 apt=$2/.apt
	if [[ "$kver" =~ ^[0-9]+\.[0-9]+$ ]]; then
		echo "$kver"
		return 0
	fi
	[[ "$kver" =~ ^([0-9]+)\.x$ ]] || die "KVER=$kver: expected a version like 6.12 or 7.x"
	private_update "$apt" >/dev/null
	apt_opts "$apt"
	apt-cache "${APT_OPTS[@]}" pkgnames "linux-source-${BASH_REMATCH[1]}." |
		sed 's/^linux-source-//' | sort -V | tail -n 1 | grep . ||
		die "no linux-source-$kver in ${NEWER_SUITES[*]}"
}

# changelog_date FILE: the date of the newest entry of a Debian changelog
# (.gz), as its trailer line writes it (RFC 2822).
changelog_date() {
	zcat "$1" | sed -n 's/^ -- .*>  //p' | head -n 1
}

source_tree() {
	local kver=$1 dest=$2 tarball version deb tmp changelog
	[[ "$kver" =~ ^[0-9]+\.[0-9]+$ ]] || die "KVER=$kver: expected a version like 6.12"
	if [ -f "$dest/linux-source-$kver/Makefile" ]; then
		# unpacked by an earlier setup.sh that did not record the package
		# or its date
		grep -qs '^date ' "$dest/linux-source-$kver.package" && return 0
		changelog=/usr/share/doc/linux-source-$kver/changelog.Debian.gz
		if installed "linux-source-$kver" && [ -f "$changelog" ]; then
			version=$(dpkg-query -W -f='${Version}' "linux-source-$kver")
		else
			# fetched from a newer suite: fetch it again, for its changelog
			deb=$(fetch_newer "$kver" "$dest/.apt")
			version=$(dpkg-deb -f "$deb" Version)
			tmp=$(mktemp -d "$dest/.unpack.XXXXXX")
			UNPACK_TMP=$tmp
			trap 'rm -rf "$UNPACK_TMP"' EXIT
			dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" \
				"./usr/share/doc/linux-source-$kver/changelog.Debian.gz"
			rm -f "$deb"
			changelog=$tmp/usr/share/doc/linux-source-$kver/changelog.Debian.gz
		fi
		{
			echo "linux-source-$kver $version"
			echo "date $(changelog_date "$changelog")"
		} >"$dest/linux-source-$kver.package"
		return 0
	fi
	mkdir -p "$dest"
	tmp=$(mktemp -d "$dest/.unpack.XXXXXX")
	UNPACK_TMP=$tmp
	trap 'rm -rf "$UNPACK_TMP"' EXIT
	if installed "linux-source-$kver" || in_own_sources "$kver"; then
		installed "linux-source-$kver" || apt_install "linux-source-$kver"
		tarball=/usr/src/linux-source-$kver.tar.xz
		version=$(dpkg-query -W -f='${Version}' "linux-source-$kver")
		changelog=/usr/share/doc/linux-source-$kver/changelog.Debian.gz
	else
		deb=$(fetch_newer "$kver" "$dest/.apt")
		version=$(dpkg-deb -f "$deb" Version)
		dpkg-deb -x "$deb" "$tmp/pkg"
		rm -f "$deb"
		tarball=$tmp/pkg/usr/src/linux-source-$kver.tar.xz
		changelog=$tmp/pkg/usr/share/doc/linux-source-$kver/changelog.Debian.gz
	fi
	[ -f "$tarball" ] || die "$tarball is missing after installing linux-source-$kver"
	echo "setup.sh: unpacking $tarball into $dest" >&2
	tar -xf "$tarball" -C "$tmp"
	[ -f "$tmp/linux-source-$kver/Makefile" ] || die "$tarball has no linux-source-$kver/"
	rm -rf "$dest/linux-source-$kver"
	mv "$tmp/linux-source-$kver" "$dest/linux-source-$kver"
	{
		echo "linux-source-$kver $version"
		[ ! -f "$changelog" ] || echo "date $(changelog_date "$changelog")"
	} >"$dest/linux-source-$kver.package"
}

# An out-of-tree module's sources as Debian's newer suites ship them
# (PKG-dkms of $DKMS_SUITE, with a private apt state in DIR/.apt): /usr/src/NAME-VERSION of
# the package, unpacked into DIR/PKG; print that directory.
dkms_source() {
	local pkg=$1 dest=$2 apt=$2/.apt deb tmp src
	if [ -f "$dest/$pkg/.package" ]; then
		echo "$dest/$pkg"
		return 0
	fi
	private_update "$apt"
	mkdir -p "$dest"
	(cd "$apt/debs" && rm -f ./*.deb && apt-get "${APT_OPTS[@]}" -q download "$pkg/$DKMS_SUITE" >&2) ||
		die "no package $pkg in $DKMS_SUITE"
	deb=$(ls "$apt/debs/${pkg}"_*.deb)
	tmp=$(mktemp -d "$dest/.unpack.XXXXXX")
	UNPACK_TMP=$tmp
	trap 'rm -rf "$UNPACK_TMP"' EXIT
	dpkg-deb -x "$deb" "$tmp"
	src=$(find "$tmp/usr/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
	[ -n "$src" ] || die "$pkg has nothing in /usr/src"
	rm -rf "${dest:?}/$pkg"
	mv "$src" "$dest/$pkg"
	echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$dest/$pkg/.package"
	rm -f "$deb"
	echo "$dest/$pkg"
}

case "${1:-}" in
deps) deps ;;
install) [ $# -ge 2 ] || die "usage: setup.sh install PKG..."; shift; install_missing "$@" ;;
source) [ $# -eq 3 ] || die "usage: setup.sh source KVER DIR"; source_tree "$2" "$3" ;;
resolve) [ $# -eq 3 ] || die "usage: setup.sh resolve KVER DIR"; resolve "$2" "$3" ;;
dkms) [ $# -eq 3 ] || die "usage: setup.sh dkms PKG DIR"; dkms_source "$2" "$3" ;;
*) die "usage: setup.sh deps | install PKG... | source KVER DIR | resolve KVER DIR | dkms PKG DIR" ;;
esac
