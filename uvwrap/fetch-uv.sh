#!/bin/sh
# fetch-uv.sh PLATFORM DESTDIR
#
# Puts the uv pinned in uv.pin (beside this script) at DESTDIR/uv, mode 0755.
# PLATFORM is linux-amd64, linux-arm64, darwin-amd64, darwin-arm64, or host
# for the machine running the script.
#
# The pinned wheel is downloaded with `python3 -m pip download` from whatever
# index the user's pip configuration names (PIP_INDEX_URL, pip.conf, ...),
# its sha256 is checked against uv.pin, and uv is unpacked from it with
# python3's zipfile module. DESTDIR/uv.stamp records the wheel and the sha256
# of the unpacked uv, so a second run with nothing to do returns at once; on
# the host, `DESTDIR/uv --version` must also report the pinned version.
# DESTDIR/uv is replaced by a rename: it is never left half written.
#
# Exit status: 0 done (or nothing to do), 2 usage or uv.pin error,
# 3 download failed, 4 the download is not the pinned file (name, sha256 or
# content), 1 anything else.
set -eu

prog=fetch-uv.sh
die() {
	code=$1
	shift
	printf '%s: %s\n' "$prog" "$*" >&2
	exit "$code"
}

[ $# -eq 2 ] || die 2 "usage: $prog PLATFORM DESTDIR (PLATFORM: host, linux-amd64, linux-arm64, darwin-amd64 or darwin-arm64)"
platform=$1
dest=$2
[ -n "$dest" ] || die 2 "DESTDIR is empty"

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
pin=$here/uv.pin
[ -r "$pin" ] || die 2 "cannot read $pin"

# The host, in the names uv.pin uses (Go's GOOS-GOARCH).
host=
case $(uname -s) in
Linux) hos=linux ;;
Darwin) hos=darwin ;;
*) hos= ;;
esac
case $(uname -m) in
x86_64 | amd64) harch=amd64 ;;
aarch64 | arm64) harch=arm64 ;;
*) harch= ;;
esac
if [ -n "$hos" ] && [ -n "$harch" ]; then
	host=$hos-$harch
fi
if [ "$platform" = host ]; then
	[ -n "$host" ] || die 2 "this host ($(uname -s) $(uname -m)) is not a platform uv.pin covers; name one of linux-amd64, linux-arm64, darwin-amd64, darwin-arm64"
	platform=$host
fi

# Read the pin: one version line, one line for the platform.
version=$(awk '$1 == "version" { print $2 }' "$pin")
nversion=$(awk '$1 == "version"' "$pin" | wc -l | tr -d ' ')
[ "$nversion" = 1 ] && [ -n "$version" ] || die 2 "$pin must have exactly one 'version X.Y.Z' line"
nline=$(awk -v p="$platform" '$1 == p' "$pin" | wc -l | tr -d ' ')
[ "$nline" = 1 ] || die 2 "$pin has no single line for platform '$platform' (it covers: $(awk '$1 != "version" && $1 !~ /^#/ && NF { printf "%s ", $1 }' "$pin"))"
file=$(awk -v p="$platform" '$1 == p { print $2 }' "$pin")
sha=$(awk -v p="$platform" '$1 == p { print $3 }' "$pin")
prefix=uv-$version-py3-none-
case $file in
"$prefix"*.whl) ;;
*) die 2 "$pin: '$file' is not a uv $version py3-none wheel" ;;
esac
case $sha in
*[!0-9a-f]*) die 2 "$pin: sha256 for $platform is not lowercase hex" ;;
esac
[ ${#sha} -eq 64 ] || die 2 "$pin: sha256 for $platform is not 64 hex digits"
# The first of the wheel's platform tags, e.g. manylinux_2_17_x86_64. pip is
# asked for exactly that tag, and anything but the pinned file is refused.
tag=${file#"$prefix"}
tag=${tag%.whl}
tag=${tag%%.*}
member=uv-$version.data/scripts/uv

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum <"$1"
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 <"$1"
	else
		python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())' <"$1"
	fi | awk '{ print $1 }'
}

# reports_version EXE: EXE --version says `uv VERSION`, maybe followed by a
# build note in parentheses.
reports_version() {
	out=$("$1" --version 2>/dev/null | sed -n 1p) || return 1
	case $out in
	"uv $version" | "uv $version ("*) return 0 ;;
	*) return 1 ;;
	esac
}

