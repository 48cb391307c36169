#!/bin/bash
# Runs the differential suite (vis-agent python against python) and the
# session suite on Debian's CPython 3.14, in a Debian sid root made once
# with debootstrap and kept at ROOT:
#
#   internal/testing/testdeps/cpython314.sh root ROOT
#   internal/testing/testdeps/cpython314.sh run ROOT TESTBIN GUARD BIN NOHOOKBIN RUN SKIP
#
# root makes ROOT when it is not there yet. run prints test2json's events
# for gotestsum: TESTBIN is cmd/vis-agent's tests compiled beforehand (go
# test -c) and GUARD internal/testing/testguard's binary, so nothing is built inside
# the root, which has no Go. The worktree is bound in at its own path, so
# the binaries under test and the tests' testdata are where the tests
# look; testenv finds the root's /usr/lib/*/libpython3.14.so.1.0 as it
# finds any system CPython. bwrap runs them with the root as / and a /tmp
# of their own.
set -euo pipefail
mode=$1 root=$2
here=$(pwd)

if [ "$mode" = root ]; then
	if [ -e "$root/.ready" ]; then
		echo "make test-cpython314: $(chroot "$root" python3.14 -VV | head -1), in $root"
		exit 0
	fi
	if ! command -v debootstrap >/dev/null 2>&1; then
		echo "make test-cpython314: debootstrap is missing"
		internal/testing/testdeps/apt.sh "make test-cpython314" debootstrap:debootstrap
	fi
	[ "$(id -u)" = 0 ] || { echo "make test-cpython314: debootstrap needs root" >&2; exit 1; }
	echo "make test-cpython314: making a Debian sid root with Debian's CPython 3.14 in $root (debootstrap, once; about 300 MB)"
	# A debootstrap that failed half-way may have left /proc or /sys
	# mounted in its folder: those go before the folder does.
	for m in $(awk -v p="$here/$root.tmp" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r); do umount "$m"; done
	rm -rf "$root.tmp" "$root"
	# bubblewrap confines a session's shell() commands; git and curl are
	# what the session tests' commands run.
	debootstrap --variant=minbase --include=libpython3.14,python3.14-venv,bubblewrap,git,curl,ca-certificates \
		sid "$root.tmp" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; echo "make test-cpython314: debootstrap failed (log: $root.log)" >&2; exit 1; }
	# The packages' files stay in the root's apt cache otherwise.
	rm -f "$root.tmp"/var/cache/apt/archives/*.deb
	mv "$root.tmp" "$root"
	touch "$root/.ready"
	echo "make test-cpython314: $(chroot "$root" python3.14 -VV | head -1), in $root"
	exit 0
fi

testbin=$3 guard=$4 bin=$5 nohook=$6 run=$7 skip=$8
# test2json reads the test binary's output through a pipe rather than
# running the tests itself: the go command ignores SIGINT for the tools it
# runs, and its children would inherit that, which the tests of Ctrl-C
# cannot pass.
bwrap --bind "$root" / --dev /dev --proc /proc --bind /sys /sys --tmpfs /tmp \
	--bind "$here" "$here" --chdir "$here/cmd/vis-agent" --unshare-pid --die-with-parent \
	--clearenv --setenv PATH /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--setenv HOME /root --setenv LANG C.UTF-8 \
	--setenv VIS_AGENT_BIN "$here/$bin" --setenv VIS_AGENT_NOHOOK_BIN "$here/$nohook" \
	"$here/$guard" -- "$here/$testbin" -test.run "$run" -test.skip "$skip" -test.v=test2json -test.parallel 4 -test.timeout 30m -test.count 1 2>&1 |
	"${GO:-go}" tool test2json -p github.com/vis-agent/vis-agent/cmd/vis-agent
