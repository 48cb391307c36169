# vis-agent: `make build` then `make test`. Every tool the tests need is
# fetched by these targets; nothing is installed by hand.
GO      ?= go
BIN     := bin/vis-agent
# The test-only build without the C audit hook when VIS_TEST_NO_AUDIT_HOOK=1
# (the visnohook tag): the escape corpus runs through it to show the kernel
# layer holds alone. Never released.
NOHOOK_BIN := bin/vis-agent-nohook
GOFLAGS_BUILD := -trimpath
# Tests that compare with python run on every CPython 3.10+ they find; they
# bound hangs only, never measure speed. The end-to-end tests mostly wait
# (on processes, terminals, sockets): four run at once on two cores.
TESTFLAGS ?= -timeout 30m -parallel 4
# Pinned tools, built into bin/tools by their targets below.
GOLANGCI_VERSION := v2.15.0
GOLANGCI := bin/tools/golangci-lint-$(GOLANGCI_VERSION)
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM := bin/tools/gotestsum-$(GOTESTSUM_VERSION)

.PHONY: all build nohook uv uv-release test test-deps test-wheels test-registry test-remote test-remote-deps test-cpython314 golden bench deps lint completions install release-check clean

all: build

build: uv
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN) ./cmd/vis-agent

nohook: uv
	$(GO) build $(GOFLAGS_BUILD) -tags visnohook -o $(NOHOOK_BIN) ./cmd/vis-agent

# The uv pinned in uvwrap/uv.pin, where vis-agent looks for it: beside the
# binary, in bin/vis-agent-python/uv (release archives: vis-agent-python/uv).
uv:
	uvwrap/fetch-uv.sh host bin/vis-agent-python

# Every release platform's uv, for goreleaser's archives.
UV_PLATFORMS := linux-amd64 linux-arm64 darwin-amd64 darwin-arm64
uv-release:
	for p in $(UV_PLATFORMS); do uvwrap/fetch-uv.sh $$p bin/uv-release/$$p || exit 1; done

# The whole suite, lint first. One line per test as it ends (gotestsum),
# with HOME and VIS_HOME pointed at empty folders that must stay empty
# (internal/testing/testguard): tests write only into their own temp folders.
test: test-deps build nohook test-wheels lint $(GOTESTSUM)
	@echo "make test: go test ./... (a line per test as it ends; cmd/vis-agent, the end-to-end tests, takes most of the time)"
	VIS_AGENT_BIN=$(CURDIR)/$(BIN) VIS_AGENT_NOHOOK_BIN=$(CURDIR)/$(NOHOOK_BIN) VIS_TEST_WHEELHOUSE=$(CURDIR)/$(WHEELHOUSE) $(GO) run ./internal/testing/testguard -- \
		$(GOTESTSUM) --format testname --hide-summary skipped -- $(TESTFLAGS) ./...

# Real wheels for the offline tests that install packages (install() in a
# session, numpy arrays and pandas frames, matplotlib figures, the jail's
# cffi attacks, the scientific stack in the jail, a project's tests and
# tools): numpy, pandas, matplotlib with their dependencies, six and cffi,
# pinned, for CPython 3.10, 3.13 and the other 3.1x found here, and scipy,
# scikit-learn, statsmodels, pyarrow, polars, lxml, pytest (xdist), ruff
# and black for 3.10 and 3.13, downloaded with pip from its index (about
# 450 MB for four versions) into
# bin/wheelhouse once; quick when they are there. Tests read the folder
# from VIS_TEST_WHEELHOUSE and skip without it.
WHEELHOUSE := bin/wheelhouse
test-wheels:
	internal/testing/testwheel/wheelhouse.sh $(WHEELHOUSE)

# The Debian packages the default suite uses, and only those: bubblewrap,
# which confines the commands a jailed session runs (shell(...)), and
# tmux, the terminal of the REPL's end-to-end tests. Installed only when
# missing, after a line saying what and that it needs root; no service
# (internal/testing/testdeps/apt.sh).
test-deps:
	@internal/testing/testdeps/apt.sh "make test-deps" bwrap:bubblewrap tmux:tmux

# The remote-engine tests, apart from make test: --host ssh:// against a
# real OpenSSH server (on a loopback port, with host and client keys and
# configs made in the test's temp folder, never /etc/ssh or ~/.ssh) and
# --host podman:// with the real podman (a container of the test, its
# storage in the test's folder, no image pulled). Their packages are
# added only here, after a line saying what; apt.sh leaves no unit of
# theirs enabled (Debian enables ssh.service and podman's units on
# install) and removes the host keys openssh-server's set-up makes. sshd
# needs its privilege separation folder, /run/sshd (a tmpfs: gone at the
# next boot). make test skips these two tests with one line each.
REMOTE_TESTS := ^(TestRemoteSSH|TestRemotePodman)$$
test-remote-deps:
	@internal/testing/testdeps/apt.sh "make test-remote" /usr/sbin/sshd:openssh-server ssh:openssh-client podman:podman runc:runc
	@mkdir -p /run/sshd

