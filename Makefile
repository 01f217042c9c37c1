# The two commands of the README:
#   make run   - set up the machine, start a 3-node cluster, run a test, leave a report
#   make test  - set up the machine, run unit tests, then the jepsen integration tests
SHELL := /bin/bash
export TESTCONTAINERS_RYUK_DISABLED := true
GO ?= go
BIN := bin/lockcheck
# The shared cluster of the jepsen tests; LOCKCHECK_CLUSTER=NAME keeps a
# second checkout's tests off the default cluster.
CLUSTER := $(or $(LOCKCHECK_CLUSTER),lockcheck)
export LOCKCHECK_CLUSTER := $(CLUSTER)

.PHONY: setup setup-run setup-rootfs image-rootfs image-jars image-inputs build cli plugins run test unit jepsen clean

# scripts/setup.sh installs what is missing (docs/setup.md): `run` only what
# make run needs (the engine, debootstrap, Maven), `test` also what the tests
# need (Chromium, libfaketime, a JDK and python3-venv for the plug-ins).
setup:
	scripts/setup.sh test

setup-run:
	scripts/setup.sh run

# The CLI alone: what make run needs (it starts no lazy filesystem).
cli:
	$(GO) build -o $(BIN) ./cmd/lockcheck

# lockcheck-lazyfs goes into the nodes of `cluster up --lazyfs`, and
# lockcheck-shaper into the nodes net-delay shapes where the kernel has no
# netem: static, so that they run whatever the node image's libc.
build: cli
	CGO_ENABLED=0 $(GO) build -o bin/lockcheck-lazyfs ./cmd/lockcheck-lazyfs
	CGO_ENABLED=0 $(GO) build -o bin/lockcheck-shaper ./cmd/lockcheck-shaper

# The reference plug-ins of --lock-cmd (docs/plugin.md): Python's
# cassandra-driver from PyPI in a venv (pure Python: no C build), and the
# Java driver from Maven Central, compiled with its classpath written out;
# and the catalogue's Java locks (docs/locks.md): ShedLock's Cassandra
# provider from Maven Central and the re-expressed Sidecar, Reaper and
# Astyanax locks, one jar; and the locks inside tools (java-artifacts):
# cassandra-migration's leader lock and JanusGraph's ConsistentKeyLocker as
# released, Liquibase's Cassandra lock service re-expressed, one module each
# with its tool's driver.
PY_VENV := .cache/plugins/python-lease
JAVA_LEASE := plugins/java-lease/target/java-lease-1.jar
JAVA_LOCKS := plugins/java-locks/target/java-locks-1.jar
JAVA_LOCKS_CDS := plugins/java-locks/target/app.jsa
JAVA_ARTIFACTS := plugins/java-artifacts/cassandra-migration/target/cassandra-migration-1.jar
JAVA_ARTIFACTS_CDS := $(foreach m,cassandra-migration janusgraph liquibase,plugins/java-artifacts/$(m)/target/app.jsa)
plugins: $(PY_VENV)/.installed $(JAVA_LEASE) $(JAVA_LOCKS) $(JAVA_LOCKS_CDS) $(JAVA_ARTIFACTS) $(JAVA_ARTIFACTS_CDS)

$(PY_VENV)/.installed: plugins/python-lease/requirements.txt
	rm -rf $(PY_VENV)
	python3 -m venv $(PY_VENV)
	CASS_DRIVER_NO_CYTHON=1 CASS_DRIVER_NO_EXTENSIONS=1 $(PY_VENV)/bin/pip install -q --disable-pip-version-check -r $<
	touch $@

