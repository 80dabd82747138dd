# The front door.  'make' writes the series, 'make check' runs every test.
# Both install what is missing first (Debian packages, the kernel source).

PYTHON ?= /usr/bin/python3
# The default work directory is generate.py's ($WORKDIR, else
# $XDG_CACHE_HOME/ns-series, else ~/.cache/ns-series): asked once.
ifeq ($(origin WORKDIR),undefined)
WORKDIR := $(shell $(PYTHON) generate.py workdir)
endif
ifeq ($(strip $(WORKDIR)),)
$(error WORKDIR is empty: name a directory, or leave WORKDIR out for the default)
endif
# The kernel: linux-source-$(KVER) from Debian, unpacked in WORKDIR/src;
# KVER is N.M (6.1, 6.12, 7.3), N.x (the newest N.* Debian serves) or a
# Debian package version (7.2.12-1~bpo13+1); or any tree given as KSRC
# (then KVER is not used).  The recipe of 'ksrc' finds the tree (setup.sh
# tree: KVER checked first, then fetched, unpacked, 'N.x' resolved) and
# sets TREE_KSRC to it; reading this file fetches nothing ('make help').
# Until then TREE_KSRC is KVER's tree as written.
KVER ?= 6.12
ifeq ($(origin KSRC),undefined)
TREE_KSRC = $(WORKDIR)/src/linux-source-$(KVER)
TREE_ARGS = "$(KVER)" "$(WORKDIR)/src"
else
ifeq ($(strip $(KSRC)),)
$(error KSRC is empty: name a kernel tree, or leave KSRC out for linux-source-KVER)
endif
# /tree/ and /tree are one tree, with one work directory
TREE_KSRC := $(abspath $(KSRC))
TREE_ARGS = "$(KVER)" "$(WORKDIR)/src" "$(TREE_KSRC)"
endif
OUT ?= out
JOBS ?= $(shell nproc)
# Compiler wrapper of the kernel builds (boot test, verify, bisect-check):
# auto = ccache if installed; or ccache, distcc, icecc, "ccache distcc";
# empty for none.
CC_WRAPPER ?= auto
# How the cover letter names the base; empty: the Debian package the tree
# was unpacked from, else make kernelversion.
BASE_DESC ?=
# Who sends the series, "Name <email>"; empty: git's user.name and
# user.email.  The patches' date; empty: the Debian package's changelog date,
# or the newest commit of a git tree.
AUTHOR ?=
DATE ?=
# Non-empty: a git tree's local changes are taken in (said in the cover
# letter); empty: they stop the run.
ALLOW_DIRTY ?=

# The kernels 'make check' regenerates the series on besides KVER.
CHECK_KERNELS ?= 6.1,7.2,7.x
comma := ,
CHECK_KVERS = $(subst $(comma), ,$(CHECK_KERNELS))
OTHER_ARGS = --other-kernels "$(CHECK_KERNELS)" --src-dir "$(WORKDIR)/src"

GEN := $(PYTHON) generate.py
# One work directory per tree: baseline, work trees, caches, builds.
TREE_WORKDIR = $(WORKDIR)/$(notdir $(TREE_KSRC))
GEN_ARGS = --ksrc "$(TREE_KSRC)" --workdir "$(TREE_WORKDIR)"
KBUILD_ARGS := --jobs $(JOBS) --cc-wrapper "$(CC_WRAPPER)"
DIRTY_ARGS = $(if $(ALLOW_DIRTY),--allow-dirty)
# spatch's and get_maintainer.pl's results, keyed by content: shared by
# the trees, so the next point release reuses the last one's.
SERIES_ARGS = --out "$(OUT)" --jobs $(JOBS) --base-desc "$(BASE_DESC)" \
	--cache "$(WORKDIR)/cache" \
	$(if $(MAINTAINERS),--maintainers "$(MAINTAINERS)") \
	$(if $(SINCE),--since "$(SINCE)") $(if $(REROLL),--reroll-count "$(REROLL)") \
	$(if $(IN_REPLY_TO),--in-reply-to "$(IN_REPLY_TO)") \
	--author "$(AUTHOR)" --date "$(DATE)" $(DIRTY_ARGS)

.PHONY: all release series deps ksrc check check-kernels kernels-list refresh clean-kernels test boot-test boot-test-mutants bisect-check bench checkpatch verify abi-check help clean distclean

all: series

