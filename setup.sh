#!/bin/bash
# Install what the project needs from Debian's archive (only what is
# missing), fetch and unpack a linux-source-X package, and remove what the
# tools made.
#
#   setup.sh deps               install missing packages (tools only)
#   setup.sh install PKG...     install those of PKG... that are missing
#                               (make verify: the cross compilers it needs)
#   setup.sh kver KVER...       check the form of each KVER (offline)
#   setup.sh tree KVER DIR [KSRC]
#                               make's tree, its path printed: KVER checked
#                               first, then the missing packages installed
#                               and linux-source-KVER unpacked into DIR ('N.x'
#                               resolved); or KSRC checked, packages installed
#   setup.sh source KVER DIR    unpack linux-source-KVER into DIR/linux-source-KVER
#   setup.sh resolve KVER DIR   print KVER, or for 'N.x' the newest linux-source-N.*
#                               that Debian serves (private apt state in DIR/.apt)
#   setup.sh versions DIR       every linux-source version Debian serves today:
#                               package, version, sha256 of the .deb, suites
#   setup.sh dkms PKG DIR       PKG's module sources unpacked into DIR/PKG
#   setup.sh clean-kernels WORKDIR [KEEP...]
#                               remove the unpacked kernels and their work
#                               directories but those KEEP names (6.12: a
#                               line, 7.2.13-1: one tree)
#   setup.sh distclean WORKDIR OUT
#                               remove OUT and the directories in WORKDIR that
#                               carry the tools' marker, .ns-series-owned
#
# KVER is N.M (6.12), N.x (the newest N.* Debian serves) or a Debian package
# version (7.2.12-1~bpo13+1: that version of linux-source-7.2, unpacked into
# DIR/linux-source-7.2.12-1~bpo13+1).  Its form is checked first, offline.
# A kernel Debian does not serve is refused from the apt lists already
# here: the private lists in DIR/.apt/lists (fetched once if there are none
# yet) and the machine's own; nothing is downloaded just to say no.
#
# 'source' installs linux-source-KVER with apt when the machine's own
# sources carry it (6.1 and 6.12 on Debian 12).  Otherwise it downloads the
# package from Debian's newer suites (trixie, trixie-backports, sid; the
# newest version wins) with a private apt configuration in DIR/.apt, and
# never changes the machine's apt sources.  DIR/linux-source-KVER.package
# records the package and version, for the cover letter.
#
# Whatever writes into DIR holds DIR/.lock (flock) while it runs: a second
# run waits for the first.  A directory setup.sh creates carries the marker
# file .ns-series-owned, by which 'distclean' knows it may remove it.
set -euo pipefail

PACKAGES=(coccinelle python3 python3-pytest make gcc git
	  qemu-system-x86 busybox-static bc bison flex libelf-dev libssl-dev
	  cpio kmod ccache distcc perl python3-ply python3-git xz-utils shellcheck
	  debian-archive-keyring linux-headers-amd64 git-email libmailtools-perl b4
	  dwarves patch)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# Every suite whose linux-source packages the series is regenerated on
# (the private apt configuration; the machine's own sources count too).
NEWER_SUITES=(bookworm bookworm-backports trixie trixie-backports sid experimental)
SECURITY_SUITES=(bookworm-security trixie-security)
# Where the out-of-tree modules of the boot test come from (Debian 13).
DKMS_SUITE=trixie
# In every directory the tools create and may remove (generate.py writes
# it too): 'make distclean' removes nothing without it.
MARKER=.ns-series-owned
# Set once this run has updated the private apt lists.
PRIVATE_FETCHED=

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