test-remote: test-remote-deps build $(GOTESTSUM)
	@echo "make test-remote: the ssh:// and podman:// tests ($(REMOTE_TESTS))"
	VIS_TEST_REMOTE=1 VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) run ./internal/testing/testguard -- \
		$(GOTESTSUM) --format testname -- $(TESTFLAGS) -count=1 -run '$(REMOTE_TESTS)' ./cmd/vis-agent

# CPython 3.14 in the matrix: Debian's libpython3.14 in a Debian sid root
# made once with debootstrap (bin/sid314, about 300 MB; debootstrap is
# installed with apt-get when missing), where the differential suite
# (vis-agent python against python) and the session suite (TestSandbox*)
# run on the built binaries through bwrap. The tests are compiled here
# first (go test -c): the root has no Go. Needs root (debootstrap, bwrap
# binding the root as /). Tests that install the pinned wheels skip there
# (the wheelhouse has none for 3.14), as they do without make test-wheels;
# TestSandboxJailEscapes, which compiles a C extension, is left out: the
# root has no C compiler; and TestSandboxJailAsAnotherUser: inside the
# bwrap that holds the root, the nobody user's own bubblewrap is refused a
# /proc ("bwrap: Can't mount proc on /proc: Operation not permitted");
# make test runs it on the other CPythons.
SID314 := bin/sid314
CPY314 := bin/cpython314
CPY314_RUN := ^(TestPythonMatchesReference|TestSignalsMatchReference|TestPythonMatchesReferenceReplayed|TestSandbox.*)$$
CPY314_SKIP := ^(TestSandboxJailEscapes|TestSandboxJailAsAnotherUser)$$
test-cpython314: test-deps build nohook $(GOTESTSUM)
	@internal/testing/testdeps/cpython314.sh root $(SID314)
	$(GO) test -c -o $(CPY314)/vis-agent.test ./cmd/vis-agent
	$(GO) build -o $(CPY314)/testguard ./internal/testing/testguard
	GO=$(GO) $(GOTESTSUM) --format testname --hide-summary skipped --raw-command -- internal/testing/testdeps/cpython314.sh run $(SID314) \
		$(CPY314)/vis-agent.test $(CPY314)/testguard $(BIN) $(NOHOOK_BIN) '$(CPY314_RUN)' '$(CPY314_SKIP)'

# The REPL's golden frames (tui/testdata), rewritten after a deliberate
# change of its look.
golden:
	$(GO) test ./tui -run 'TestPanelAndLayouts|TestAttachmentsTabViewerAndComment' -count=1 -update

# The few tests that download from PyPI (uv's wheels); make test is offline.
test-registry: build
	VIS_TEST_REGISTRY=1 VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run 'Fetch|Verify' ./uvwrap
	VIS_TEST_REGISTRY=1 VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run 'TestScripts/.*/registry_' ./cmd/vis-agent

# The packages linked into the binary, whose init runs on every python
# start: rewrite the list TestPythonStartupDeps compares with, then review
# the diff of cmd/vis-agent/testdata/python-deps.txt.
deps: build
	VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run '^TestPythonStartupDeps$$' ./cmd/vis-agent -update-deps

# Python that runs inside the interpreter is code too: it must compile on
# every CPython 3.10+ found and pass ruff.
PY_SOURCES = $$(git ls-files '*.py')
RUFF_VERSION := 0.17.5
RUFF := bin/tools/ruff-$(RUFF_VERSION)/bin/ruff
$(RUFF):
	@echo "make: installing ruff $(RUFF_VERSION) into bin/tools (pip)"
	python3 -m pip install --quiet --no-deps --target bin/tools/ruff-$(RUFF_VERSION) ruff==$(RUFF_VERSION)

# Go's linters (configured in .golangci.yml) and the test runner that shows
# progress, pinned, built into bin/tools from the module proxy.
$(GOLANGCI):
	@echo "make: installing golangci-lint $(GOLANGCI_VERSION) into bin/tools (go install)"
	GOBIN=$(CURDIR)/bin/tools/golangci-$(GOLANGCI_VERSION) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv bin/tools/golangci-$(GOLANGCI_VERSION)/golangci-lint $@ && rmdir bin/tools/golangci-$(GOLANGCI_VERSION)
$(GOTESTSUM):
	@echo "make: installing gotestsum $(GOTESTSUM_VERSION) into bin/tools (go install)"
	GOBIN=$(CURDIR)/bin/tools/gotestsum-dl $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
	mv bin/tools/gotestsum-dl/gotestsum $@ && rmdir bin/tools/gotestsum-dl

# C is compiled by cgo with -Wall -Wextra and no -Werror, so that a newer
# compiler's new warning never breaks a user's build; lint makes any
# warning of these fail.
CC_LINT := $$($(GO) env CC)
C_WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wconversion
C_SOURCES = $$(git ls-files '*.c' ':!:*/testdata/*')

