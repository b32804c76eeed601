#!/bin/sh
# cgops.sh — instructions and simulated cache misses per operation (add,
# exp1000, cancel) for one implementation of the side-by-side driver at one
# or more N, under callgrind: deterministic, so a layout change can be judged
# in one run on a noisy machine.
#
#   PEERS_OUT=/tmp/peers-x ../shared/peers/build.sh /tmp/peers/src .   # once
#   bench/cgops/cgops.sh /tmp/peers-x hierwheel 1000 1000000
#   bench/cgops/cgops.sh /tmp/peers-x wahern 1000
#   CGOPS_NOEXP=1 bench/cgops/cgops.sh /tmp/peers-x timerwheel 1000000
#                                     # add and cancel only (see cgops.c)
#   CGOPS_NOEXP=1 bench/cgops/cgops.sh /tmp/peers-x floor 1000
#                                     # the interface alone (tb_backend_floor)
#
# The cache model is fixed (D1 32 KiB 8-way, LL 32 MiB 16-way, 64-byte
# lines) rather than detected, so figures compare across machines (Valgrind
# reads this VM's L3 as 512 MiB, which would hide every LL miss).
# D1 and LL misses are reads + writes.  10^6 takes a few minutes.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 PEERS_OUT IMPL N [N...]" >&2; exit 2; }
P=$1; I=$2; shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS_DIR:-$HERE/../../../shared/peers}
[ -f "$PEERS/common.h" ] || { echo "$0: no peers driver at $PEERS (set PEERS_DIR)" >&2; exit 1; }
[ -f "$P/tb-build/libtimerbench.a" ] || { echo "$0: build the driver first: PEERS_OUT=$P build.sh" >&2; exit 1; }
CG="valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 --collect-atstart=no"
for N in "$@"; do
	D=$(mktemp -d)
	cc -O2 -DNDEBUG -std=gnu11 -I"$PEERS" -I"$HERE/../../include" -c "$HERE/cgops.c" -o "$D/cgops.o"
	c++ -O2 -o "$D/cgops" "$D/cgops.o" $(ls "$P"/obj/*.o | grep -v '/main\.o$') \
		"${LIB:-$P/tb-build/libtimerbench.a}" -pthread -lm
	(cd "$D" && $CG --callgrind-out-file="$D/cg.out" "$D/cgops" "$I" "$N" >/dev/null 2>"$D/vg.log") ||
		{ cat "$D/vg.log" >&2; exit 1; }
	for f in "$D"/cg.out.*; do
		t=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
		grep '^summary:' "$f" | awk -v n="$N" -v t="$t" -v i="$I" '{
			printf "%-12s N=%-8d %-8s Ir/op %7.1f  D1miss/op %6.2f  LLmiss/op %6.2f\n",
			       i, n, t, $2 / n, ($6 + $7) / n, ($9 + $10) / n }'
	done
	rm -rf "$D"
done