# kver_form KVER: KVER_LINE (N.M or N.x) and KVER_EXACT (a Debian package
# version, or empty) from KVER, or a one-line refusal of its form.
kver_form() {
	local kver=$1 line='^[0-9]+\.([0-9]+|x)$'
	local exact='^([0-9]+\.[0-9]+)([.~+][0-9A-Za-z.+~]*)?-[0-9A-Za-z.+~]+$'
	KVER_EXACT=
	if [[ "$kver" =~ $line ]]; then
		KVER_LINE=$kver
	elif [[ "$kver" =~ $exact ]]; then
		KVER_LINE=${BASH_REMATCH[1]}
		KVER_EXACT=$kver
	else
		die "KVER=$kver: expected N.M (6.12), N.x (the newest N.*: 7.x) or a Debian package version (7.2.12-1~bpo13+1)"
	fi
}

# owned_dir DIR: create DIR with the tools' marker in it, unless it exists.
owned_dir() {
	[ -d "$1" ] && return 0
	mkdir -p "$1"
	echo "made by ns-series (setup.sh); 'make distclean' removes this directory" >"$1/$MARKER"
}

# wait_lock FILE: hold the lock FILE until this script ends; a second run
# waits.
wait_lock() {
	local fd
	exec {fd}>>"$1"
	if ! flock -n "$fd"; then
		echo "setup.sh: waiting for another run that holds $1" >&2
		flock "$fd"
	fi
}

# lock DIR: DIR (created, with the marker, if missing) is this run's to
# write into until it ends.
lock() {
	owned_dir "$1"
	wait_lock "$1/.lock"
}

# apt_opts APT: the options of a private apt state in APT for Debian's
# newer suites (its sources.list written).
apt_opts() {
	local apt=$1 s
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	: >"$apt/sources.list"
	for s in "${NEWER_SUITES[@]}"; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $s main" >>"$apt/sources.list"
	done
	for s in "${SECURITY_SUITES[@]}"; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $SECURITY_MIRROR $s main" >>"$apt/sources.list"
	done
	APT_OPTS=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
		  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		  -o "Dir::State::Status=/dev/null" -o "Debug::NoLocking=1"
		  -o "APT::Sandbox::User=root" -o "Acquire::Languages=none")
}

# private_update APT: the private apt state in APT, its lists updated
# (once a run).
private_update() {
	local apt=$1
	apt_opts "$apt"
	[ -z "$PRIVATE_FETCHED" ] || return 0
	apt-get "${APT_OPTS[@]}" -q update >&2 || die "apt-get update of $MIRROR (${NEWER_SUITES[*]}) failed"
	PRIVATE_FETCHED=1
	# the time of this update, for 'as last fetched' (apt leaves the time
	# of a list that did not change alone)
	: >"$apt/updated"
}

# Are there private lists in APT (fetched by an earlier run)?
have_lists() {
	compgen -G "$1/lists/*_Packages*" >/dev/null
}

# lines_of [APT OPTION...]: the N.M of every linux-source-N.M an apt
# configuration lists (the machine's own without options), oldest first.
lines_of() {
	{ apt-cache "$@" pkgnames linux-source- 2>/dev/null || true; } |
		sed -n 's/^linux-source-\([0-9][0-9]*\.[0-9][0-9]*\)$/\1/p' | sort -Vu
}

# versions_of PKG [APT OPTION...]: the versions of PKG an apt configuration
# lists.
versions_of() {
	local pkg=$1
	shift
	{ apt-cache "$@" madison "$pkg" 2>/dev/null || true; } |
		awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort -Vu
}

# listed [APT OPTION...]: does an apt configuration list KVER (kver_form's):
# the line N.M, a line N.*, or the exact version?
listed() {
	if [ -n "$KVER_EXACT" ]; then
		versions_of "linux-source-$KVER_LINE" "$@" | grep -xF -- "$KVER_EXACT" >/dev/null
	elif [ "${KVER_LINE#*.}" = x ]; then
		lines_of "$@" | grep "^${KVER_LINE%.x}\." >/dev/null
	else
		lines_of "$@" | grep -xF -- "$KVER_LINE" >/dev/null
	fi
}