lint: $(RUFF) $(GOLANGCI)
	@echo "make lint: gofmt, go vet, golangci-lint, go mod tidy, C warnings, Python syntax on every CPython, ruff"
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GOLANGCI) run --allow-serial-runners ./...
	$(GO) mod tidy -diff
	for f in $(C_SOURCES); do (cd $$(dirname $$f) && $(CC_LINT) $(C_WARNINGS) -I$(CURDIR) -fsyntax-only $$(basename $$f)) || exit 1; done
	for py in $$(ls -d /root/.pyenv/versions/3.1[0-9]*/bin/python3 2>/dev/null) python3; do \
		$$py -B -c 'import ast, sys; [ast.parse(open(f, "rb").read(), f) for f in sys.argv[1:]]' $(PY_SOURCES) || exit 1; \
	done
	$(RUFF) check --no-cache $(PY_SOURCES)

completions: build
	$(BIN) completion bash > completions/vis-agent.bash
	$(BIN) completion zsh > completions/_vis-agent
	$(BIN) completion fish > completions/vis-agent.fish
	$(BIN) completion powershell > completions/vis-agent.ps1

# Go benchmarks, then whole commands timed side by side with python.
bench: build test-wheels
	$(GO) test -run '^$$' -bench . -benchtime 200x ./pyrun ./pyembed/findpython
	$(GO) test -run '^$$' -bench . ./sandbox/repair
	VIS_TEST_WHEELHOUSE=$(CURDIR)/$(WHEELHOUSE) $(GO) test -run '^TestRealCode$$' -count=1 -v ./sandbox/repair -args -realcode.n=4000
	$(GO) test -run '^$$' -bench Key -benchtime 100x ./tui
	VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkReplStart$$' -benchtime 10x ./cmd/vis-agent
	VIS_AGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkReplKeystroke$$' -benchtime 50x ./cmd/vis-agent
	$(GO) run ./bench/cmdbench -bin $(BIN)
	$(GO) run ./bench/sandboxbench -bin $(BIN)
	$(GO) run ./bench/sandboxbench -bin $(BIN) -data $(CURDIR)/$(WHEELHOUSE) -runs 9
	$(GO) run ./bench/sandboxbench -bin $(BIN) -data $(CURDIR)/$(WHEELHOUSE) -rewind -runs 9
	$(GO) run ./bench/mcpbench -bin $(BIN)

GORELEASER_VERSION := v2.15.1
GORELEASER := bin/tools/goreleaser-$(GORELEASER_VERSION)
$(GORELEASER):
	@echo "make: installing goreleaser $(GORELEASER_VERSION) into bin/tools (go install)"
	GOBIN=$(CURDIR)/bin/tools/goreleaser-dl $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
	mv bin/tools/goreleaser-dl/goreleaser $@ && rmdir bin/tools/goreleaser-dl

# goreleaser's check of goreleaser.yaml, then a snapshot build of the
# linux/amd64 release binary as the release makes it (its before hook,
# zig's cc from the ziglang wheel, which this installs, the -X version),
# whose --version must name the snapshot's version. Not run here: the
# darwin builds (the macOS SDK: built on macOS) and the images of the
# dockers section (a docker daemon with buildx; podman is not goreleaser's
# builder for them): the release machine builds those.
# zig comes in a virtual environment of its own under bin/tools, made by
# the machine's python3 -m venv, with pip installing into that venv only:
# no machine Python is changed. goreleaser.yaml's CC runs python3 -m
# ziglang, so the venv's bin goes first on PATH for the build.
ZIGLANG_VERSION := 0.17.0
ZIGLANG_VENV := bin/tools/ziglang-$(ZIGLANG_VERSION)
$(ZIGLANG_VENV)/.installed:
	@echo "make: installing ziglang $(ZIGLANG_VERSION) (pip) into a venv, $(ZIGLANG_VENV): the C compiler of the linux builds"
	rm -rf $(ZIGLANG_VENV)
	python3 -m venv $(ZIGLANG_VENV)
	$(ZIGLANG_VENV)/bin/python -m pip install -q --disable-pip-version-check ziglang==$(ZIGLANG_VERSION)
	touch $@

release-check: $(GORELEASER) $(ZIGLANG_VENV)/.installed
	$(GORELEASER) check
	PATH=$(CURDIR)/$(ZIGLANG_VENV)/bin:$$PATH GOOS=linux GOARCH=amd64 $(GORELEASER) build --snapshot --clean --single-target
	v=$$(python3 -c 'import json; print(json.load(open("dist/metadata.json"))["version"])') && \
		dist/vis-agent_linux_amd64_v1/vis-agent --version | grep -qx "vis-agent $$v" || \
		{ echo "make release-check: the snapshot's --version does not name version $$v"; exit 1; }

# The binary into $(PREFIX)/bin, and the pinned uv where vis-agent also
# looks for it: $(VIS_HOME)/python/uv.
PREFIX ?= $(HOME)/.local
VIS_HOME ?= $(HOME)/.vis
install: build
	install -d $(PREFIX)/bin $(VIS_HOME)/python
	install -m 0755 $(BIN) $(PREFIX)/bin/vis-agent
	install -m 0755 bin/vis-agent-python/uv $(VIS_HOME)/python/uv

clean:
	rm -rf bin dist
