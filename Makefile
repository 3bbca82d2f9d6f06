# ccsynth - top-level Makefile.
#
#   make               build the ccsynth CLI and the runtime library
#   make test          build everything and run every test
#   make demo          the main job on the built-in default (dgx-h100)
#   make schedules     regenerate schedules/ from topologies/
#   make check-schedules  regenerate into a temp dir and compare byte for byte
#   make bench         run the benchmarks
#   make python        the ccs Python package, with libccs bundled, in a
#                      venv over Debian's packages ($(BUILD)/venv)
#   make install PREFIX=/usr/local   (ccs.pc gets that prefix, whatever
#                                     PREFIX the tree was built with)
#
#   make fuzz FUZZ_TIME=N  build tests/fuzz/fuzz_*.c with clang's libFuzzer
#                         (in build-fuzz/) and run each for N seconds
#
# Switches: DEBUG=1 (-O0 -g), ASAN=1 (address+undefined sanitizers; objects
# in build-asan/ unless BUILD says otherwise),
# CUDA=auto|0|1 (auto: compile CUDA parts when nvcc is found),
# MPI=auto|0|1 (auto: the mpi transport and ccs-perf when mpi.h is found;
# without, libccs has the threads transport and ccs_comm_init_mpi says
# CCS_ERR_UNSUPPORTED),
# BUILD=dir (object directory; lets several builds share one tree),
# WERROR=0 (drop -Werror).

ASAN    ?= 0
FUZZ    ?= 0
ifeq ($(ASAN),1)
BUILD   ?= build-asan
endif
BUILD   ?= build
PREFIX  ?= /usr/local
CUDA    ?= auto
MPI     ?= auto
CUDA_HOME ?= /usr/local/cuda
DEBUG   ?= 0
WERROR  ?= 1
V       ?= 0

CC      ?= cc
NVCC    ?= $(CUDA_HOME)/bin/nvcc
AR      ?= ar

ifeq ($(V),0)
Q := @
else
Q :=
endif

WARN    := -Wall -Wextra -Wstrict-prototypes -Wvla -Wshadow -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
ifeq ($(DEBUG),1)
OPT     := -O0 -g3
else
OPT     := -O2 -g
endif
SAN :=
ifeq ($(ASAN),1)
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
           -fno-omit-frame-pointer
endif
# The fuzz build (make fuzz): every object instrumented for libFuzzer's
# coverage; only the harnesses link libFuzzer's main.
ifeq ($(FUZZ),1)
SAN     := -fsanitize=fuzzer-no-link,address,undefined \
           -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif

DEPFLAGS = -MMD -MP
CFLAGS_COMMON := $(CSTD) $(OPT) $(WARN) $(SAN) -fPIC -pthread

