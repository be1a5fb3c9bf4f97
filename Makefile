# llmbox — see README.md. The two commands: `make run` and `make test`.
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2
CPPFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude -Iserver -MMD -MP
HARDEN   := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
LDLIBS   := -linih -lfcgi -lcurl -lcjson -larchive -lmagic -lsqlite3 -lseccomp -lcrypto -ldl -lpthread
BUILD    := build

SRC      := $(wildcard server/*.c server/*/*.c)
OBJ      := $(SRC:%.c=$(BUILD)/%.o)
LIBOBJ   := $(filter-out $(BUILD)/server/main.o,$(OBJ))

PLUGIN_DIRS := $(wildcard plugins/*/)
PLUGINS     := $(patsubst plugins/%/,plugins/%.so,$(PLUGIN_DIRS))
FIXTURE_DIRS := $(wildcard tests/plugins/*/)
FIXTURES     := $(patsubst tests/plugins/%/,tests/plugins/%.so,$(FIXTURE_DIRS))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps run test image stop clean unit fixtures bench
all: $(BUILD)/llmbox $(PLUGINS)

$(BUILD)/llmbox: $(OBJ)
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(HARDEN) -fvisibility=hidden -c -o $@ $<

# A plugin is every .c in its folder, linked into plugins/NAME.so.
.SECONDEXPANSION:
plugins/%.so: $$(wildcard plugins/%/*.c) include/llmbox/tool.h
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden -o $@ $(filter %.c,$^) -lcjson

tests/plugins/%.so: $$(wildcard tests/plugins/%/*.c) include/llmbox/tool.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -w -fPIC -shared -fvisibility=hidden -o $@ $(filter %.c,$^) -lcjson

$(BUILD)/tests/%: tests/unit/%.c $(LIBOBJ) tests/unit/testlib.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Itests/unit -o $@ $< $(LIBOBJ) $(LDLIBS)

fixtures: $(FIXTURES)
unit: $(UNIT_BIN) $(FIXTURES) $(PLUGINS)

# Installs missing Debian packages (apt) and creates the service user.
deps:
	@scripts/deps.sh

# Builds the default sandbox image once (debootstrap); kept in var/images.
image: all var/images/default/.complete

# Rebuilt when its package list changes (--force swaps the new root in
# atomically; do not rebuild while sandboxes of a running llmbox use it).
var/images/default/.complete: images/default/packages $(wildcard images/default/setup.sh)
	@if [ -f $@ ]; then echo "llmbox: images/default changed; rebuilding the default image"; \
	    $(BUILD)/llmbox image build --force default; \
	else $(BUILD)/llmbox image build default; fi

run: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory image
	@scripts/run.sh

test: deps
	@$(MAKE) --no-print-directory all unit
	@$(MAKE) --no-print-directory image
	@tests/run.sh

bench: deps
	@$(MAKE) --no-print-directory all image
	@bench/run.sh

clean:
	rm -rf $(BUILD) plugins/*.so tests/plugins/*.so

-include $(OBJ:.o=.d)
