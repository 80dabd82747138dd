# The front door.  'make' writes the series, 'make check' runs every test.
# Both install what is missing first (Debian packages, the kernel source).

PYTHON ?= /usr/bin/python3
# The default work directory is generate.py's ($WORKDIR, else
# $XDG_CACHE_HOME/ns-series, else ~/.cache/ns-series): asked once.
ifeq ($(origin WORKDIR),undefined)
WORKDIR := $(shell $(PYTHON) generate.py workdir)
endif
KSRC ?= $(WORKDIR)/src/linux-source-6.12
OUT ?= out
JOBS ?= $(shell nproc)
# Compiler wrapper of the kernel builds (boot test, verify, bisect-check):
# auto = ccache if installed; or ccache, distcc, icecc, "ccache distcc";
# empty for none.
CC_WRAPPER ?= auto
BASE_DESC ?= $(shell dpkg-query -W -f='linux-source-6.12 $${Version}' linux-source-6.12 2>/dev/null)

DEFAULT_KSRC := $(WORKDIR)/src/linux-source-6.12
GEN := $(PYTHON) generate.py
GEN_ARGS := --ksrc "$(KSRC)" --workdir "$(WORKDIR)"
KBUILD_ARGS := --jobs $(JOBS) --cc-wrapper "$(CC_WRAPPER)"

.PHONY: all series deps ksrc check test boot-test bisect-check bench checkpatch verify help clean

all: series

help:
	@echo 'Targets:'
	@echo '  make [series]    write the patch series to $$(OUT)/series (default)'
	@echo '  make check       every test: unit tests, fixtures, the series on'
	@echo '                   the real tree (applies, complete, idempotent,'
	@echo '                   reproducible, checkpatch) and the QEMU boot test'
	@echo '  make test        the fast tests only (no kernel tree needed)'
	@echo '  make boot-test   build the patched kernel and boot it in QEMU'
	@echo '  make verify      preprocess every C file the conversion touches,'
	@echo '                   before and after (x86_64 allmodconfig): must be'
	@echo '                   identical; results in $$(OUT)/verify, quoted by'
	@echo '                   the cover letter'
	@echo '  make bisect-check  build the boot-test configuration at every patch'
	@echo '                   of the series, incrementally (not part of check)'
	@echo '  make checkpatch  scripts/checkpatch.pl --strict on patches/*.patch'
	@echo '  make bench       conversion timings, cold and warm, against grep+sed'
	@echo '  make deps        install missing Debian packages'
	@echo '  make clean       remove $$(OUT)'
	@echo 'Variables:'
	@echo '  KSRC=$(KSRC)'
	@echo '            kernel tree, only read (default: linux-source-6.12 unpacked in WORKDIR)'
	@echo '  WORKDIR=$(WORKDIR)'
	@echo '            baseline, work trees, caches, kernel build'
	@echo '  OUT=$(OUT)  PYTHON=$(PYTHON)'
	@echo '  JOBS=$(JOBS)  parallel spatch processes and make jobs (more'
	@echo '            than nproc when a build farm compiles)'
	@echo '  CC_WRAPPER=$(CC_WRAPPER)'
	@echo '            compiler wrapper of the kernel builds (boot test,'
	@echo '            verify, bisect-check): auto (ccache if installed),'
	@echo '            ccache, distcc, icecc, "ccache distcc", or empty'

deps:
	./setup.sh deps

# Unpack the Debian tarball only when KSRC is the default.
ksrc: deps
ifeq ($(KSRC),$(DEFAULT_KSRC))
	./setup.sh unpack "$(WORKDIR)/src"
endif

series: ksrc
	$(GEN) generate $(GEN_ARGS) --out "$(OUT)" --jobs $(JOBS) --base-desc "$(BASE_DESC)"

test: deps
	$(PYTHON) tests/check.py --fast

check: ksrc
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" --base-desc "$(BASE_DESC)"

boot-test: series
	$(PYTHON) tests/check.py $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)" --only boot-test

verify: series
	$(GEN) verify $(GEN_ARGS) $(KBUILD_ARGS) --out "$(OUT)"
	$(GEN) generate $(GEN_ARGS) --out "$(OUT)" --jobs $(JOBS) --base-desc "$(BASE_DESC)"

bisect-check: series
	$(PYTHON) tests/bisect_check.py $(GEN_ARGS) $(KBUILD_ARGS) --series "$(OUT)/series" --out "$(OUT)/bisect-check"

checkpatch: ksrc
	$(PYTHON) tests/check.py $(GEN_ARGS) --out "$(OUT)" --only checkpatch

bench: ksrc
	$(PYTHON) bench/bench_convert.py $(GEN_ARGS) --jobs $(JOBS)

clean:
	rm -rf "$(OUT)"
