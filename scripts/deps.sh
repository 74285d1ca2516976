#!/bin/sh
# Check (and, as root, install) the Debian packages commtrace needs.
# (python3-h5py, python3-pandas: the round-trip test reads the outputs back;
# chromium: the html test loads the page in headless Chromium; graphviz: the
# functions test renders its dot output)
# Usage: scripts/deps.sh        (MPI=1 in the environment adds OpenMPI for
#                                 the MPI sweep, commanalyze-mpi; FUZZ=1
#                                 clang and libFuzzer for make fuzz)
set -eu
need="gcc g++ make pkg-config libzstd-dev zstd libzydis-dev libpfm4-dev libdwarf-dev libelf-dev liblzma-dev libhdf5-dev hdf5-tools python3 python3-h5py python3-pandas chromium graphviz"
[ "${MPI:-}" = 1 ] && need="$need libopenmpi-dev openmpi-bin"
[ "${FUZZ:-}" = 1 ] && need="$need clang libclang-rt-dev"
missing=""
for p in $need; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
	exit 0
fi
echo "deps: missing Debian packages:$missing" >&2
echo "deps: run as root:  apt-get install -y$missing" >&2
exit 1