# served DIR: refuse, from the apt lists already here, a KVER (kver_form's)
# that Debian does not serve: the machine's own, and the private ones in
# DIR/.apt, fetched only if there are none yet.  A tree already unpacked
# is served.
served() {
	local dest=$1 apt=$1/.apt what when names
	if [ "${KVER_LINE#*.}" != x ] && [ -f "$dest/linux-source-${KVER_EXACT:-$KVER_LINE}/Makefile" ]; then
		return 0
	fi
	listed && return 0
	if ! have_lists "$apt"; then
		echo "setup.sh: linux-source-${KVER_EXACT:-$KVER_LINE} is not in this machine's apt lists; fetching the lists of ${NEWER_SUITES[*]} ${SECURITY_SUITES[*]} once (private apt configuration in $apt)" >&2
		private_update "$apt"
	fi
	apt_opts "$apt"
	listed "${APT_OPTS[@]}" && return 0
	when=$({ find "$apt/updated" "$apt/lists" -maxdepth 1 \( -name updated -o -name '*_Packages*' \) \
		-printf '%T@\n' 2>/dev/null || true; } | sort -n | tail -n 1)
	[ -z "$when" ] || when=" on $(date -u -d "@${when%.*}" '+%Y-%m-%d %H:%M UTC')"
	when="${NEWER_SUITES[*]} ${SECURITY_SUITES[*]}$when in $apt/lists, and this machine's apt sources"
	if [ -n "$KVER_EXACT" ]; then
		what="linux-source-$KVER_LINE=$KVER_EXACT"
		names=$({ versions_of "linux-source-$KVER_LINE"; versions_of "linux-source-$KVER_LINE" "${APT_OPTS[@]}"; } | sort -Vu)
	fi
	if [ -z "$KVER_EXACT" ] || [ -z "$names" ]; then
		what=linux-source-$KVER_LINE
		[ "${KVER_LINE#*.}" != x ] || what="linux-source-${KVER_LINE%.x}.*"
		names=$({ lines_of; lines_of "${APT_OPTS[@]}"; } | sort -Vu)
	fi
	die "no $what in Debian's archive as last fetched ($when); listed: $(echo "$names" | paste -sd, - | sed 's/,/, /g')"
}

# newest DIR: KVER_LINE='N.x' becomes the newest N.M Debian serves (the
# private lists in DIR/.apt updated first, and the machine's own lists).
newest() {
	local n
	private_update "$1/.apt"
	n=$({ lines_of; lines_of "${APT_OPTS[@]}"; } | sort -Vu | grep "^${KVER_LINE%.x}\." | tail -n 1) ||
		die "no linux-source-${KVER_LINE%.x}.* in ${NEWER_SUITES[*]}"
	KVER_LINE=$n
}

# newest_version DIR: the newest Debian version of linux-source-KVER_LINE
# served (the private lists in DIR/.apt updated first), or the machine's
# own package of the same upstream release where its sources carry one
# (6.12.118-1~deb12u1 rather than trixie's 6.12.118-1 on Debian 12).
newest_version() {
	local pkg=linux-source-$KVER_LINE v best='' own=''
	private_update "$1/.apt"
	for v in $({ versions_of "$pkg"; versions_of "$pkg" "${APT_OPTS[@]}"; } | sort -u); do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v
		fi
	done
	[ -n "$best" ] || die "no $pkg in this machine's apt sources or ${NEWER_SUITES[*]} ${SECURITY_SUITES[*]}"
	for v in $(versions_of "$pkg"); do
		if [ "${v%-*}" = "${best%-*}" ] && { [ -z "$own" ] || dpkg --compare-versions "$v" gt "$own"; }; then
			own=$v
		fi
	done
	echo "${own:-$best}"
}

# tree_name DIR VERSION: the directory name in DIR of linux-source-KVER_LINE
# at VERSION after 'linux-source-': the version, or KVER_LINE for a tree an
# earlier setup.sh unpacked as linux-source-N.M that is that version.
tree_name() {
	local recorded
	recorded=$(sed -n '1s/^[^ ]* //p' "$1/linux-source-$KVER_LINE.package" 2>/dev/null || true)
	if [ "$recorded" = "$2" ] && [ -f "$1/linux-source-$KVER_LINE/Makefile" ]; then
		echo "$KVER_LINE"
	else
		echo "$2"
	fi
}