# ---- third-party flags (pkg-config where the package ships a .pc) ----
PKG_CONFIG    ?= pkg-config
IGRAPH_CFLAGS := $(shell $(PKG_CONFIG) --cflags igraph 2>/dev/null)
IGRAPH_LIBS   := $(shell $(PKG_CONFIG) --libs igraph 2>/dev/null || echo -ligraph)
YAML_CFLAGS   := $(shell $(PKG_CONFIG) --cflags yaml-0.1 2>/dev/null)
YAML_LIBS     := $(shell $(PKG_CONFIG) --libs yaml-0.1 2>/dev/null || echo -lyaml)
XML_CFLAGS    := $(shell $(PKG_CONFIG) --cflags libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
XML_LIBS      := $(shell $(PKG_CONFIG) --libs libxml-2.0 2>/dev/null || echo -lxml2)
GLPK_LIBS     := -lglpk
MPI_CFLAGS    := $(shell $(PKG_CONFIG) --cflags ompi-c 2>/dev/null)
MPI_LIBS      := $(shell $(PKG_CONFIG) --libs ompi-c 2>/dev/null || echo -lmpi)
ifeq ($(MPI),auto)
HAVE_MPI := $(shell printf '\043include <mpi.h>\n' | \
              $(CC) $(MPI_CFLAGS) -E -x c - >/dev/null 2>&1 && echo 1 || echo 0)
else
HAVE_MPI := $(MPI)
endif
ifneq ($(HAVE_MPI),1)
MPI_CFLAGS :=
MPI_LIBS   :=
endif

# CUDA: auto-detect nvcc.
ifeq ($(CUDA),auto)
HAVE_CUDA := $(shell test -x $(NVCC) && echo 1 || echo 0)
else
HAVE_CUDA := $(CUDA)
endif
CUDA_CFLAGS := -I$(CUDA_HOME)/include
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
CUDA_LIBS   := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lnccl -lcudart -lstdc++
# Hopper first; sm_80 for A100s; PTX for what comes after.
NVCC_ARCH   ?= -gencode arch=compute_80,code=sm_80 \
               -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
NVCC_FLAGS  := -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC \
               -Xcompiler -Wall -Xcompiler -fvisibility=hidden

# ---- runtime library (libccs) ----
# Plain C files; the transport files that need MPI or CUDA headers are
# chosen by name below.
RT_C_ALL   := $(sort $(wildcard runtime/*.c))
RT_MPI_C   := $(if $(filter 1,$(HAVE_MPI)),$(filter runtime/xport_mpi.c,$(RT_C_ALL)))
RT_GPU_C   := $(filter runtime/xport_cuda.c runtime/xport_nccl.c,$(RT_C_ALL))
RT_C       := $(filter-out runtime/xport_mpi.c $(RT_GPU_C),$(RT_C_ALL))
RT_CU      := $(sort $(wildcard runtime/*.cu))
RT_OBJS    := $(RT_C:%.c=$(BUILD)/%.o) $(RT_MPI_C:%.c=$(BUILD)/%.o)
RT_LIBS    := $(MPI_LIBS) -lm -pthread
RT_DEFS    := $(if $(filter 1,$(HAVE_MPI)),-DCCS_HAVE_MPI=1)
ifeq ($(HAVE_CUDA),1)
RT_OBJS    += $(RT_GPU_C:%.c=$(BUILD)/%.o) $(RT_CU:%.cu=$(BUILD)/%.cu.o)
RT_LIBS    += $(CUDA_LIBS)
RT_DEFS    += -DCCS_HAVE_CUDA=1
endif
RT_CFLAGS  := $(CFLAGS_COMMON) -fvisibility=hidden $(RT_DEFS) -iquote runtime
LIBCCS_A   := $(BUILD)/lib/libccs.a
LIBCCS_SO  := $(BUILD)/lib/libccs.so

# ---- synthesizer (ccsynth) ----
# synth/ is layered; each layer sees its own headers and those of the
# layers below it, so an upward include does not compile:
#   cli -> tune -> {algo, msccl -> {sim, verify}} -> topo -> util -> runtime
# (algorithms only build IR: they see neither the simulator nor the verifier)
SY_LAYERS  := util topo verify sim algo msccl tune cli
SY_SEES_util   := util
SY_SEES_topo   := topo util
SY_SEES_verify := verify topo util
SY_SEES_sim    := sim topo util
SY_SEES_algo   := algo topo util
SY_SEES_msccl  := msccl sim verify topo util
SY_SEES_tune   := tune algo msccl sim verify topo util
SY_SEES_cli    := cli tune algo msccl sim verify topo util
sy_inc      = $(foreach d,$(SY_SEES_$(1)),-iquote synth/$(d)) -iquote runtime
SY_C       := $(sort $(wildcard $(SY_LAYERS:%=synth/%/*.c)))
SY_LIB_C   := $(filter-out synth/cli/main.c,$(SY_C))
SY_OBJS    := $(SY_LIB_C:%.c=$(BUILD)/%.o)
SY_CFLAGS  := $(CFLAGS_COMMON) $(IGRAPH_CFLAGS) $(YAML_CFLAGS)
# Tests and GPU programs may use any module.
SY_ALL_INC := $(call sy_inc,cli)
SY_LIBS    := $(IGRAPH_LIBS) $(YAML_LIBS) $(XML_LIBS) $(GLPK_LIBS) -lm -pthread
LIBSYNTH_A := $(BUILD)/lib/libccsynth.a
CCSYNTH    := $(BUILD)/bin/ccsynth

# ---- tools built on the runtime (ccs-perf) ----
# ccs-perf drives MPI itself (its -B baseline is MPI's own collective).
TOOL_C     := $(if $(filter 1,$(HAVE_MPI)),$(sort $(wildcard tools/*.c)))
TOOLS      := $(TOOL_C:tools/%.c=$(BUILD)/bin/%)

# ---- tests: every tests/unit/test_*.c is one program ----
TEST_C     := $(sort $(wildcard tests/unit/test_*.c))
TESTS      := $(TEST_C:tests/unit/%.c=$(BUILD)/tests/%)

PC_FILE    := $(BUILD)/lib/pkgconfig/ccs.pc

.PHONY: all deps test run-tests unit-tests demo run-demo schedules check-schedules bench \
        install clean gpu-check python
all: $(CCSYNTH) $(LIBCCS_A) $(LIBCCS_SO) $(TOOLS) $(PC_FILE)

deps:
	$(Q)bash scripts/install-deps.sh

# -- compile rules --
$(BUILD)/runtime/xport_mpi.o: runtime/xport_mpi.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(RT_CFLAGS) $(MPI_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/runtime/xport_cuda.o $(BUILD)/runtime/xport_nccl.o: $(BUILD)/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(RT_CFLAGS) $(CUDA_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The reduction kernels need loop vectorisation with remainders (gcc's -O2
# very-cheap cost model leaves such loops scalar; clang, used by the fuzz
# build, has no such flag and vectorises them anyway); the CPU-specific
# variants inside pick their instruction sets with target attributes.
VECT_FLAGS := $(shell $(CC) -fvect-cost-model=dynamic -x c -c /dev/null \
                -o /dev/null 2>/dev/null && echo -fvect-cost-model=dynamic)
$(BUILD)/runtime/reduce.o: RT_CFLAGS += $(VECT_FLAGS)

$(BUILD)/runtime/%.cu.o: runtime/%.cu
	@mkdir -p $(@D)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) $(NVCC_FLAGS) $(RT_DEFS) -c $< -o $@

$(BUILD)/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(RT_CFLAGS) $(DEPFLAGS) -c $< -o $@

define sy_layer_rule
$$(BUILD)/synth/$(1)/%.o: synth/$(1)/%.c
	@mkdir -p $$(@D)
	@echo "  CC      $$<"
	$$(Q)$$(CC) $$(SY_CFLAGS) $$(call sy_inc,$(1)) $$(DEPFLAGS) -c $$< -o $$@
endef
$(foreach l,$(SY_LAYERS),$(eval $(call sy_layer_rule,$(l))))

# Only the MSCCL layer reads XML (libxml2); its headers stay out of the
# others' include paths.
$(BUILD)/synth/msccl/%.o: SY_CFLAGS += $(XML_CFLAGS)

# -- libraries --
$(LIBCCS_A): $(RT_OBJS)
	@mkdir -p $(@D)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(LIBCCS_SO): $(RT_OBJS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -shared $(SAN) -Wl,-soname,libccs.so -o $@ $^ $(RT_LIBS)

$(LIBSYNTH_A): $(SY_OBJS)
	@mkdir -p $(@D)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

CCS_VERSION := $(shell awk '/define CCS_VERSION_MAJOR/{a=$$3}/define CCS_VERSION_MINOR/{b=$$3}/define CCS_VERSION_PATCH/{c=$$3}END{print a"."b"."c}' runtime/ccs.h)

$(PC_FILE): Makefile runtime/ccs.h
	@mkdir -p $(@D)
	$(Q)printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: ccs\nDescription: ccsynth runtime: replay synthesized collective schedules\nVersion: %s\nLibs: -L$${libdir} -lccs\nLibs.private: %s\nCflags: -I$${includedir}\n' \
	    '$(PREFIX)' '$(CCS_VERSION)' '$(RT_LIBS)' > $@

# -- programs --
$(CCSYNTH): $(BUILD)/synth/cli/main.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

$(BUILD)/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(RT_CFLAGS) $(MPI_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/bin/%: $(BUILD)/tools/%.o $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(RT_LIBS)

# Tests link both libraries so any module can be unit-tested.
$(BUILD)/tests/%.o: tests/unit/%.c tests/unit/harness.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) $(MPI_CFLAGS) $(RT_DEFS) -iquote tests/unit $(DEPFLAGS) -c $< -o $@

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) $(TEST_LDFLAGS) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

# The allocator hook for fail-the-Nth-allocation tests is the linker's:
# every malloc/calloc/realloc/free call in the program and in the static
# libraries goes to the test's __wrap_* functions.
$(BUILD)/tests/test_alloc_fail: TEST_LDFLAGS := \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

# -- programs that e2e tests and benchmarks run: built here with the
# project's flags (and rebuilt when a library changes), not by the scripts.
E2E_PROGS   := $(BUILD)/e2e/verify_fixture
BENCH_PROGS := $(BUILD)/bench/bench_verify
$(BUILD)/e2e/%.o: tests/e2e/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) $(RT_DEFS) -iquote tests/unit $(DEPFLAGS) -c $< -o $@

$(BUILD)/bench/%.o: tests/bench/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) $(RT_DEFS) -iquote tests/unit $(DEPFLAGS) -c $< -o $@

$(BUILD)/e2e/%: $(BUILD)/e2e/%.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

e2e-progs: $(E2E_PROGS)
bench-progs: $(BENCH_PROGS)
.PHONY: e2e-progs bench-progs

# -- GPU programs: test_gpu_nodevice needs the CUDA headers
# in a CUDA build; tests/gpu/*.c are GPU-only test and benchmark programs,
# built by `make gpu-progs` (scripts/gpu-check.sh), not by `make test`.
GPU_PROG_C := $(sort $(wildcard tests/gpu/*.c))
GPU_PROGS  := $(GPU_PROG_C:tests/gpu/%.c=$(BUILD)/gpu/%)
ifeq ($(HAVE_CUDA),1)
$(BUILD)/tests/test_gpu_nodevice.o $(BUILD)/tests/test_cuda_mock.o \
$(BUILD)/tests/fake_cuda.o: SY_CFLAGS += $(CUDA_CFLAGS)
# The fake CUDA runtime (tests/unit/fake_cuda.h) must come before the
# libraries on the link line, so that its cuda* and ccs_reduce_cuda
# definitions are the ones taken.
FAKE_CUDA_O := $(BUILD)/tests/fake_cuda.o
$(BUILD)/tests/test_cuda_mock: $(BUILD)/tests/test_cuda_mock.o $(FAKE_CUDA_O) \
    $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) $(TEST_LDFLAGS) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

# The GPU test of the cuda transport, linked against the fake runtime: no
# device needed.  `make test` runs its small subset (scripts/run-tests.sh
# passes --small); `make cuda-fake-full` runs all of it (minutes).
CUDA_FAKE_XPORT := $(BUILD)/tests/test_cuda_xport_fake
$(BUILD)/tests/test_cuda_xport_fake.o: tests/gpu/test_cuda_xport.c \
    tests/unit/harness.h tests/unit/fake_cuda.h
	@mkdir -p $(@D)
	@echo "  CC      $< (fake CUDA)"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) $(CUDA_CFLAGS) $(RT_DEFS) -DCCS_FAKE_CUDA=1 -Itests/unit $(DEPFLAGS) -c $< -o $@

$(CUDA_FAKE_XPORT): $(BUILD)/tests/test_cuda_xport_fake.o $(FAKE_CUDA_O) \
    $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

cuda-fake-full: $(CUDA_FAKE_XPORT)
	$(Q)$(CUDA_FAKE_XPORT)

# ccs-perf drives the cuda and nccl transports (device buffers, NCCL init).
$(BUILD)/tools/ccs-perf.o: RT_CFLAGS += $(CUDA_CFLAGS)

$(BUILD)/gpu/%.o: tests/gpu/%.c tests/unit/harness.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) $(MPI_CFLAGS) $(CUDA_CFLAGS) $(RT_DEFS) -Itests/unit $(DEPFLAGS) -c $< -o $@

$(BUILD)/gpu/%: $(BUILD)/gpu/%.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(SAN) -o $@ $^ $(SY_LIBS) $(RT_LIBS)

gpu-progs: $(GPU_PROGS)
else
gpu-progs:
	@echo "gpu-progs: no CUDA toolkit ($(NVCC) not found, or CUDA=0)" >&2; exit 1
cuda-fake-full:
	@echo "cuda-fake-full: skipped: no CUDA headers ($(NVCC) not found, or CUDA=0)"
endif
unit-tests run-tests: $(CUDA_FAKE_XPORT)
.PHONY: gpu-progs cuda-fake-full

# -- fuzzing: tests/fuzz/fuzz_<target>.c, seeds in tests/fuzz/corpus/<target>/
FUZZ_TIME  ?= 10
FUZZ_CC    ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_C     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_PROGS := $(FUZZ_C:tests/fuzz/%.c=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%.o: tests/fuzz/%.c tests/fuzz/fuzz_common.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(SY_CFLAGS) $(SY_ALL_INC) -iquote synth/topo $(RT_DEFS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzz/%: $(BUILD)/fuzz/%.o $(LIBSYNTH_A) $(LIBCCS_A)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(SY_LIBS) $(RT_LIBS)

fuzz-progs: $(FUZZ_PROGS)

# A separate object directory: the fuzz build's instrumentation must not
# mix with the normal one.  CUDA stays out (nvcc objects carry no coverage).
fuzz: deps
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) \
	    FUZZ=1 CUDA=0 fuzz-progs
	$(Q)FUZZ_TIME=$(FUZZ_TIME) BUILD=$(FUZZ_BUILD) bash scripts/fuzz.sh
.PHONY: fuzz fuzz-progs

# -- top-level jobs --
unit-tests: $(TESTS)

# test and demo install missing packages first, then build in a second make:
# the flags above come from pkg-config when this Makefile is read, which on
# a fresh machine is before scripts/install-deps.sh has installed pkg-config
# and the -dev packages, so only a make started after it sees them.
test: deps
	$(Q)$(MAKE) --no-print-directory run-tests

demo: deps
	$(Q)$(MAKE) --no-print-directory run-demo

# Sanitizer runs: the programs e2e scripts compile themselves link with the
# same flags (CCS_SAN_FLAGS), and LeakSanitizer ignores leaks that Open MPI
# makes (tests/lsan-openmpi.supp names MPI's libraries only, never libccs).
# For the suppressions to see those libraries, Open MPI must keep its
# components loaded (no dlclose at MPI_Finalize) and stacks must be
# unwound in full (Open MPI is built without frame pointers), which makes
# every MPI start cost seconds: CCS_E2E_SMALL=1 has the e2e scripts take
# fewer process counts and sizes, each path still covered.
ifneq ($(SAN),)
SAN_ENV := CCS_SAN_FLAGS="$(SAN)" CCS_E2E_SMALL=1 \
    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan-openmpi.supp:print_suppressions=0 \
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:fast_unwind_on_malloc=0 \
    OMPI_MCA_mca_base_component_disable_dlclose=1
# Without MPI the full unwind buys nothing and makes every malloc slow:
# unit-check and run-tests' unit-test programs run without it.
SAN_UNIT_OPTS := protect_shadow_gap=0:detect_leaks=1
SAN_ENV_UNIT := ASAN_OPTIONS=$(SAN_UNIT_OPTS)
SAN_ENV += CCS_UNIT_ASAN_OPTIONS=$(SAN_UNIT_OPTS)
endif

run-tests: all $(TESTS) $(E2E_PROGS)
	$(Q)BUILD=$(BUILD) $(SAN_ENV) bash scripts/run-tests.sh

# The unit-test programs only, no e2e scripts and not the fake-CUDA run of
# the cuda transport's GPU test: a quicker local check (CI runs the whole
# suite, `make test` and `make ASAN=1 test`).
unit-check: $(TESTS)
	$(Q)rc=0; for t in $(TESTS); do \
	    if out=$$($(SAN_ENV_UNIT) $$t 2>&1); then \
	        printf '  %-28s %s\n' "$$(basename $$t)" "$$(printf '%s\n' "$$out" | tail -n 1)"; \
	    else \
	        printf '%s\n' "$$out" | tail -n 40; echo "  $$t FAILED"; rc=1; \
	    fi; \
	done; exit $$rc
.PHONY: unit-check

run-demo: all
	$(Q)BUILD=$(BUILD) bash scripts/demo.sh

schedules: all
	$(Q)CCSYNTH=$(CCSYNTH) bash scripts/gen-schedules.sh schedules

check-schedules: all
	$(Q)CCSYNTH=$(CCSYNTH) bash scripts/gen-schedules.sh --check schedules

bench: all
	$(Q)BUILD=$(BUILD) bash scripts/bench.sh

gpu-check:
	$(Q)bash scripts/gpu-check.sh

# The Python package: Debian's interpreter (a python3 earlier on PATH, such
# as pyenv's, does not see python3-torch), a venv that sees its packages,
# and python/ installed from a copy with libccs.so inside (so neither
# CCS_LIBRARY nor an installed libccs is needed).  No network: pip builds
# with Debian's setuptools.
PYTHON ?= /usr/bin/python3
VENV   := $(BUILD)/venv
python: $(LIBCCS_SO)
	$(Q)test -x $(VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(Q)rm -rf $(BUILD)/pypkg && cp -r python $(BUILD)/pypkg && \
	    rm -rf $(BUILD)/pypkg/build $(BUILD)/pypkg/*.egg-info && \
	    cp $(LIBCCS_SO) $(BUILD)/pypkg/ccs/libccs.so
	$(Q)$(VENV)/bin/pip install -q --no-build-isolation --no-deps \
	    --force-reinstall $(BUILD)/pypkg
	@echo "python: $(VENV)/bin/python -c 'import ccs, ccs.torch' works"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib \
	    $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(CCSYNTH) $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBCCS_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBCCS_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 runtime/ccs.h $(DESTDIR)$(PREFIX)/include/
	sed 's|^prefix=.*|prefix=$(PREFIX)|' $(PC_FILE) > \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig/ccs.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/ccs.pc

clean:
	rm -rf $(BUILD)

.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
