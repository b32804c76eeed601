#!/bin/sh
# references.sh — counts the reference timers of issue 39's targets (and
# the interface's floor, whose difference between the two drivers is the
# offset `./timerbench counts` applies) on the side-by-side driver, and
# prints bench/cgops/references.tsv: instructions per add and cancel at
# N = 10^3 under callgrind (cgops.sh; deterministic).
#
#   PEERS_OUT=/tmp/peers ../shared/peers/build.sh /tmp/peers/src .   # once
#   bench/cgops/references.sh /tmp/peers > bench/cgops/references.tsv
#
# The reference sources come from ../shared/peers/fetch.md (repositories
# and commits); they are fetched, never copied into the project.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 PEERS_OUT" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
printf '# issue 39 references: instructions per operation on the side-by-side driver\n'
printf '# (../shared/peers, sources at the commits of its fetch.md), N = 10^3, from\n'
printf '# bench/cgops/references.sh %s at %s; impl, op, N, instructions\n' \
	"$1" "$(cd "$HERE" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
for impl in wahern ratas libevent bsdtree floor; do
	CGOPS_NOEXP=1 "$HERE/cgops.sh" "$1" "$impl" 1000 |
		awk '{ printf "%s\t%s\t1000\t%s\n", $1, $3, $5 }'
done