# exact DIR: KVER (kver_form's) as an exact version: 'N.x' the newest line,
# 'N.M' the newest version of it that Debian serves; TREE_NAME the
# directory it is (to be) unpacked as, after 'linux-source-'.
exact() {
	if [ "${KVER_LINE#*.}" = x ]; then
		newest "$1"
	fi
	if [ -z "$KVER_EXACT" ]; then
		KVER_EXACT=$(newest_version "$1")
		apt_opts "$1/.apt"
	fi
	TREE_NAME=$(tree_name "$1" "$KVER_EXACT")
}

# The directory name (after 'linux-source-') of KVER's tree: 'N.x' and
# 'N.M' resolved to the newest version Debian serves; an exact version as
# it is.
resolve() {
	local kver=$1 dest=$2
	kver_form "$kver"
	if [ -n "$KVER_EXACT" ]; then
		echo "$kver"
		return 0
	fi
	lock "$dest"
	served "$dest"
	exact "$dest"
	echo "$TREE_NAME"
}

# fetch PKG VERSION APT DEST: download PKG (VERSION: that version, empty:
# the newest) into DEST, from the machine's own apt sources when they list
# that version, else from Debian's newer suites with the private apt state
# in APT; print the .deb's path.
fetch() {
	local pkg=$1 version=$2 apt=$3 dest=$4 spec=$1 opts=(-o "APT::Sandbox::User=root") from
	[ -z "$version" ] || spec=$pkg=$version
	if [ -n "$version" ] && versions_of "$pkg" | grep -xF -- "$version" >/dev/null; then
		from="this machine's apt sources"
	else
		from=${NEWER_SUITES[*]}
		echo "setup.sh: $spec is not in this machine's apt sources; fetching it from $from (private apt configuration in $apt)" >&2
		private_update "$apt"
		opts=("${APT_OPTS[@]}")
	fi
	(cd "$dest" && apt-get "${opts[@]}" -q download "$spec" >&2) ||
		die "no package $spec in $from: see 'apt-cache madison $pkg' there"
	ls "$dest/${pkg}"_*.deb
}

# changelog_date FILE: the date of the newest entry of a Debian changelog
# (.gz), as its trailer line writes it (RFC 2822).
changelog_date() {
	zcat "$1" | sed -n 's/^ -- .*>  //p' | head -n 1
}

# unpack_tmp DIR: a temporary directory in DIR, removed when this script
# ends (what is unpacked is moved into place from there whole).
unpack_tmp() {
	UNPACK_TMP=$(mktemp -d "$1/.unpack.XXXXXX")
	trap 'rm -rf "$UNPACK_TMP"' EXIT
}