help:
	@echo 'Targets:'
	@echo '  make [series]    write the patch series to $$(OUT)/series (default)'
	@echo '  make release     the series, make verify and the boot test on it,'
	@echo '                   then the series again: its cover letter quotes'
	@echo '                   their results (what to run before sending)'
	@echo '  make check       every test: unit tests, fixtures, the series on'
	@echo '                   the real tree (applies, complete, idempotent,'
	@echo '                   reproducible, checkpatch, verify, abi-check,'
	@echo '                   the treewide recipe run from its mail) and'
	@echo '                   the QEMU boot test'
	@echo '                   and the same series checks on CHECK_KERNELS'
	@echo '  make check-kernels  only the series checks on CHECK_KERNELS:'
	@echo '                   generated, applies, complete, idempotent,'
	@echo '                   reproducible, loader and modpost compile;'
	@echo '                   KERNELS=all: on every version of tests/kernels.list'
	@echo '                   (generated, applies, loader and modpost compile;'
	@echo '                   a table by Debian version), KERNELS=V1,V2 some'
	@echo '  make kernels-list  write tests/kernels.list again: every'
	@echo '                   linux-source version Debian serves today'
	@echo '  make refresh STEP=0004  after a refused step: the refresh tree it'
	@echo '                   left, fixed by hand, becomes the step for this'
	@echo '                   tree (patches/N.M/, steps.conf), then the series'
	@echo '  make clean-kernels [KEEP=6.12,7.2.13-1]  remove the unpacked'
	@echo '                   kernels and their work directories (but KEEP)'
	@echo '  make test        the fast tests only (no kernel tree needed)'
	@echo '  make boot-test   build the patched kernel and boot it in QEMU'
	@echo '  make boot-test-mutants  the boot test once per security check'
	@echo '                   taken out of the kernel: exactly the cases'
	@echo '                   written against that check must fail'
	@echo '  make verify      preprocess every C file the conversion touches,'
	@echo '                   before and after (x86_64 allmodconfig): must be'
	@echo '                   identical; results in $$(OUT)/verify, quoted by'
	@echo '                   the cover letter'
	@echo '  make abi-check   compare the module ABI of the pristine tree and'
	@echo '                   of the series: genksyms CRCs of the exports of'
	@echo '                   the changed files and of every type and'
	@echo '                   declaration of the changed headers, struct'
	@echo '                   layouts (pahole); results in $$(OUT)/abi,'
	@echo '                   quoted by the cover letter'
	@echo '  make bisect-check  build the boot-test configuration at every patch'
	@echo '                   of the series, incrementally (not part of check)'
	@echo '  make checkpatch  scripts/checkpatch.pl --strict on patches/*.patch'
	@echo '  make bench       conversion timings against grep+sed; make cold and warm, by phase'
	@echo '  make deps        install missing Debian packages'
	@echo '  make clean       remove $$(OUT)'
	@echo '  make distclean   remove $$(OUT) and what the tools made in WORKDIR'
	@echo '                   (the directories marked .ns-series-owned; any'
	@echo '                   other is named and kept); says how much it frees'
	@echo 'Variables:'
	@echo '  KVER=$(KVER)'
	@echo '            Debian kernel: linux-source-KVER, the newest N.M Debian'
	@echo '            serves (6.1, 6.12, 7.2, 7.3, ...; 7.x = the newest 7.*;'
	@echo '            or a package version, 7.2.12-1~bpo13+1), from bookworm'
	@echo '            to experimental and the security suites, with a private'
	@echo '            apt configuration when a target needs it'
	@echo '  CHECK_KERNELS=$(CHECK_KERNELS)'
	@echo '            other kernels of make check (KVERs, comma-separated)'
	@echo '  KSRC=$(TREE_KSRC)'
	@echo '            kernel tree, only read (default: linux-source-KVER unpacked in WORKDIR)'
	@echo '  WORKDIR=$(WORKDIR)'
	@echo '            unpacked kernels (src/), per tree the baseline, work trees,'
	@echo '            caches, kernel builds: a fresh make check leaves about 33 GB'
	@echo '            (make distclean removes it); one run at a time: runs on'
	@echo '            the same tree wait for each other'
	@echo '  SINCE=DIR  compare with that earlier series (default: the last'
	@echo '            version recorded for the line in WORKDIR/history)'
	@echo '  REROLL=N  the version number (default: the last one plus one;'
	@echo '            the same one when the patches did not change)'
	@echo '  IN_REPLY_TO=ID|FILE  the last version'"'"'s Message-ID, or the mbox'
	@echo '            it was sent as: the cover letter replies to it'
	@echo '  MAINTAINERS=FILE  the MAINTAINERS get_maintainer.pl reads'
	@echo '            (default: the tree'"'"'s; name a newer one for an old tree)'
	@echo '  OUT=$(OUT)  PYTHON=$(PYTHON)'
	@echo '  AUTHOR="Name <email>"  who sends the series (default: git'"'"'s'
	@echo '            user.name and user.email; none: an unsigned placeholder)'
	@echo '  DATE=     the patches'"'"' date (default: the Debian package'"'"'s'
	@echo '            changelog date, or the newest commit of a git tree)'
	@echo '  ALLOW_DIRTY=1  take a git tree'"'"'s local changes in (default: they'
	@echo '            stop the run)'
	@echo '  JOBS=$(JOBS)  parallel spatch processes and make jobs (more'
	@echo '            than nproc when a build farm compiles)'
	@echo '  CC_WRAPPER=$(CC_WRAPPER)'
	@echo '            compiler wrapper of the kernel builds (boot test,'
	@echo '            verify, bisect-check): auto (ccache if installed),'
	@echo '            ccache, distcc, icecc, "ccache distcc", or empty'

