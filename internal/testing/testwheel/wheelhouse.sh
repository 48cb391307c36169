#!/usr/bin/env bash
# Fetches into DIR (default bin/wheelhouse) the wheels the offline tests
# install from: numpy, pandas and matplotlib with their dependencies, six
# (a small pure-Python package) and cffi (a way to C besides ctypes, for
# the jail's escape tests), for CPython 3.10 and 3.13 and every other 3.1x
# found on this machine, and scipy, scikit-learn, statsmodels, pyarrow,
# polars, lxml, pytest, ruff and black for 3.10 and 3.13 only, for this
# machine's platform. pip
# downloads them from the index pip is configured with (PyPI by default).
# Idempotent: a version whose wheels were fetched for the same
# requirements is skipped without a network request.
set -euo pipefail

dir=${1:-bin/wheelhouse}
# Dependencies pinned too: the same wheels every time, on every machine.
requirements="numpy==2.2.6 pandas==2.2.3 matplotlib==3.10.1 six==1.17.0
python-dateutil==2.9.0.post0 pytz==2025.2 tzdata==2025.2
contourpy==1.3.2 cycler==0.12.1 fonttools==4.58.0 kiwisolver==1.4.8 packaging==25.0 pillow==11.2.1 pyparsing==3.2.3
cffi==1.17.1 pycparser==2.22"

case "$(uname -m)" in
x86_64) arch=x86_64 ;;
aarch64 | arm64) arch=aarch64 ;;
*) echo "wheelhouse.sh: no wheels for $(uname -m)" >&2; exit 1 ;;
esac

# The scientific stack, for the oldest and newest CPython only (about 250
# MB), where the data-science tests run: scipy, scikit-learn, statsmodels,
# pyarrow, polars and lxml, with what they need besides numpy, pandas and
# pillow (joblib, threadpoolctl, patsy); and tomli, which reads a
# project's pyproject.toml where tomllib is missing (3.10).
science="scipy==1.15.3 scikit-learn==1.6.1 joblib==1.5.1 threadpoolctl==3.6.0 tomli==2.2.1
statsmodels==0.14.4 patsy==1.0.1 pyarrow==20.0.0 polars==1.30.0 lxml==5.4.0"
# A coding agent's tools, for the same two (about 16 MB): pytest with
# xdist, ruff and black, with their dependencies, and psutil.
devtools="pytest==8.3.5 pluggy==1.5.0 iniconfig==2.1.0 exceptiongroup==1.2.2 pytest-xdist==3.6.1 execnet==2.1.1
ruff==0.11.13 black==25.1.0 click==8.1.8 mypy_extensions==1.1.0 pathspec==0.12.1 platformdirs==4.3.7 typing_extensions==4.13.2
psutil==7.0.0"

# 3.10 and 3.13 always (the oldest and newest the tests run on), then the
# other 3.1x whose shared library is on this machine.
versions="3.10 3.13"
for lib in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[0-9]*/lib/libpython3.1[0-9].so \
	/usr/lib/*-linux-gnu/libpython3.1[0-9].so* /usr/local/lib/libpython3.1[0-9].so*; do
	[ -e "$lib" ] || continue
	v=$(basename "$lib" | sed -E 's/^libpython(3\.1[0-9]+)\.so.*/\1/')
	case " $versions " in *" $v "*) ;; *) versions="$versions $v" ;; esac
done

pip=(python3 -m pip)
mkdir -p "$dir"
for v in $versions; do
	stamp="$dir/.fetched-$v"
	these=$requirements what="numpy, pandas, matplotlib (with their dependencies), six, cffi"
	case "$v" in 3.10 | 3.13) these="$these $science $devtools" what="$what, scipy, scikit-learn, statsmodels, pyarrow, polars, lxml, pytest, ruff, black" ;; esac
	want=$(echo $these manylinux "$arch")
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		continue
	fi
	echo "wheelhouse.sh: CPython $v: $what into $dir"
	# shellcheck disable=SC2086 # the requirements are words
	"${pip[@]}" download --quiet --disable-pip-version-check --no-cache-dir --only-binary :all: \
		--python-version "$v" --implementation cp --abi "cp${v/./}" \
		--platform "manylinux_2_17_$arch" --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch" \
		--no-deps --dest "$dir" $these
	echo "$want" >"$stamp"
done