stamp=$dest/uv.stamp
want_stamp="wheel $file $sha"
[ ! -d "$dest/uv" ] || die 1 "$dest/uv is a directory; remove it"

# Nothing to do when DESTDIR/uv is the very file unpacked from the pinned
# wheel, and, on the host, runs as the pinned version.
if [ -f "$dest/uv" ] && [ -f "$stamp" ] &&
	[ "$(sed -n 1p "$stamp")" = "$want_stamp" ] &&
	[ "$(sed -n 2p "$stamp")" = "uv $(sha256 "$dest/uv")" ]; then
	if [ "$platform" != "$host" ] || reports_version "$dest/uv"; then
		echo "$prog: uv $version ($platform) is already in $dest" >&2
		exit 0
	fi
fi

tmp=
partial=
cleanup() {
	[ -z "$tmp" ] || rm -rf "$tmp"
	[ -z "$partial" ] || rm -f "$partial" "$partial.stamp"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-uv.XXXXXX")

command -v python3 >/dev/null 2>&1 || die 1 "python3 is not on PATH; it is needed to download and unpack uv"
python3 -m pip --version >/dev/null 2>&1 || die 1 "python3 -m pip does not work; install pip for python3"
echo "$prog: downloading $file with pip" >&2
# --ignore-requires-python: the wheel holds a native binary, so the package's
# Requires-Python says nothing about the target (pip would test it against
# --python-version). Index options are left to the user's pip configuration.
if ! python3 -m pip download --no-deps --only-binary=:all: \
	--ignore-requires-python --platform "$tag" --implementation py \
	--python-version 3 --abi none --progress-bar off \
	--dest "$tmp/dl" "uv==$version" >"$tmp/pip.log" 2>&1; then
	why=$(grep -v '^[[:space:]]*$' "$tmp/pip.log" | tail -n 1)
	# pip's last word on an unreachable index is "No matching distribution";
	# the first network complaint says more.
	net=$(grep -m 1 -e 'Retrying' -e 'Could not fetch URL' -e 'Failed to establish' -e 'SSLError' -e 'ProxyError' "$tmp/pip.log" | cut -c 1-240) || true
	if [ -n "$net" ]; then
		why="$why (first network error: $net)"
	elif grep -q 'from versions: none' "$tmp/pip.log"; then
		why="$why (the index pip uses could not be reached, or has no $tag wheel of uv)"
	fi
	die 3 "pip could not download uv==$version for $platform ($file): ${why:-pip printed nothing}"
fi
if [ ! -f "$tmp/dl/$file" ]; then
	# shellcheck disable=SC2012 # names for a message only
	got=$(ls "$tmp/dl" | tr '\n' ' ')
	got=${got% }
	die 4 "pip fetched ${got:-nothing} instead of the pinned $file"
fi
got=$(sha256 "$tmp/dl/$file")
[ "$got" = "$sha" ] || die 4 "sha256 mismatch for $file: got $got, uv.pin says $sha"

mkdir -p "$dest"
partial=$dest/.uv.partial.$$
if ! python3 - "$tmp/dl/$file" "$member" "$partial" 2>"$tmp/unzip.log" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
try:
    with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "xb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except KeyError:
    sys.exit("the wheel has no " + member)
except Exception as e:
    sys.exit(str(e).replace("\n", " "))
EOF
then
	why=$(grep -v '^[[:space:]]*$' "$tmp/unzip.log" | tail -n 1)
	die 4 "cannot unpack uv from $file: ${why:-python3 failed}"
fi
chmod 0755 "$partial"
if [ "$platform" = "$host" ] && ! reports_version "$partial"; then
	die 4 "the uv in $file does not report version $version"
fi
printf '%s\nuv %s\n' "$want_stamp" "$(sha256 "$partial")" >"$partial.stamp"
# Stamp out first, so an interruption between the renames leaves no stamp
# that vouches for an old uv.
rm -f "$stamp"
mv -f "$partial" "$dest/uv"
mv -f "$partial.stamp" "$stamp"
partial=
echo "$prog: uv $version ($platform) is in $dest/uv" >&2
