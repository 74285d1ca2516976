# commtrace: top-level build.
#
#   make [all]        build commrec, libcommrec.so, commanalyze, tests
#   make check        run every test (installs missing Debian packages first);
#                     TESTS=name runs the programs whose name holds it,
#                     CASE=pattern[,pattern] the unit test cases matching
#                     (tests/unit/check.h)
#   make MPI=1        also build commanalyze-mpi (needs libopenmpi-dev)
#   make accuracy     accuracy of the models against exact: regenerates
#                     doc/accuracy.md and asserts its bounds (several minutes;
#                     not part of check: its bounds are measurements)
#   make bench        print the performance table
#   make fuzz         build the fuzz targets (clang, libFuzzer) and run each
#                     for FUZZ_TIME seconds (default 60) on its corpus
#   make demo         record and analyze a bundled example
#   make install      PREFIX=/usr/local DESTDIR=
#   make clean
# Variables: V=1 (show commands), ASAN=1 (analyzer, format library and tests
# with AddressSanitizer+UBSan; the preload runtime keeps its own flags).
#
# Sources are found by wildcard, so adding a file needs no edit here:
#   formats/*.c          -> build/libctformat.a (and a PIC copy for the runtime)
#   record/common/*.c    -> shared by the launcher and the runtime
#   record/runtime/*.c   -> build/libcommrec.so (preloaded)
#   record/*.c           -> build/commrec
#   analyze/*.c          -> build/commanalyze (main.c) + build/libanalyze.a
#   tests/unit/fmt_*.c   -> unit tests linked with the format library
#   tests/unit/rec_*.c   -> ... and record/common
#   tests/unit/ana_*.c   -> ... and the analyzer library
#   tests/ubench/*.c     -> build/ubench/NAME (microbenchmarks, pthreads)
#   tests/kernels/*.c    -> build/kernels/NAME and NAME-inst (commrec-cc);
#                           omp_*.c with -fopenmp
#   tests/fuzz/*_fuzz.c  -> build/fuzz/NAME_replay (make check), NAME_fuzz (make fuzz)
# Every output goes under build/.

PREFIX ?= /usr/local
DESTDIR ?=
B := build
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CC ?= cc
ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN := -Wall -Wextra
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iformats -DCT_VERSION='"$(VERSION)"'
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer
SAN := $(if $(filter 1,$(ASAN)),$(SANFLAGS),)

# ---- optional and required libraries --------------------------------------
have_hdr = $(shell printf '#include <$(1)>\n' | $(CC) $(2) -E -x c - >/dev/null 2>&1 && echo 1)

ZSTD_CFLAGS := $(shell pkg-config --cflags libzstd 2>/dev/null)
ZSTD_LIBS := $(or $(shell pkg-config --libs libzstd 2>/dev/null),-lzstd)
ZYDIS_LIBS := -lZydis
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5 2>/dev/null)
HDF5_LIBS := $(shell pkg-config --libs hdf5 2>/dev/null) -lhdf5_hl   # _hl: dimension scales
# libdwarf through pkg-config where it ships a .pc (libdwarf 0.x); Debian 12's
# (20210528) has none: its include directory then
DWARF_CFLAGS := $(or $(shell pkg-config --cflags libdwarf 2>/dev/null),-I/usr/include/libdwarf)
# (+ Zydis: symtab_dwarf.c decodes the code after allocation calls)
DWARF_LIBS := $(or $(shell pkg-config --libs libdwarf 2>/dev/null),-ldwarf) -lelf -lz $(ZYDIS_LIBS)

HAVE_HDF5 := $(call have_hdr,hdf5.h,$(HDF5_CFLAGS))
HAVE_LIBDWARF := $(call have_hdr,libdwarf.h,$(DWARF_CFLAGS))
HAVE_LIBPFM := $(call have_hdr,perfmon/pfmlib_perf_event.h,)
# liblzma: the MiniDebugInfo (.gnu_debugdata) of stripped binaries (symtab_elf.c)
HAVE_LZMA := $(call have_hdr,lzma.h,)
LZMA_LIBS := $(if $(filter 1,$(HAVE_LZMA)),-llzma)

