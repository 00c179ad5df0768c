# adserve: make run, make test (README). Everything built goes to build/.

BUILD    ?= build
UNIT_CC  ?= cc
UNIT_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Wpointer-arith \
              -Isrc -It/unit
ASAN     = -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
           -fno-omit-frame-pointer
UNIT_LIBS = -lcjson -lcrypto -lsodium -lm

ENGINE   = src/adserve_contract.c src/adserve_arena.c src/adserve_json.c src/adserve_fields.c src/adserve_jsonw.c src/adserve_vast.c src/adserve_native.c src/adserve_parsed.c src/adserve_snapshot.c src/adserve_pacing.c \
           src/adserve_target.c src/adserve_experiment.c src/adserve_token.c src/adserve_records.c src/adserve_rtb.c src/adserve_rtb_native.c \
           src/adserve_joins.c
TSAN     = -fsanitize=thread -fno-omit-frame-pointer
# every unit test twice: plain, and under AddressSanitizer + UBSan; those of
# the snapshot build, which shares its work over threads, a third time
# under ThreadSanitizer
UNIT     = $(patsubst t/unit/%_test.c,$(BUILD)/t/%.t,$(wildcard t/unit/*_test.c)) \
           $(patsubst t/unit/%_test.c,$(BUILD)/t/%-asan.t,$(wildcard t/unit/*_test.c)) \
           $(BUILD)/t/snapshot-tsan.t $(BUILD)/t/joins-tsan.t
# libFuzzer harnesses of the parsers of untrusted bytes (t/fuzz/): make fuzz
# runs each for FUZZ_SECONDS; make test replays their corpora
FUZZ_CC  ?= clang
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Isrc -fno-omit-frame-pointer \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZERS  = $(patsubst t/fuzz/fuzz_%.c,$(BUILD)/fuzz/%,$(wildcard t/fuzz/fuzz_*.c))
# tools the black-box tests feed (not tests of their own)
TOOLS    = $(BUILD)/t/tools/targeting-check $(BUILD)/t/tools/snapshot-profile

.PHONY: all deps build module sidecar console deb unit fuzzers fuzz run stop test bench bench-scale simulate simulate-rec clean

all: build

deps:
	@scripts/deps

build: module sidecar console
	@$(MAKE) -s unit
	@$(MAKE) -s fuzzers

module: deps
	@scripts/build-module

# the sidecar, and its build with ASan and UBSan (the one the tests run)
sidecar: deps
	@$(MAKE) -s -C sidecar BUILD=$(abspath $(BUILD))/sidecar
	@$(MAKE) -s -C sidecar BUILD=$(abspath $(BUILD))/sidecar-asan SANITIZE=1

# the management console (console/), bundled into build/console
console: deps
	@scripts/build-console

# the Debian packages, into build/deb/ (README "Debian packages")
deb: deps
	@scripts/build-deb

unit: $(UNIT) $(TOOLS)

fuzzers: $(FUZZERS)

$(BUILD)/fuzz/%: t/fuzz/fuzz_%.c $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(ENGINE) $< -o $@ $(UNIT_LIBS)

# the sidecar's schema engine: the sidecar's sources but its main, built
# with the fuzzer's instrumentation like the engine's (clang, unlike gcc, asks
# every field of the tables' partial rows)
SIDECAR_PKGS = libmicrohttpd hiredis libcjson libjwt libsodium libcurl \
               libmagic stb libwebp
SIDECAR_SRCS = $(filter-out sidecar/main.c,$(wildcard sidecar/*.c))
$(BUILD)/fuzz/schema: t/fuzz/fuzz_schema.c $(ENGINE) $(SIDECAR_SRCS) $(wildcard src/adserve_*.h sidecar/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-missing-field-initializers -Isidecar \
	    $(shell pkg-config --cflags $(SIDECAR_PKGS)) $(ENGINE) \
	    $(SIDECAR_SRCS) $< -o $@ $(shell pkg-config --libs $(SIDECAR_PKGS)) -lcrypto -lm -pthread

# the segment uploads' line reader: the sidecar's, alone
$(BUILD)/fuzz/lines: t/fuzz/fuzz_lines.c sidecar/lines.c sidecar/lines.h sidecar/utf8.c sidecar/utf8.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Isidecar sidecar/lines.c sidecar/utf8.c $< -o $@

# the media library's probe: libmagic, stb_image and libwebp on any bytes,
# and the display name of any file name (the sidecar's, with its log)
MEDIA_PKGS = libmagic stb libwebp libcjson
$(BUILD)/fuzz/media: t/fuzz/fuzz_media.c sidecar/media_probe.c sidecar/media_probe.h sidecar/log.c \
                     sidecar/utf8.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Isidecar $(shell pkg-config --cflags $(MEDIA_PKGS)) \
	    sidecar/media_probe.c sidecar/log.c sidecar/utf8.c $< -o $@ $(shell pkg-config --libs $(MEDIA_PKGS)) -pthread

fuzz: build
	@scripts/fuzz

$(BUILD)/t/%-asan.t: t/unit/%_test.c t/unit/tap.h $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(UNIT_CC) $(UNIT_CFLAGS) $(ASAN) $(ENGINE) $< -o $@ $(UNIT_LIBS)

$(BUILD)/t/%-tsan.t: t/unit/%_test.c t/unit/tap.h $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(UNIT_CC) $(UNIT_CFLAGS) $(TSAN) $(ENGINE) $< -o $@ $(UNIT_LIBS)

$(BUILD)/t/tools/targeting-check: t/unit/targeting_check.c $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(UNIT_CC) $(UNIT_CFLAGS) $(ASAN) $(ENGINE) $< -o $@ $(UNIT_LIBS)

# optimised as in nginx, for perf and callgrind
$(BUILD)/t/tools/snapshot-profile: t/unit/snapshot_profile.c $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(UNIT_CC) $(UNIT_CFLAGS) -O2 $(ENGINE) $< -o $@ $(UNIT_LIBS)

$(BUILD)/t/%.t: t/unit/%_test.c t/unit/tap.h $(ENGINE) $(wildcard src/adserve_*.h)
	@mkdir -p $(@D)
	$(UNIT_CC) $(UNIT_CFLAGS) $(ENGINE) $< -o $@ $(UNIT_LIBS)

run: build
	@scripts/run

stop:
	@scripts/stop

test: build
	@scripts/test

bench: build
	@scripts/bench

bench-scale: build
	@scripts/bench-scale

simulate: build
	@scripts/simulate

simulate-rec: build
	@scripts/simulate-rec

clean:
	rm -rf $(BUILD)