# source_tree DIR: linux-source-KVER (kver_form's: N.M or an exact
# version) unpacked into DIR/linux-source-KVER, the package and its date
# recorded in DIR/linux-source-KVER.package.
source_tree() {
	local dest=$1 pkg=linux-source-$KVER_LINE name tree tarball version deb changelog
	name=linux-source-${TREE_NAME:-${KVER_EXACT:-$KVER_LINE}}
	tree=$dest/$name
	changelog=/usr/share/doc/$pkg/changelog.Debian.gz
	if [ -f "$tree/Makefile" ]; then
		# unpacked by an earlier setup.sh that did not record the package
		# or its date
		grep -qs '^date ' "$tree.package" && return 0
		if installed "$pkg" && [ -f "$changelog" ] && [ -z "$KVER_EXACT" ]; then
			version=$(dpkg-query -W -f='${Version}' "$pkg")
		else
			# fetched from a newer suite: fetch it again, for its changelog
			unpack_tmp "$dest"
			deb=$(fetch "$pkg" "$KVER_EXACT" "$dest/.apt" "$UNPACK_TMP")
			version=$(dpkg-deb -f "$deb" Version)
			dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$UNPACK_TMP" \
				"./usr/share/doc/$pkg/changelog.Debian.gz"
			changelog=$UNPACK_TMP/usr/share/doc/$pkg/changelog.Debian.gz
		fi
		{
			echo "$pkg $version"
			echo "date $(changelog_date "$changelog")"
		} >"$tree.package"
		return 0
	fi
	unpack_tmp "$dest"
	if [ -z "$KVER_EXACT" ] && { installed "$pkg" || in_own_sources "$KVER_LINE"; }; then
		installed "$pkg" || apt_install "$pkg"
		tarball=/usr/src/$pkg.tar.xz
		version=$(dpkg-query -W -f='${Version}' "$pkg")
	elif [ -n "$KVER_EXACT" ] && installed "$pkg" &&
		[ "$(dpkg-query -W -f='${Version}' "$pkg")" = "$KVER_EXACT" ]; then
		tarball=/usr/src/$pkg.tar.xz
		version=$KVER_EXACT
	else
		deb=$(fetch "$pkg" "$KVER_EXACT" "$dest/.apt" "$UNPACK_TMP")
		version=$(dpkg-deb -f "$deb" Version)
		dpkg-deb -x "$deb" "$UNPACK_TMP/pkg"
		rm -f "$deb"
		tarball=$UNPACK_TMP/pkg/usr/src/$pkg.tar.xz
		changelog=$UNPACK_TMP/pkg/usr/share/doc/$pkg/changelog.Debian.gz
	fi
	[ -f "$tarball" ] || die "$tarball is missing after installing $pkg"
	echo "setup.sh: unpacking $tarball into $tree" >&2
	tar -xf "$tarball" -C "$UNPACK_TMP"
	[ -f "$UNPACK_TMP/$pkg/Makefile" ] || die "$tarball has no $pkg/"
	rm -rf "$tree"
	mv "$UNPACK_TMP/$pkg" "$tree"
	{
		echo "$pkg $version"
		[ ! -f "$changelog" ] || echo "date $(changelog_date "$changelog")"
	} >"$tree.package"
}

source_cmd() {
	kver_form "$1"
	[ "${KVER_LINE#*.}" != x ] || die "KVER=$1: 'setup.sh resolve' it first"
	lock "$2"
	if [ -z "$KVER_EXACT" ] && [ -f "$2/linux-source-$KVER_LINE.package" ]; then
		# the name 'resolve' gave a tree an earlier setup.sh unpacked
		TREE_NAME=$KVER_LINE
	else
		served "$2"
		exact "$2"
	fi
	source_tree "$2"
}

# tree KVER DIR [KSRC]: the tree of make's targets; print its path.
tree() {
	local kver=$1 dest=$2 ksrc=${3:-}
	if [ -n "$ksrc" ]; then
		[ -f "$ksrc/Makefile" ] || die "KSRC=$ksrc: no kernel tree there (no Makefile)"
		deps
		echo "$ksrc"
		return 0
	fi
	kver_form "$kver"
	lock "$dest"
	served "$dest"
	deps
	exact "$dest"
	echo "setup.sh: KVER=$kver is linux-source-$KVER_LINE $KVER_EXACT" >&2
	source_tree "$dest" >&2
	echo "$dest/linux-source-$TREE_NAME"
}