# Required: their absence is a message naming the Debian package (make deps
# installs them as root), not a compiler error on a missing header.
REQUIRED_HDRS := zstd.h:libzstd-dev Zydis/Zydis.h:libzydis-dev
MISSING_PKGS := $(foreach h,$(REQUIRED_HDRS),$(if $(call have_hdr,$(firstword $(subst :, ,$(h))),$(ZSTD_CFLAGS)),,$(lastword $(subst :, ,$(h)))))

FEAT_CFLAGS :=
# the analyzer demangles C++ names with the C++ runtime's __cxa_demangle (analyze/demangle.c)
ANA_LIBS := -lstdc++
REC_LIBS :=
ifeq ($(HAVE_HDF5),1)
FEAT_CFLAGS += -DHAVE_HDF5 $(HDF5_CFLAGS)
ANA_LIBS += $(HDF5_LIBS)
endif
ifeq ($(HAVE_LIBDWARF),1)
FEAT_CFLAGS += -DHAVE_LIBDWARF $(DWARF_CFLAGS)
ANA_LIBS += $(DWARF_LIBS)
REC_LIBS += $(DWARF_LIBS)
endif
ifeq ($(HAVE_LIBPFM),1)
FEAT_CFLAGS += -DHAVE_LIBPFM
REC_LIBS += -lpfm
endif
ifeq ($(HAVE_LZMA),1)
FEAT_CFLAGS += -DHAVE_LZMA
REC_LIBS += $(LZMA_LIBS)
ANA_LIBS += $(LZMA_LIBS)
endif

CFLAGS_ALL := $(BASE_CFLAGS) $(ZSTD_CFLAGS) $(FEAT_CFLAGS) $(CFLAGS)

# The build configuration (optional features found, compiler, flags) in a
# stamp that every object depends on: rewritten only when it changes, so
# installing libpfm4-dev (or ASAN=1, or new CFLAGS) and running make again
# rebuilds what it affects.  One line says what is enabled when it changes.
yesno = $(if $(1),yes,no ($(2)))
FEATURES := hdf5=$(HAVE_HDF5) libdwarf=$(HAVE_LIBDWARF) libpfm4=$(HAVE_LIBPFM) liblzma=$(HAVE_LZMA)
BUILD_CONFIG := $(FEATURES) cc=$(CC) flags=$(CFLAGS_ALL) $(SAN)
BUILD_STAMP := $(B)/build-config
ifneq ($(BUILD_CONFIG),$(file <$(BUILD_STAMP)))
$(shell mkdir -p $(B))
$(file >$(BUILD_STAMP),$(BUILD_CONFIG))
$(info features: HDF5 output $(call yesno,$(HAVE_HDF5),libhdf5-dev); DWARF symbols $(call yesno,$(HAVE_LIBDWARF),libdwarf-dev); PMU event names for pebs $(call yesno,$(HAVE_LIBPFM),libpfm4-dev))
endif
# The runtime is preloaded into other programs: no sanitizers, PIC, hidden
# symbols except the interposed ones.
RT_CFLAGS := $(CFLAGS_ALL) -fPIC -fvisibility=hidden -Irecord/common -Irecord/runtime