deps:
	./setup.sh deps

# The tree, found by setup.sh when a recipe needs it (a bad KVER is
# refused there first, offline); the later recipes read TREE_KSRC.
# 'make -n' only shows the command.  make check also checks the form of
# CHECK_KERNELS first.
DRY_RUN := $(findstring n,$(firstword -$(MAKEFLAGS)))
check check-kernels: KVER_FORMS = ./setup.sh kver $(CHECK_KVERS) &&
ksrc:
ifneq ($(DRY_RUN),)
	./setup.sh tree $(TREE_ARGS)
else
	$(eval TREE_KSRC := $(shell $(KVER_FORMS) ./setup.sh tree $(TREE_ARGS)))@test -n "$(TREE_KSRC)" && echo "KSRC=$(TREE_KSRC) (work directory $(TREE_WORKDIR))"
endif

series: ksrc
	$(GEN) generate $(GEN_ARGS) $(SERIES_ARGS)

test: deps
	$(PYTHON) tests/check.py --fast

check: ksrc
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" --base-desc "$(BASE_DESC)" $(OTHER_ARGS)

# KERNELS=all: every version of tests/kernels.list (what Debian served when
# it was written), or KERNELS=V1,V2 some of them; without KERNELS the
# series checks of make check on CHECK_KERNELS.
KERNELS ?=
ifeq ($(strip $(KERNELS)),)
check-kernels: ksrc
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" $(OTHER_ARGS) --only other-kernels
else
check-kernels: deps
	$(PYTHON) tests/check_kernels.py --src-dir "$(WORKDIR)/src" --workdir-root "$(WORKDIR)" --out "$(OUT)/kernels" $(KBUILD_ARGS) $(if $(filter all,$(KERNELS)),,--only "$(KERNELS)")
endif

# The list of every linux-source version Debian serves today.
kernels-list: deps
	{ sed -n '/^#/p' tests/kernels.list; ./setup.sh versions "$(WORKDIR)/src"; } > tests/kernels.list.new
	mv tests/kernels.list.new tests/kernels.list

# After a refused step: the refresh tree it left, fixed by hand, becomes
# the step's text for this tree (STEP: its name or number), then the series.
STEP ?=
refresh: ksrc
	@test -n "$(STEP)" || { echo "make refresh: name the step, STEP=0004 (see the refusal)"; exit 2; }
	$(GEN) refresh $(GEN_ARGS) $(SERIES_ARGS) "$(STEP)"

# The unpacked kernels (about 1.7 GB each) and their work directories (2 GB
# with a series, 25 GB after make check), but those KEEP names (6.12: the
# line, 7.2.13-1: one tree; comma-separated).
KEEP ?=
clean-kernels:
	./setup.sh clean-kernels "$(WORKDIR)" $(subst $(comma), ,$(KEEP))

boot-test: series
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" --only boot-test

verify: series
	$(GEN) verify $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" $(DIRTY_ARGS)
	$(GEN) generate $(GEN_ARGS) $(SERIES_ARGS)

abi-check: series
	$(GEN) abi-check $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" $(DIRTY_ARGS)
	$(GEN) generate $(GEN_ARGS) $(SERIES_ARGS)

# What a maintainer runs before sending: the series, make verify, the boot
# test, and the series again, its cover letter quoting their results.
release: series
	$(GEN) verify $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" $(DIRTY_ARGS)
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" --only boot-test
	$(GEN) generate $(GEN_ARGS) $(SERIES_ARGS)

boot-test-mutants: series
	$(PYTHON) tests/mutants.py $(GEN_ARGS) $(KBUILD_ARGS) --series "$(OUT)/series" --out "$(OUT)/mutants"

bisect-check: series
	$(PYTHON) tests/bisect_check.py $(GEN_ARGS) $(KBUILD_ARGS) --series "$(OUT)/series" --out "$(OUT)/bisect-check"

checkpatch: ksrc
	$(PYTHON) tests/check.py $(GEN_ARGS) --out "$(OUT)" --only checkpatch

bench: ksrc
	$(PYTHON) bench/bench_convert.py $(GEN_ARGS) --jobs $(JOBS)
	$(PYTHON) bench/bench_make.py $(GEN_ARGS) --jobs $(JOBS)

clean:
	rm -rf "$(OUT)"

# OUT, and in WORKDIR each directory the tools made (marked
# .ns-series-owned); any other directory there is named and kept.
distclean:
	./setup.sh distclean "$(WORKDIR)" "$(OUT)"

# make print-VAR: a variable's value (make print-TREE_WORKDIR KSRC=...)
print-%:
	@echo '$*=$($*)'
