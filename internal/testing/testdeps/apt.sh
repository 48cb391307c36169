#!/bin/sh
# Installs the Debian packages a make target's tests need, saying first
# what it will add and that it needs root, and leaving the machine with no
# new service enabled or running:
#
#   internal/testing/testdeps/apt.sh TARGET CHECK:PACKAGE...
#
# CHECK is a command on PATH or an absolute path; PACKAGE is installed when
# CHECK is missing. Packages come without their recommendations. Debian
# enables a package's units when it installs them (openssh-server's
# ssh.service, podman's podman.socket and timers) and starts them: a
# policy-rc.d keeps apt from starting any during the install, and every
# unit of a package this run added is disabled again. SSH host keys that
# openssh-server's set-up makes in /etc/ssh are removed (the ssh:// tests
# make their own in their temp folders; dpkg-reconfigure openssh-server
# makes them again).
set -eu
target=$1
shift
missing=
for pair in "$@"; do
	check=${pair%%:*} pkg=${pair#*:}
	case $check in
	/*) [ -e "$check" ] && continue ;;
	*) command -v "$check" >/dev/null 2>&1 && continue ;;
	esac
	case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac
done
missing=${missing# }
[ -z "$missing" ] && exit 0

echo "$target: adds the Debian packages $missing (apt-get install --no-install-recommends, with their dependencies); needs root; enables no service"
if [ "$(id -u)" != 0 ]; then
	echo "$target: not root: install them first (sudo apt-get install --no-install-recommends $missing), then run it again" >&2
	exit 1
fi
command -v apt-get >/dev/null 2>&1 || {
	echo "$target: no apt-get here: install $missing with this system's package manager, then run it again" >&2
	exit 1
}

state=$(mktemp -d)
cleanup() {
	[ -f "$state/policy" ] && rm -f /usr/sbin/policy-rc.d
	rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# 101: "action forbidden by policy": invoke-rc.d starts nothing. An
# administrator's own policy-rc.d is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 0755 /usr/sbin/policy-rc.d
	touch "$state/policy"
fi
dpkg-query -W -f '${Package}\n' | sort >"$state/before"
ls /etc/ssh/ssh_host_* 2>/dev/null | sort >"$state/keys-before" || true

apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$state/apt.log" 2>&1 || {
	cat "$state/apt.log" >&2
	echo "$target: apt-get install $missing failed" >&2
	exit 1
}

dpkg-query -W -f '${Package}\n' | sort >"$state/after"
added=$(comm -13 "$state/before" "$state/after" | tr '\n' ' ')
echo "$target: added $(echo $added | wc -w) packages: $(echo $added)"
# systemctl where it is (it reads and changes the unit files without a
# running systemd); without it (a container), the links that enabled a
# unit are removed, which is what disabling it does.
enabled() {
	if command -v systemctl >/dev/null 2>&1; then
		[ "$(systemctl $1 is-enabled "$2" 2>/dev/null || true)" = enabled ]
	else
		for link in /etc/systemd/$3/*.wants/"$2" /etc/systemd/$3/*.requires/"$2"; do
			[ -L "$link" ] && return 0
		done
		return 1
	fi
}
disable() {
	if command -v systemctl >/dev/null 2>&1; then
		systemctl $1 disable --quiet "$2"
	else
		rm -f /etc/systemd/$3/*.wants/"$2" /etc/systemd/$3/*.requires/"$2"
	fi
}
for pkg in $added; do
	for unit in $(dpkg -L "$pkg" 2>/dev/null | grep -E '^/(usr/)?lib/systemd/(system|user)/[^/@]+\.(service|socket|timer|path)$' || true); do
		name=${unit##*/} scope=--system dir=system
		case $unit in */user/*) scope=--global dir=user ;; esac
		if enabled "$scope" "$name" "$dir"; then
			disable "$scope" "$name" "$dir" && echo "$target: disabled $name, which $pkg enabled"
		fi
	done
done
ls /etc/ssh/ssh_host_* 2>/dev/null | sort >"$state/keys-after" || true
new_keys=$(comm -13 "$state/keys-before" "$state/keys-after")
if [ -n "$new_keys" ]; then
	rm -f $new_keys
	echo "$target: removed the SSH host keys openssh-server made in /etc/ssh (the tests make their own)"
fi