# ---- sources ------------------------------------------------------------------
FMT_SRC := $(wildcard formats/*.c)
RCOMMON_SRC := $(wildcard record/common/*.c)
RT_SRC := $(wildcard record/runtime/*.c)
INST_SRC := $(wildcard record/inst/*.c)
LAUNCH_SRC := $(wildcard record/*.c)
ANA_SRC := $(filter-out analyze/main.c,$(wildcard analyze/*.c))
UBENCH_SRC := $(wildcard tests/ubench/*.c)
KERNEL_SRC := $(wildcard tests/kernels/*.c)
UNIT_SRC := $(wildcard tests/unit/*_*.c)

obj = $(patsubst %.c,$(B)/$(1)/%.o,$(2))
FMT_OBJ := $(call obj,std,$(FMT_SRC))
FMT_PIC_OBJ := $(call obj,pic,$(FMT_SRC))
RCOMMON_OBJ := $(call obj,std,$(RCOMMON_SRC))
RCOMMON_PIC_OBJ := $(call obj,pic,$(RCOMMON_SRC))
RT_OBJ := $(call obj,pic,$(RT_SRC))
INST_OBJ := $(call obj,pic,$(INST_SRC))
LAUNCH_OBJ := $(call obj,std,$(LAUNCH_SRC))
ANA_OBJ := $(call obj,std,$(ANA_SRC))
UBENCH_BIN := $(patsubst tests/ubench/%.c,$(B)/ubench/%,$(UBENCH_SRC))
KERNEL_BIN := $(patsubst tests/kernels/%.c,$(B)/kernels/%,$(KERNEL_SRC))
KERNEL_INST_BIN := $(if $(INST_SRC),$(addsuffix -inst,$(KERNEL_BIN)))
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRC))
FUZZ_REPLAY := $(patsubst tests/fuzz/%_fuzz.c,$(B)/fuzz/%_replay,$(FUZZ_SRC))
UNIT_OBJ := $(call obj,std,$(UNIT_SRC))

LIBFMT := $(B)/libctformat.a
LIBFMT_PIC := $(B)/libctformat-pic.a
LIBRCOMMON := $(B)/librecord-common.a
LIBANA := $(B)/libanalyze.a
RUNTIME := $(B)/libcommrec.so
INST_RT := $(B)/libcommrec-inst.so
INST_RT_A := $(B)/libcommrec-inst.a
COMMREC := $(B)/commrec
COMMANALYZE := $(B)/commanalyze

PROGRAMS := $(if $(LAUNCH_SRC),$(COMMREC)) $(if $(RT_SRC),$(RUNTIME)) \
            $(if $(INST_SRC),$(INST_RT) $(INST_RT_A)) \
            $(if $(wildcard analyze/main.c),$(COMMANALYZE))

.PHONY: all deps check accuracy bench demo install clean programs tests fuzz required
all: programs tests
programs: $(PROGRAMS)
tests: $(UNIT_BIN) $(UBENCH_BIN) $(KERNEL_BIN) $(KERNEL_INST_BIN) $(FUZZ_REPLAY)

# ---- rules --------------------------------------------------------------------
required:
ifneq ($(strip $(MISSING_PKGS)),)
	@echo "commtrace needs the Debian package(s):$(MISSING_PKGS)" >&2
	@echo "  install them: apt-get install$(MISSING_PKGS)   (or, as root: make deps)" >&2
	@exit 1
endif

$(B)/std/%.o: %.c $(BUILD_STAMP) | required
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) $(SAN) -Irecord/common -Ianalyze -MMD -MP -c $< -o $@

$(B)/pic/%.o: %.c $(BUILD_STAMP) | required
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC PIC  $<")
	$(Q)$(CC) $(RT_CFLAGS) -MMD -MP -c $< -o $@

$(LIBFMT): $(FMT_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIBFMT_PIC): $(FMT_PIC_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIBRCOMMON): $(RCOMMON_OBJ) $(LIBFMT)
	$(Q)rm -f $@ && ar rcs $@ $(RCOMMON_OBJ)
$(LIBANA): $(ANA_OBJ) $(LIBFMT)
	$(Q)rm -f $@ && ar rcs $@ $(ANA_OBJ)

# The runtimes never link libpfm4: the launcher encodes PMU events.
RT_COMMON_OBJ := $(filter-out %/pmu_pfm.o,$(RCOMMON_PIC_OBJ))
$(RUNTIME): $(RT_OBJ) $(RCOMMON_PIC_OBJ) $(LIBFMT_PIC)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $(RT_OBJ) $(RT_COMMON_OBJ) $(LIBFMT_PIC) \
		$(ZSTD_LIBS) $(ZYDIS_LIBS) -ldl -lpthread -lrt -Wl,-z,nodelete

# The inst runtime: the same runtime plus the compiler-instrumentation entry
# points (__tsan_*) and libc bulk-copy interceptors; linked into programs
# built with commrec-cc instead of being preloaded.
RT_LIBS := $(ZSTD_LIBS) $(ZYDIS_LIBS) -ldl -lpthread -lrt
$(INST_RT): $(INST_OBJ) $(RT_OBJ) $(RCOMMON_PIC_OBJ) $(LIBFMT_PIC)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libcommrec-inst.so -o $@ $(INST_OBJ) $(RT_OBJ) $(RT_COMMON_OBJ) \
		$(LIBFMT_PIC) $(RT_LIBS) -Wl,-z,nodelete
$(INST_RT_A): $(INST_OBJ) $(RT_OBJ) $(RCOMMON_PIC_OBJ) $(FMT_PIC_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $(INST_OBJ) $(RT_OBJ) $(RT_COMMON_OBJ) $(FMT_PIC_OBJ)

$(COMMREC): $(LAUNCH_OBJ) $(LIBRCOMMON) $(LIBFMT)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $(LAUNCH_OBJ) $(LIBRCOMMON) $(LIBFMT) $(ZSTD_LIBS) $(ZYDIS_LIBS) $(REC_LIBS) -lpthread -lm

$(COMMANALYZE): $(B)/std/analyze/main.o $(LIBANA) $(LIBFMT)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(ZSTD_LIBS) $(ZYDIS_LIBS) $(ANA_LIBS) -lpthread -lm

$(B)/tests/fmt_%: $(B)/std/tests/unit/fmt_%.o $(LIBFMT)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN) -o $@ $^ $(ZSTD_LIBS) -lpthread -lm
$(B)/tests/rec_%: $(B)/std/tests/unit/rec_%.o $(LIBRCOMMON) $(LIBFMT)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN) -o $@ $^ $(ZSTD_LIBS) $(ZYDIS_LIBS) $(REC_LIBS) -lpthread -lm
$(B)/tests/ana_%: $(B)/std/tests/unit/ana_%.o $(LIBANA) $(LIBFMT)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN) -o $@ $^ $(ZSTD_LIBS) $(ZYDIS_LIBS) $(ANA_LIBS) -lpthread -lm

# Fuzz targets (tests/fuzz/NAME_fuzz.c, libFuzzer's LLVMFuzzerTestOneInput):
# `make fuzz` builds each with clang -fsanitize=fuzzer and runs it for
# FUZZ_TIME seconds on a copy of its corpus (tests/fuzz/corpus/NAME/, new
# inputs are kept in build/fuzz/NAME.corpus/); `make check` replays the
# committed corpus through the same entry point built by the normal
# compiler with -DCT_FUZZ_MAIN (tests/e2e/fuzz_corpus.sh).
FUZZ_TIME ?= 60
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	-Iformats $(ZSTD_CFLAGS) $(FEAT_CFLAGS)
$(B)/fuzz/%_fuzz: tests/fuzz/%_fuzz.c tests/fuzz/replay_main.h $(FMT_SRC) $(wildcard formats/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FMT_SRC) $(ZSTD_LIBS) $(DWARF_LIBS) $(LZMA_LIBS) -lm
$(B)/fuzz/%_replay: tests/fuzz/%_fuzz.c tests/fuzz/replay_main.h $(LIBFMT)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_ALL) $(SAN) -DCT_FUZZ_MAIN -o $@ $< $(LIBFMT) $(ZSTD_LIBS) \
		$(if $(filter 1,$(HAVE_LIBDWARF)),$(DWARF_LIBS)) $(LZMA_LIBS) -lm

# The unit tests' objects are built by a pattern rule only: keep them (make
# would delete them as intermediates and rebuild them every time).
.SECONDARY: $(UNIT_OBJ)

# Microbenchmarks: plain programs, never sanitized (they are recorded);
# they may use the markers of record/include/commrec.h; omp_*.c are OpenMP.
$(B)/ubench/%: tests/ubench/%.c tests/ubench/ubench.h record/include/commrec.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Irecord/include -pthread \
		$(if $(filter omp_%,$*),-fopenmp) -o $@ $< -lm

# Kernels (tests/kernels/README.md): plain, and instrumented for --sampler
# inst by commrec-cc with the runtime just built; omp_* need -fopenmp.
KERNEL_FLAGS = -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -pthread $(if $(filter omp_%,$*),-fopenmp)
$(B)/kernels/%-inst: tests/kernels/%.c tests/ubench/ubench.h record/commrec-cc $(INST_RT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  INSTCC  $@")
	$(Q)CC=$(CC) COMMREC_INST_LIBDIR=$(B) record/commrec-cc $(KERNEL_FLAGS) -o $@ $< -lm
$(B)/kernels/%: tests/kernels/%.c tests/ubench/ubench.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(KERNEL_FLAGS) -o $@ $< -lm

# MPI variant of the sweep (make MPI=1): commanalyze-mpi, ranks split grid
# points and traces; needs libopenmpi-dev (or any mpicc).
ifeq ($(MPI),1)
MPICC ?= mpicc
COMMANALYZE_MPI := $(B)/commanalyze-mpi
MPI_OBJ := $(B)/mpi/analyze/sweep_mpi.o $(B)/mpi/analyze/mpi/main_mpi.o
$(B)/mpi/%.o: %.c $(BUILD_STAMP) | required
	@mkdir -p $(@D)
	@$(if $(Q),echo "  MPICC   $<")
	$(Q)$(MPICC) $(CFLAGS_ALL) $(SAN) -DHAVE_MPI -Irecord/common -Ianalyze -MMD -MP -c $< -o $@
$(COMMANALYZE_MPI): $(MPI_OBJ) $(LIBANA) $(LIBFMT)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(MPICC) $(SAN) -o $@ $^ $(ZSTD_LIBS) $(ZYDIS_LIBS) $(ANA_LIBS) -lpthread -lm
programs: $(COMMANALYZE_MPI)
endif

-include $(shell find $(B) -name '*.d' 2>/dev/null)

# ---- top-level jobs -----------------------------------------------------------
deps:
	@MPI=$(MPI) scripts/deps.sh

check: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) ASAN=$(ASAN) tests/run.sh

accuracy: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) TEST_TIMEOUT=$${TEST_TIMEOUT:-3600} tests/run.sh tests/accuracy.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) tests/bench.sh

fuzz:
	@FUZZ=1 scripts/deps.sh
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@B=$(B) FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run.sh $(FUZZ_BIN)

demo: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) scripts/demo.sh

install: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/commtrace \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/include/commtrace
	install -m 755 $(filter $(COMMREC) $(COMMANALYZE) $(COMMANALYZE_MPI),$(PROGRAMS) $(COMMANALYZE_MPI)) \
		$(wildcard record/commrec-cc) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(filter %.so %.a,$(PROGRAMS)) $(LIBFMT) $(DESTDIR)$(PREFIX)/lib/commtrace/
	install -m 644 formats/commtrace.h $(DESTDIR)$(PREFIX)/include/commtrace/
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/doc/commtrace
	sed 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' doc/commtrace.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/commtrace.pc
	install -m 644 LICENSE README.md $(DESTDIR)$(PREFIX)/share/doc/commtrace/
	install -m 644 record/include/commrec.h $(DESTDIR)$(PREFIX)/include/
	sed 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' record/include/commrec.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/commrec.pc
	install -m 644 $(wildcard doc/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard doc/*.5) $(DESTDIR)$(PREFIX)/share/man/man5/

clean:
	rm -rf $(B)