# An out-of-tree module's sources as Debian's newer suites ship them
# (PKG-dkms of $DKMS_SUITE, with a private apt state in DIR/.apt): /usr/src/NAME-VERSION of
# the package, unpacked into DIR/PKG; print that directory.
dkms_source() {
	local pkg=$1 dest=$2 apt=$2/.apt deb src
	lock "$dest"
	if [ -f "$dest/$pkg/.package" ]; then
		echo "$dest/$pkg"
		return 0
	fi
	private_update "$apt"
	unpack_tmp "$dest"
	(cd "$UNPACK_TMP" && apt-get "${APT_OPTS[@]}" -q download "$pkg/$DKMS_SUITE" >&2) ||
		die "no package $pkg in $DKMS_SUITE"
	deb=$(ls "$UNPACK_TMP/${pkg}"_*.deb)
	dpkg-deb -x "$deb" "$UNPACK_TMP/pkg"
	src=$(find "$UNPACK_TMP/pkg/usr/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
	[ -n "$src" ] || die "$pkg has nothing in /usr/src"
	echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$src/.package"
	rm -rf "${dest:?}/$pkg"
	mv "$src" "$dest/$pkg"
	echo "$dest/$pkg"
}

# guard NAME PATH: refuse a PATH that is empty, / or $HOME.
guard() {
	local real
	[ -n "$2" ] || die "$1 is empty: distclean removes nothing"
	real=$(realpath -m -- "$2")
	[ "$real" != / ] || die "$1=$2 is /: distclean removes nothing"
	[ -z "${HOME:-}" ] || [ "$real" != "$(realpath -m -- "$HOME")" ] ||
		die "$1=$2 is \$HOME: distclean removes nothing"
}

# distclean WORKDIR OUT: remove OUT and every directory in WORKDIR that
# carries the marker; name the others (kept) and fail.
distclean() {
	local workdir=$1 out=$2 d top real remove=() kept=()
	guard WORKDIR "$workdir"
	guard OUT "$out"
	top=$(realpath -m -- "$(dirname -- "$0")")
	real=$(realpath -m -- "$out")
	for d in "$top" "$(realpath -m -- "$workdir")"; do
		case "$d/" in
		"$real"/*) die "OUT=$out holds $d: distclean removes nothing" ;;
		esac
	done
	if [ -d "$workdir" ]; then
		shopt -s nullglob dotglob
		for d in "$workdir"/*; do
			if [ -d "$d" ] && [ ! -L "$d" ] && [ -f "$d/$MARKER" ]; then
				remove+=("$d")
			elif [ -d "$d" ] && [ ! -L "$d" ]; then
				kept+=("$d")
			fi
		done
		shopt -u nullglob dotglob
	fi
	[ ! -e "$out" ] || remove+=("$out")
	if [ "${#remove[@]}" -eq 0 ]; then
		echo "setup.sh: nothing to remove (no $out, no directory with $MARKER in $workdir)"
	else
		echo "setup.sh: removing what the tools made (du -sh):"
		du -sch -- "${remove[@]}"
		for d in "${remove[@]}"; do
			# setup.sh's lock, generate.py's (nsgen/guard.py)
			[ ! -f "$d/.lock" ] || wait_lock "$d/.lock"
			[ ! -f "$d/.ns-series.lock" ] || wait_lock "$d/.ns-series.lock"
			rm -rf -- "$d"
		done
	fi
	[ "${#kept[@]}" -eq 0 ] ||
		die "kept $(printf '%s\n' "${kept[@]}" | paste -sd' ' -): no $MARKER there (not made by these tools, or made before they marked their directories); remove it yourself if it is theirs"
}

# served_versions DIR: every linux-source version Debian serves today (the
# private lists in DIR/.apt updated first, and the machine's own): one
# 'PACKAGE VERSION SHA256 SUITE[,SUITE...]' line each, by version.
served_versions() {
	local dest=$1 pkg
	lock "$dest"
	private_update "$dest/.apt"
	for pkg in $({ lines_of; lines_of "${APT_OPTS[@]}"; } | sort -Vu); do
		pkg=linux-source-$pkg
		{
			apt-cache madison "$pkg" 2>/dev/null || true
			apt-cache "${APT_OPTS[@]}" madison "$pkg" 2>/dev/null || true
		} | awk -F'|' '{ gsub(/ /, "", $2); split($3, w, " "); sub(/\/.*/, "", w[2]); print $2, w[2] }' |
			sort -u | awk -v pkg="$pkg" '
				$1 != v { if (v != "") print pkg, v, s; v = $1; s = $2; next }
				{ s = s "," $2 }
				END { if (v != "") print pkg, v, s }' |
			while read -r pkg v suites; do
				sha=$({ apt-cache show "$pkg=$v" 2>/dev/null; apt-cache "${APT_OPTS[@]}" show "$pkg=$v" 2>/dev/null; } |
					sed -n 's/^SHA256: //p' | head -n 1)
				echo "$pkg $v ${sha:-?} $suites"
			done
	done | sort -V -k2,2
}

