#!/bin/sh
# peers-probe.sh — builds the side-by-side driver of ../shared/peers with
# peers-probe.patch applied (in a temporary copy; ../shared is not written),
# for telling the driver's own costs from a backend's:
#
#   PEERS_TOUCH=1   the timerbench adapter touches its handle array at create,
#                   as the reference adapters touch their node arrays
#                   (timeout_init, Node's constructor); as shipped, the timed
#                   add of every timerbench backend pays the array's first-
#                   touch page faults (1919 at N = 10^6)
#   PEERS_SEQ=1     the adapter stores the handles in cancel order, so a
#                   cancel reads its handle sequentially: what an intrusive
#                   API (the node's address computed from the index) gets
#   PEERS_WARM=1    an untimed fill of a scratch structure, destroyed again,
#                   before each timed add's create, so the add does not pay for fetching the
#                   implementation's code and data back after the others ran
#                   (at N = 10^3 a fill takes a few microseconds, so that
#                   cold start is several ns per add)
#   PEERS_FAULTS=1  prints the minor page faults inside each timed add and
#                   cancel (getrusage): deterministic where the times are not
#
#   bench/cgops/peers-probe.sh /tmp/peers-probe [PEER_SRC_DIR]
#   PEERS_TOUCH=1 taskset -c 0 /tmp/peers-probe/drv --sizes 1000000 --noexp1
set -eu
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [PEER_SRC_DIR]" >&2; exit 2; }
OUT=$1
SRC=${2:-/tmp/peers/src}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS_DIR:-$HERE/../../../shared/peers}
[ -f "$PEERS/build.sh" ] || { echo "$0: no peers driver at $PEERS (set PEERS_DIR)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp -r "$PEERS"/. "$T"
(cd "$T" && git apply -p1 "$HERE/peers-probe.patch") ||
	{ echo "$0: peers-probe.patch does not apply to $PEERS: the driver changed" >&2; exit 1; }
PEERS_OUT=$OUT "$T/build.sh" "$SRC" "$HERE/../.."
