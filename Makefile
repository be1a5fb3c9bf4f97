# llmbox — see README.md. The two commands: `make run` and `make test`.
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2
CPPFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude -Iserver -I/usr/include/postgresql -MMD -MP
HARDEN   := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
LDLIBS   := -linih -lfcgi -lcurl -lcjson -larchive -lmagic -lsqlite3 -lpq -lssl -lcrypto -ldl -lpthread -lyaml
# the unit tests and fuzz drivers link every object but the two main()s
TEST_LDLIBS := $(LDLIBS) -lseccomp
BUILD    := build

# server/stateio/ is build/llmbox-stateio's alone (below)
SRC      := $(filter-out server/stateio/% server/unpack/%,$(wildcard server/*.c server/*/*.c))
OBJ      := $(SRC:%.c=$(BUILD)/%.o)
LIBOBJ   := $(filter-out $(BUILD)/server/main.o $(BUILD)/server/sandboxd/main.o,$(OBJ))

# Two executables, split at the privilege boundary (docs/ARCHITECTURE.md):
# build/llmbox (web, agent, run, ...; user llmbox) never links the root-only
# code of server/sandboxd/ (the daemon), server/insandbox/ (what it runs
# inside a sandbox) and server/sandboxd_image/ (its image builder), and
# build/llmbox-sandboxd (root) links only those three folders,
# the frames and requests of server/sandbox/ and the
# parts of server/common/ listed here, with SD_LDLIBS: no libcurl,
# libarchive, libmagic, libfcgi, SQLite or OpenSSL in the root process
# (tests/integration/test_sandboxd_binary.py checks `ldd`).
SD_COMMON := buf config config_file config_host config_mcp config_model config_user image_ref log netcheck node_id path status token_check util utf8 netpolicy config_secret
SD_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(wildcard server/sandboxd/*.c server/insandbox/*.c server/sandboxd_image/*.c server/volumes/*.c)) \
            $(BUILD)/server/sandbox/rpc_frame.o $(BUILD)/server/sandbox/rpc_proto.o \
            $(SD_COMMON:%=$(BUILD)/server/common/%.o)
SD_LDLIBS := -linih -lcjson -lseccomp -lpthread
MAIN_OBJ := $(filter-out $(BUILD)/server/sandboxd/% $(BUILD)/server/insandbox/% $(BUILD)/server/sandboxd_image/% $(BUILD)/server/volumes/%,$(OBJ))

PLUGIN_DIRS := $(wildcard plugins/*/)
PLUGINS     := $(patsubst plugins/%/,plugins/%.so,$(PLUGIN_DIRS))
# tests/plugins/prebuilt-*/ holds plugins built before the plugin macros (its README)
FIXTURE_DIRS := $(filter-out tests/plugins/prebuilt-%,$(wildcard tests/plugins/*/))
FIXTURES     := $(patsubst tests/plugins/%/,tests/plugins/%.so,$(FIXTURE_DIRS))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps run test image clean unit fixtures bench load demo fuzz fuzz-build check-asan check-valgrind cluster-load webs-full cluster cluster-sandboxes images-1000 capacity
all: $(BUILD)/llmbox $(BUILD)/llmbox-sandboxd $(BUILD)/llmbox-stateio $(BUILD)/llmbox-unpack $(PLUGINS)

# build/llmbox-stateio packs and unpacks a sandbox's saved state (follow-ups;
# server/stateio/stateio.h): sandboxd starts it inside the sandbox's user
# namespace, so libarchive never runs in the root daemon nor as host root.
ST_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard server/stateio/*.c))
$(BUILD)/llmbox-stateio: $(ST_OBJ)
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -Wl,--as-needed -o $@ $^ -larchive

# build/llmbox-unpack extracts image layers (server/unpack/unpack.h): `llmbox
# image import` starts it in a user namespace of the images' ids, so a
# layer's tar is never read by root.
UP_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard server/unpack/*.c))
$(BUILD)/llmbox-unpack: $(UP_OBJ)
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -Wl,--as-needed -o $@ $^ -larchive

$(BUILD)/llmbox: $(MAIN_OBJ)
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -o $@ $^ $(LDLIBS)

# --as-needed: a library the objects do not use is not even loaded
$(BUILD)/llmbox-sandboxd: $(SD_OBJ)
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -Wl,--as-needed -o $@ $^ $(SD_LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(HARDEN) -fvisibility=hidden -c -o $@ $<

# A plugin is every .c in its folder, linked into plugins/NAME.so with the
# service's warnings (-Werror: a warning fails the plugin's build) and
# -lcjson, plus what two optional files in the folder add: CFLAGS and LDLIBS
# (flags separated by blanks, `#` starts a comment; e.g. LDLIBS: -lm).
# The .so is replaced atomically (agents may be loading it). Under
# `make run` (PLUGINS_KEEP_GOING=1) a plugin that does not build is
# reported and skipped, so one plugin's mistake does not stop the service;
# `make all`, `make unit` and `make test` stop on it.
PLUGIN_CPPFLAGS := $(filter-out -MMD -MP,$(CPPFLAGS))
plugin_file = $(if $(wildcard plugins/$(1)/$(2)),$(shell sed 's/\#.*//' plugins/$(1)/$(2)))
.SECONDEXPANSION:
plugins/%.so: $$(wildcard plugins/%/*.c) $$(wildcard plugins/%/*.h) $$(wildcard plugins/%/CFLAGS plugins/%/LDLIBS) include/llmbox/tool.h
	$(CC) $(PLUGIN_CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden $(call plugin_file,$*,CFLAGS) \
	    -o $@.tmp $(filter %.c,$^) -lcjson $(call plugin_file,$*,LDLIBS) || { rm -f $@.tmp; \
	    $(if $(PLUGINS_KEEP_GOING),echo "llmbox: plugins/$* did not build (see above); skipped: $(if $(wildcard $@),the previous $@ stays,the tool is not available)" >&2; exit 0,exit 1); }
	@if [ -f $@.tmp ]; then mv -f $@.tmp $@; fi

tests/plugins/%.so: $$(wildcard tests/plugins/%/*.c) include/llmbox/tool.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -w -fPIC -shared -fvisibility=hidden -o $@ $(filter %.c,$^) -lcjson

$(BUILD)/tests/%: tests/unit/%.c $(LIBOBJ) tests/unit/testlib.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Itests/unit -o $@ $< $(LIBOBJ) $(UNIT_LDFLAGS) $(TEST_LDLIBS)

# test_cgroup runs cgroup.c against a simulated cgroupfs: mkdir, rmdir and
# write go through the model in tests/unit/cgroupfs_model.h
$(BUILD)/tests/test_cgroup: UNIT_LDFLAGS := -Wl,--wrap=mkdir,--wrap=rmdir,--wrap=write
# test_uidslot makes mount_setattr fail as on a kernel without idmapped mounts
$(BUILD)/tests/test_uidslot: UNIT_LDFLAGS := -Wl,--wrap=mount_setattr

fixtures: $(FIXTURES)
unit: $(UNIT_BIN) $(FIXTURES) $(PLUGINS)

# Installs missing Debian packages (apt) and creates the service user.
deps:
	@scripts/deps.sh

# Builds the default sandbox image once (debootstrap); kept in var/images.
# (defined before the rule: make expands a rule's prerequisites as it reads it)
IMAGE_DIR := var/images/default
IMAGE_SRC := images/default/packages $(wildcard images/default/setup.sh)
image: all $(IMAGE_DIR)/.complete

# Rebuilt when its package list or setup.sh changes, told by content: the
# image keeps the sha256 of what it was built from in .source-sha256, so a
# copied, already-built image is not rebuilt because a fresh clone's files
# are newer (--force swaps the new root in atomically; do not rebuild while
# sandboxes of a running llmbox use it). An image built before the stamp
# existed is taken as current once (make image-rebuild forces a build).
.PHONY: $(IMAGE_DIR)/.complete image-rebuild
$(IMAGE_DIR)/.complete:
	@want=$$(sha256sum $(IMAGE_SRC) | sha256sum | cut -d' ' -f1); stamp=$(IMAGE_DIR)/.source-sha256; \
	if [ -f $@ ] && [ ! -f $$stamp ]; then \
	    echo "llmbox: $(IMAGE_DIR) has no .source-sha256; taking it as built from images/default (make image-rebuild to rebuild)"; \
	    echo $$want > $$stamp.tmp && mv -f $$stamp.tmp $$stamp; \
	fi; \
	if [ ! -f $@ ]; then $(BUILD)/llmbox image build default || exit 1; \
	elif [ "$$(cat $$stamp)" != "$$want" ]; then \
	    echo "llmbox: images/default changed; rebuilding the default image"; \
	    $(BUILD)/llmbox image build --force default || exit 1; \
	else exit 0; fi; \
	echo $$want > $$stamp.tmp && mv -f $$stamp.tmp $$stamp
image-rebuild: all
	@$(BUILD)/llmbox image build --force default && \
	    sha256sum $(IMAGE_SRC) | sha256sum | cut -d' ' -f1 > $(IMAGE_DIR)/.source-sha256.tmp && \
	    mv -f $(IMAGE_DIR)/.source-sha256.tmp $(IMAGE_DIR)/.source-sha256

run: deps
	@$(MAKE) --no-print-directory all PLUGINS_KEEP_GOING=1
	@$(MAKE) --no-print-directory image
	@scripts/run.sh

test: deps
	@$(MAKE) --no-print-directory all unit
	@$(MAKE) --no-print-directory image
	@tests/run.sh

# The paper's four showcase tasks through the real service, scripted
# (no LLM needed); outputs land in demo/out/. See demo/showcase.py.
demo: deps
	@$(MAKE) --no-print-directory all image
	@python3 demo/showcase.py

bench: deps
	@$(MAKE) --no-print-directory all image
	@bench/run.sh

# The load suites of tests/load at full size (256 tasks at once, 1,000 event
# streams, wrk for 10 s) with their figures; `make test` runs them scaled down.
load: deps
	@$(MAKE) --no-print-directory all image
	@tests/load/run.sh

# several nodes: the queue at full size: 2,000 llm-mode tasks over three `llmbox
# node` processes on a real PostgreSQL, each claimed once (make test runs
# 300 of them in tests/integration/test_node_queue.py)
cluster-load: deps
	@$(MAKE) --no-print-directory all
	@LLMBOX_NODE_LOAD_N=2000 python3 tests/integration/test_node_queue.py claims_once
# several nodes, stateless webs: tests/integration/test_stateless_webs.py at full
# size (200 event streams over two webs, and through HAProxy with one web
# killed under them); `make test` runs it with 12.
webs-full: deps
	@$(MAKE) --no-print-directory all image
	@LLMBOX_TEST_STREAMS=200 python3 tests/integration/test_stateless_webs.py

# several nodes: what one web node and one sandbox node sustain, each beside a
# peer in the same run (bench/capacity.py; figures in bench/RESULTS.md).
# `make bench` runs it too; CAPACITY_ARGS=--quick for a minute's version.
capacity: deps
	@$(MAKE) --no-print-directory all image
	@python3 bench/capacity.py $(CAPACITY_ARGS)

# several nodes: a cluster on one machine (scripts/cluster.sh; docs/OPERATIONS.md
# "A cluster on one machine"): up, prints the balancer's URL, Ctrl-C = down
cluster: deps
	@$(MAKE) --no-print-directory all PLUGINS_KEEP_GOING=1
	@$(MAKE) --no-print-directory image
	@scripts/cluster.sh run

# several nodes's acceptance for API sandboxes: 1,000 through the balancer of
# scripts/cluster.sh (create, upload, exec, download, destroy), spread over
# the three nodes within 15 %, nothing left: tests/integration/test_cluster.py
# at full size (`make test` runs it with 60)
cluster-sandboxes: deps
	@$(MAKE) --no-print-directory all image
	@LLMBOX_CLUSTER_SANDBOXES=1000 python3 tests/integration/test_cluster.py

# 1,000 layered images on one shared base (make test imports 150)
images-1000: deps
	@$(MAKE) --no-print-directory all image
	@LLMBOX_SHARED_BASE_IMAGES=1000 python3 tests/integration/test_images_shared_base.py

# ---- fuzzing (libFuzzer, clang) and sanitizer builds ----------------------
# `make fuzz` runs every tests/fuzz/fuzz_*.c target for FUZZ_SECONDS each on
# its seed corpus (new inputs go to build-fuzz/corpus/, not into the repo);
# `make test` runs each for a few seconds (tests/fuzz/run.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIBOBJ  := $(LIBOBJ:$(BUILD)/%=build-fuzz/obj/%)

build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -w -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_LIBOBJ)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $< $(FUZZ_LIBOBJ) $(TEST_LDLIBS)
# the state helper's name check (follow-ups) is not in LIBOBJ: its own object
build-fuzz/fuzz_state_path: tests/fuzz/fuzz_state_path.c build-fuzz/obj/server/stateio/stateio_path.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^

build-fuzz/fuzz_fs_meta: tests/fuzz/fuzz_fs_meta.c build-fuzz/obj/server/sandboxd/sandbox_fs.o build-fuzz/obj/server/sandboxd/image_user.o build-fuzz/obj/server/sandboxd/reply.o build-fuzz/obj/server/common/path.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/buf.o build-fuzz/obj/server/common/status.o build-fuzz/obj/server/common/utf8.o build-fuzz/obj/server/common/log.o build-fuzz/obj/server/sandbox/rpc_frame.o build-fuzz/obj/server/sandbox/rpc_proto.o build-fuzz/obj/server/common/image_ref.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^ -lcjson

build-fuzz/fuzz_image_user: tests/fuzz/fuzz_image_user.c build-fuzz/obj/server/sandboxd/image_user.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/status.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^

build-fuzz/fuzz_volume_meta: tests/fuzz/fuzz_volume_meta.c build-fuzz/obj/server/volumes/volume_meta.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^ -lcjson

build-fuzz/fuzz_image_ref: tests/fuzz/fuzz_image_ref.c build-fuzz/obj/server/common/image_ref.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/status.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^

build-fuzz/fuzz_reg_challenge: tests/fuzz/fuzz_reg_challenge.c build-fuzz/obj/server/images/registry_auth.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/status.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^ -lcjson -lcrypto

build-fuzz/fuzz_dockerfile: tests/fuzz/fuzz_dockerfile.c build-fuzz/obj/server/images/dockerfile_parse.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/buf.o build-fuzz/obj/server/common/path.o build-fuzz/obj/server/common/utf8.o build-fuzz/obj/server/common/status.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^ -lcjson

build-fuzz/fuzz_e2b_template_steps: tests/fuzz/fuzz_e2b_template_steps.c build-fuzz/obj/server/e2b/e2b_template_steps.o build-fuzz/obj/server/common/image_ref.o build-fuzz/obj/server/images/dockerfile_parse.o build-fuzz/obj/server/common/util.o build-fuzz/obj/server/common/buf.o build-fuzz/obj/server/common/path.o build-fuzz/obj/server/common/utf8.o build-fuzz/obj/server/common/status.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^ -lcjson
# the gateway's request reader alone: no other object needed
build-fuzz/fuzz_netgw_http: tests/fuzz/fuzz_netgw_http.c build-fuzz/obj/server/netgw/netgw_http.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^

# the unpacker's name check (server/unpack/) is not in LIBOBJ either
build-fuzz/fuzz_layer_path: tests/fuzz/fuzz_layer_path.c build-fuzz/obj/server/unpack/unpack_path.o
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -w -o $@ $^

fuzz-build: $(FUZZ_BIN)
# keep the instrumented objects (make would delete them as intermediates and
# rebuild all of them for each new target) and follow header changes
.SECONDARY: $(FUZZ_LIBOBJ)
-include $(FUZZ_LIBOBJ:.o=.d)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

# tests/run.sh (all but the browser suite) against an AddressSanitizer +
# UBSan build (build-asan/); the suites pick the binary up from BUILD. Plugins and test
# fixtures stay plain builds (plugins/*.so is shared by both builds, and a
# sanitized plugin cannot load into the plain binary).
# Every sanitized process (the web, its agents, sandboxd, the unit tests)
# writes its report to ASAN_REPORTS (writable by the web's user): a leak in
# an agent that has finished its task fails the run too (tests/run.sh).
ASAN_REPORTS := $(CURDIR)/build-asan/reports
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
check-asan: deps
	@$(MAKE) --no-print-directory all fixtures
	@$(MAKE) --no-print-directory BUILD=build-asan CC=clang CFLAGS="$(ASAN_CFLAGS)" \
	    build-asan/llmbox build-asan/llmbox-sandboxd $(UNIT_SRC:tests/unit/%.c=build-asan/tests/%)
	@$(MAKE) --no-print-directory image
	@rm -rf $(ASAN_REPORTS) && mkdir -p $(ASAN_REPORTS) && chmod 1777 $(ASAN_REPORTS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$(ASAN_REPORTS)/asan \
	    UBSAN_OPTIONS=print_stacktrace=1:log_path=$(ASAN_REPORTS)/ubsan \
	    SANITIZER_REPORTS=$(ASAN_REPORTS) BUILD=build-asan LLMBOX_SKIP_BROWSER=1 tests/run.sh

# One full task with `llmbox web` and its agent under valgrind, and the
# same task through `llmbox run`: a definite leak or a memory error fails
# (tests/leaks/test_valgrind.py; make test runs it too).
check-valgrind: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory image
	@python3 tests/leaks/test_valgrind.py

clean:
	rm -rf $(BUILD) build-fuzz build-asan plugins/*.so tests/plugins/*.so

-include $(OBJ:.o=.d) $(ST_OBJ:.o=.d) $(UNIT_BIN:=.d)