$(JAVA_LEASE): plugins/java-lease/pom.xml $(wildcard plugins/java-lease/src/main/java/lockcheck/*.java)
	cd plugins/java-lease && mvn -q -B package

$(JAVA_LOCKS): plugins/java-locks/pom.xml $(wildcard plugins/java-locks/src/main/java/lockcheck/locks/*.java)
	cd plugins/java-locks && mvn -q -B package

# Every module's jar and classpath.txt in one reactor build (the modules share
# the protocol module); the first jar stands for all.
$(JAVA_ARTIFACTS): $(shell find plugins/java-artifacts -name pom.xml -o -name '*.java' -o -name '*.cql' 2>/dev/null)
	cd plugins/java-artifacts && mvn -q -B package
	touch $@

# The driver's classes as a class-data archive, dumped from one setup against
# a loopback port where nothing listens (about 15 s): the catalogue's JVMs,
# five starting at once in a run, then start in about half the time at load
# 15 (plugins/java-locks/run). Without it they start as before.
$(JAVA_LOCKS_CDS): $(JAVA_LOCKS)
	rm -f $@
	echo '{"id":1,"op":"setup","timeout_ms":5000}' | LOCKCHECK_CDS_DUMP=$(CURDIR)/$@ \
	  LOCKCHECK_HOSTS=127.0.0.1:1 LOCKCHECK_KEYSPACE=lockcheck LOCKCHECK_TTL_MS=3000 plugins/java-locks/run shedlock >/dev/null 2>&1; \
	  test -s $@ || echo "java-locks: no class-data archive dumped (the plug-ins start slower)" >&2

# The same for each tool's module (plugins/java-artifacts/run): JanusGraph's
# set-up loads the most classes, and started slowest (25 s at load 15).
$(JAVA_ARTIFACTS_CDS): plugins/java-artifacts/%/target/app.jsa: $(JAVA_ARTIFACTS)
	rm -f $@
	echo '{"id":1,"op":"setup","timeout_ms":5000}' | LOCKCHECK_CDS_DUMP=$(CURDIR)/$@ \
	  LOCKCHECK_HOSTS=127.0.0.1:1 LOCKCHECK_KEYSPACE=lockcheck LOCKCHECK_TTL_MS=3000 plugins/java-artifacts/run $* >/dev/null 2>&1; \
	  test -s $@ || echo "java-artifacts: no class-data archive dumped for $* (it starts slower)" >&2

# The default node image's inputs, fetched before the CLI that builds the
# image exists (scripts/image-inputs.sh; nothing when the image or the
# input is there): the Debian root filesystem as soon as debootstrap is
# installed (setup.sh rootfs, the first package set-up installs), the
# Cassandra jars once Maven is, the import once the engine answers.
setup-rootfs:
	@scripts/setup.sh rootfs

setup-run: setup-rootfs

image-rootfs: setup-rootfs
	@scripts/image-inputs.sh rootfs

image-jars: setup-run
	@scripts/image-inputs.sh jars

image-inputs: image-rootfs image-jars setup-run
	@scripts/image-inputs.sh import

# A real test end to end: the fenced lease under every fault kind of `all`
# (--every-kind: each dealt at least once, however long the kill's restart),
# stored, checked and reported under store/ (the cluster stays up for more
# runs; `make clean` removes it). On a fresh machine its set-up, the node
# image's inputs and Go's build of the CLI each take a minute or more, and
# none needs another: they run side by side (the root filesystem while the
# rest of set-up installs). `cluster up` prints the nodes' status.
run:
	@$(MAKE) --no-print-directory -j4 image-inputs cli
	$(BIN) cluster up
	$(BIN) run --lock lease-fenced --nemesis all --time 20s --interval 1s --every-kind --seed 1

unit:
	$(GO) vet ./...
	$(GO) test ./...

# One cluster serves every jepsen package (they take it one after another,
# see SHARED_GO_TEST, and attach to it; -count=1: results against a live cluster are never taken
# from the test cache). Beside them, a second stream runs the tests that
# start clusters or containers of their own (the configs matrix: Paxos v2
# and the lazy filesystem; sshnode; the set-up test's clean container; the
# SIGKILLed harness on a 1-node cluster),
# told to leave the shared cluster alone: runs last a
# fixed time, not a fixed amount of work, so two streams on 2 cores cost
# little more wall time than the longer one. A cluster this target starts
# is removed whatever the tests say; one that was already running
# (`lockcheck cluster up`) is kept. LOCKCHECK_FULL=1 adds the full tier.
JEPSEN_OWN_LOG := .cache/jepsen-own.log
# The shared cluster's stream tests only the packages with jepsen tests: the
# others' tests are the unit target's, and compiling and running them again
# cost this stream, the longer of the two, about a minute.
JEPSEN_FILES = $(shell grep -l '^//go:build jepsen' $$(find . -name '*_test.go' -not -path './.cache/*' -not -path './plugins/*'))
JEPSEN_PKGS = $(shell echo $(JEPSEN_FILES) | xargs -n1 dirname | sort -u | grep -v -e '^./sshnode$$' -e '^./scripts$$')
# Both streams run only the tests of the jepsen files (scripts/jepsen-tests.sh):
# the same packages' other tests are the unit target's and ran there already
# (runner's, nemesis's and cmd/lockcheck's took about a minute of the shared
# stream).
JEPSEN_RUN = $(shell scripts/jepsen-tests.sh)
# Every package's TestMain copies into the nodes the shaper make build built,
# and the lazy filesystem's tests its lockcheck-lazyfs, instead of building
# their own (clustertest: a few seconds a package).
jepsen test: export LOCKCHECK_SHAPER_BIN := $(CURDIR)/bin/lockcheck-shaper
jepsen test: export LOCKCHECK_LAZYFS_BIN := $(CURDIR)/bin/lockcheck-lazyfs
OWN_TESTS := TestConfigs|TestLazyFS|TestVersions|TestHarnessKilled|TestKilledMidMovement|TestMembership|TestHostsTwoDCs|TestPaxosUpgrade|TestStartStopLeavesNothing
# Every jepsen go test runs with -v into a log of its stream in .cache/
# (the terminal gets each package's line and the failures:
# scripts/test-log.sh), so that where a stream's time went can be read per
# test afterwards (`scripts/test-log.sh times LOG`, printed at the end).
JEPSEN_LINES = scripts/test-log.sh lines
# The second stream: the tests that start clusters of their own, then
# sshnode's hosts; it needs neither the shared cluster nor the plug-ins, so
# make test starts it as soon as the binaries are built. Its packages run
# two at a time (-p 2) but their clusters one at a time: each test takes the
# machine's turn for a cluster of its own (clustertest.OwnTurn) and holds it
# until its cluster is removed, so the next package's test binary is built
# and started beside the one before instead of after it. sshnode's go
# test starts two minutes later (its
# build would compete with the clusters' start) and waits for its turn the
# same way. The set-up test's clean container (no Cassandra in it, mostly
# apt) runs in a lane of its own beside them. One shell command (a
# background job of the recipes below), its output in $(JEPSEN_OWN_LOG).
OWN_STREAM = ( set -o pipefail; export LOCKCHECK_SHARED=none; \
	  ( $(GO) test -tags=jepsen -v -p 2 -count=1 -timeout 75m -run '$(OWN_TESTS)' ./runner/ ./cluster/ ./cmd/lockcheck/ > $(OWN_V_LOG).1 2>&1 & a=$$!; \
	    sleep 120; $(GO) test -tags=jepsen -v -count=1 -timeout 75m -run '$(JEPSEN_RUN)' ./sshnode/ > $(OWN_V_LOG).2 2>&1; b=$$?; \
	    wait $$a && [ $$b = 0 ] ) & o=$$!; \
	  $(GO) test -tags=jepsen -v -count=1 -timeout 30m -run '$(JEPSEN_RUN)' ./scripts/ > $(OWN_V_LOG).3 2>&1; s=$$?; \
	  wait $$o; r=$$?; cat $(OWN_V_LOG).3 $(OWN_V_LOG).1 $(OWN_V_LOG).2 > $(OWN_V_LOG); rm -f $(OWN_V_LOG).[123]; \
	  $(JEPSEN_LINES) < $(OWN_V_LOG); [ $$r = 0 ] && [ $$s = 0 ] ) > $(JEPSEN_OWN_LOG) 2>&1
OWN_V_LOG := .cache/jepsen-own-v.log
# The shared cluster's stream: every other jepsen test, one package after
# another, on the running cluster $(CLUSTER). Only runner's tests run the
# plug-ins: make test starts the other packages at once (SHARED_EARLY: their
# binaries are built while the cluster starts, and wait for it) and runner's
# as soon as the plug-ins are built (SHARED_RUNNER), beside them: each
# package's TestMain holds the shared cluster until its tests end
# (clustertest.Main), so the packages still run on it one at a time, in
# whatever order they take it, and none waits for a build.
# -p 2: the next package's test binary is compiled, linked and started while
# the one before runs, and waits for the cluster instead of leaving it idle
# while it builds.
# -p 3 for the packages started early: a package whose tests take seconds
# (temporal's) otherwise hands the cluster to a binary still being built.
# The tests that fault only clients (TestMatrix's client rows, the plug-ins,
# the recipes' packages) run three at a time in runner (-parallel 3; two,
# the cores, elsewhere): they mostly wait (a client paused past its lease).
# Three at once once failed a Java plug-in's set-up (cassandra-migration's
# schema statement past the driver's 2 s request time-out,
# docs/measurements.md#make-test), which that plug-in now tries again.
SHARED_GO_TEST = $(GO) test -tags=jepsen -v -count=1 -timeout 75m -run '$(JEPSEN_RUN)' -skip '$(OWN_TESTS)'
SHARED_STREAM = $(SHARED_GO_TEST) -p 2 $(JEPSEN_PKGS)
SHARED_EARLY = $(SHARED_GO_TEST) -p 3 $(filter-out ./runner,$(JEPSEN_PKGS))
SHARED_RUNNER = $(SHARED_GO_TEST) -parallel 3 ./runner
SHARED_LOG := .cache/jepsen-shared.log
RUNNER_LOG := .cache/jepsen-runner.log
# A stream's log into its file, its lines to the terminal as they come.
TO_LOG = 2>&1 | tee $(1) | $(JEPSEN_LINES)
OWN_DONE = echo "--- the second stream (configs matrix, sshnode, set-up): $(JEPSEN_OWN_LOG)"; cat $(JEPSEN_OWN_LOG); \
	[ $$orc = 0 ] || scripts/test-log.sh failures $(OWN_V_LOG)

jepsen: build plugins
	@set -o pipefail; if $(BIN) cluster status --name $(CLUSTER) >/dev/null 2>&1; then started=0; else started=1; fi; \
	$(BIN) cluster up --name $(CLUSTER) || exit $$?; \
	mkdir -p .cache; \
	$(OWN_STREAM) & own=$$!; \
	$(SHARED_STREAM) $(call TO_LOG,$(SHARED_LOG)); rc=$$?; \
	[ $$rc = 0 ] || scripts/test-log.sh failures $(SHARED_LOG); \
	wait $$own; orc=$$?; $(OWN_DONE); \
	echo "--- where the time went: scripts/test-log.sh times $(SHARED_LOG) $(OWN_V_LOG)"; scripts/test-log.sh times $(SHARED_LOG) $(OWN_V_LOG); \
	if [ $$started = 1 ]; then $(BIN) cluster down --name $(CLUSTER); fi; \
	[ $$rc = 0 ] && [ $$orc = 0 ]

# LOCKCHECK_BROWSER=1: here a missing Chromium fails the browser test (a
# plain `go test ./...` skips it).
# Once the binaries are built, five things start at once: the second stream
# (above), the shared cluster (3 JVMs, about a minute, much of it waiting
# for the ring to settle), the shared stream's go test (its test binaries
# are built while the cluster starts: each waits in clustertest.Main while
# $(CLUSTER_STARTING) says the cluster is being started, `cluster up`
# holding its lease until it is whole), the plug-ins (Maven and pip: about
# a minute and a half from a fresh clone), and go vet and the unit tests
# (their output in $(UNIT_LOG), shown when they end). The last two, which
# nothing waits for until runner's tests and the end, run at nice 5: their
# compilers and the unit tests (hundreds of CPU-seconds) otherwise take the
# cores from the nodes while the clusters start and the runs run (on a
# cgroup v1 machine all the containers together weigh as much as one
# process outside Docker: docs/measurements.md#where-make-tests-time-goes-issue-51). runner's jepsen tests
# start as soon as the plug-ins are built, beside the other packages (they
# take the cluster in turn). Every part runs to its end (a failed cluster or
# plug-in build skips what needs it) and make test fails when any part
# failed; a cluster this target starts is removed at the end. Each stream's
# -v log stays in .cache/ and the end prints where the time went, test by
# test.
CLUSTER_UP_LOG := .cache/cluster-up.log
CLUSTER_STARTING := .cache/cluster-starting
PLUGINS_LOG := .cache/plugins-build.log
UNIT_LOG := .cache/unit.log
test: export LOCKCHECK_BROWSER := 1
test: setup build
	@set -o pipefail; mkdir -p .cache; up=0; rn=0; sh=0; starting=$(CURDIR)/$(CLUSTER_STARTING); rm -f $$starting; \
	$(OWN_STREAM) & own=$$!; \
	if $(BIN) cluster status --name $(CLUSTER) >/dev/null 2>&1; then \
	  $(BIN) cluster up --name $(CLUSTER) > $(CLUSTER_UP_LOG) 2>&1; c=$$?; \
	else touch $$starting; \
	  ( $(BIN) cluster up --name $(CLUSTER) > $(CLUSTER_UP_LOG) 2>&1; x=$$?; rm -f $$starting; exit $$x ) & up=$$!; c=0; fi; \
	nice -n 5 $(MAKE) --no-print-directory plugins > $(PLUGINS_LOG) 2>&1 & pl=$$!; \
	nice -n 5 $(MAKE) --no-print-directory unit > $(UNIT_LOG) 2>&1 & un=$$!; \
	if [ $$c = 0 ]; then LOCKCHECK_CLUSTER_STARTING=$$starting $(SHARED_EARLY) $(call TO_LOG,$(SHARED_LOG)) & sh=$$!; fi; \
	wait $$pl; p=$$?; \
	if [ $$c = 0 ] && [ $$p = 0 ]; then LOCKCHECK_CLUSTER_STARTING=$$starting $(SHARED_RUNNER) $(call TO_LOG,$(RUNNER_LOG)) & rn=$$!; fi; \
	if [ $$up != 0 ]; then wait $$up; c=$$?; fi; echo "--- cluster up: $(CLUSTER_UP_LOG)"; cat $(CLUSTER_UP_LOG); \
	echo "--- the plug-ins' build: $(PLUGINS_LOG)"; cat $(PLUGINS_LOG); \
	if [ $$sh != 0 ]; then wait $$sh; r1=$$?; else r1=1; fi; \
	if [ $$rn != 0 ]; then wait $$rn; r2=$$?; else r2=1; fi; \
	[ $$r1 = 0 ] || scripts/test-log.sh failures $(SHARED_LOG); \
	[ $$r2 = 0 ] || scripts/test-log.sh failures $(RUNNER_LOG); \
	wait $$un; u=$$?; echo "--- go vet and the unit tests: $(UNIT_LOG)"; cat $(UNIT_LOG); \
	wait $$own; orc=$$?; $(OWN_DONE); \
	if [ $$up != 0 ]; then $(BIN) cluster down --name $(CLUSTER); fi; \
	echo "--- where the time went: scripts/test-log.sh times $(SHARED_LOG) $(RUNNER_LOG) $(OWN_V_LOG)"; \
	scripts/test-log.sh times $(SHARED_LOG) $(RUNNER_LOG) $(OWN_V_LOG); \
	for x in "unit tests:$$u" "cluster up:$$c" "plug-ins:$$p" "shared stream:$$r1" "runner's stream:$$r2" "second stream:$$orc"; do \
	  [ "$${x##*:}" = 0 ] || echo "make test: $${x%:*} failed (exit $${x##*:})" >&2; done; \
	[ $$u = 0 ] && [ $$c = 0 ] && [ $$p = 0 ] && [ $$r1 = 0 ] && [ $$r2 = 0 ] && [ $$orc = 0 ]

clean:
	-$(BIN) cluster down
	rm -rf bin store .cache plugins/java-lease/target plugins/java-locks/target