# clean_kernels WORKDIR KEEP...: remove the unpacked kernel trees in
# WORKDIR/src and the work directories WORKDIR/linux-source-* of every
# kernel that KEEP does not name (a line, 6.12, keeps all its trees; a
# directory name, 7.2.13-1, that one).  A work directory with a refresh
# tree waiting for the maintainer is kept, and said so.
clean_kernels() {
	local workdir=$1 d name k line remove=() waiting=()
	shift
	guard WORKDIR "$workdir"
	shopt -s nullglob
	for d in "$workdir"/src/linux-source-*/ "$workdir"/linux-source-*/; do
		d=${d%/}
		name=${d##*/linux-source-}
		line=$(echo "$name" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
		for k in "$@"; do
			if [ "$k" = "$name" ] || [ "$k" = "$line" ]; then
				continue 2
			fi
		done
		if compgen -G "$workdir/linux-source-$name/refresh/*.json" >/dev/null; then
			waiting+=("$name")
			continue
		fi
		case $d in
		"$workdir"/src/*) remove+=("$d") ;;
		*) [ ! -f "$d/$MARKER" ] || remove+=("$d") ;;
		esac
	done
	shopt -u nullglob
	for name in "${waiting[@]}"; do
		echo "setup.sh: kept linux-source-$name: a refresh tree waits in $workdir/linux-source-$name/refresh (generate.py refresh, or remove it)"
	done
	if [ "${#remove[@]}" -eq 0 ]; then
		echo "setup.sh: no kernel to remove in $workdir"
		return 0
	fi
	echo "setup.sh: removing kernel trees and their work directories (du -sh):"
	du -sch -- "${remove[@]}"
	for d in "${remove[@]}"; do
		[ ! -f "$d/.ns-series.lock" ] || wait_lock "$d/.ns-series.lock"
		rm -rf -- "$d" "$d.package"
	done
}

case "${1:-}" in
deps) deps ;;
install) [ $# -ge 2 ] || die "usage: setup.sh install PKG..."; shift; install_missing "$@" ;;
kver) shift; for k in "$@"; do kver_form "$k"; done ;;
tree) [ $# -eq 3 ] || [ $# -eq 4 ] || die "usage: setup.sh tree KVER DIR [KSRC]"; tree "$2" "$3" "${4:-}" ;;
source) [ $# -eq 3 ] || die "usage: setup.sh source KVER DIR"; source_cmd "$2" "$3" ;;
resolve) [ $# -eq 3 ] || die "usage: setup.sh resolve KVER DIR"; resolve "$2" "$3" ;;
dkms) [ $# -eq 3 ] || die "usage: setup.sh dkms PKG DIR"; dkms_source "$2" "$3" ;;
distclean) [ $# -eq 3 ] || die "usage: setup.sh distclean WORKDIR OUT"; distclean "$2" "$3" ;;
versions) [ $# -eq 2 ] || die "usage: setup.sh versions DIR"; served_versions "$2" ;;
clean-kernels) [ $# -ge 2 ] || die "usage: setup.sh clean-kernels WORKDIR [KEEP...]"; shift; clean_kernels "$@" ;;
*) die "usage: setup.sh deps | install PKG... | kver KVER... | tree KVER DIR [KSRC] | source KVER DIR | resolve KVER DIR | dkms PKG DIR | versions DIR | distclean WORKDIR OUT | clean-kernels WORKDIR [KEEP...]" ;;
esac
