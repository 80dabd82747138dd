#!/bin/sh
# Extract the shared matcher header, a file that the EXPORT_SYMBOL_GPL_FOR
# patch creates, from that patch alone, so that the matcher can be tested
# without a kernel tree.
#
# usage: extract-header.sh PATCH OUTDIR
#   writes OUTDIR/include/linux/module_ns_match.h
set -eu

HEADER=include/linux/module_ns_match.h

usage() {
	echo "usage: $0 PATCH OUTDIR" >&2
	exit 2
}

main() {
	[ $# -eq 2 ] || usage
	patch=$1
	outdir=$2

	if [ ! -f "$patch" ]; then
		echo "$0: $patch: no such patch file" >&2
		exit 1
	fi
	patch=$(realpath "$patch")

	rm -rf "$outdir.tmp"
	mkdir -p "$outdir.tmp"
	# Stop git from finding an enclosing repository: the patch must be
	# applied to the empty directory, not to the project's work tree.
	GIT_CEILING_DIRECTORIES=$(realpath "$outdir.tmp/..") \
		git -C "$outdir.tmp" apply --include="$HEADER" "$patch"
	if [ ! -f "$outdir.tmp/$HEADER" ]; then
		echo "$0: $patch does not create $HEADER" >&2
		rm -rf "$outdir.tmp"
		exit 1
	fi
	rm -rf "$outdir"
	mv "$outdir.tmp" "$outdir"
}

main "$@"
