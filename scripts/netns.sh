#!/usr/bin/env bash
# Build (or remove) a small test network on this machine out of network
# namespaces: a bridge in the root namespace and one namespace per role,
# each joined to the bridge by a veth pair, all in 198.18.0.0/15 (the
# benchmarking range, RFC 2544), so that beamlab's distribution, epmd and
# AMQP traffic cross real (virtual) links instead of loopback.
#
#   scripts/netns.sh up|down|status
#
# Needs root (CAP_NET_ADMIN). Environment:
#   BEAMLAB_NETNS_PREFIX  short prefix of every name (default bl13)
#   BEAMLAB_NETNS_NET     first three octets of the /24 (default 198.18.13)
#   BEAMLAB_NETNS_ROLES   namespaces to create (default "broker n1 n2")
# The root namespace (the controller) is .1 on the bridge; role i is .(i+2).
# `up' prints one line per namespace: NAME ADDRESS.
set -euo pipefail

P=${BEAMLAB_NETNS_PREFIX:-bl13}
NET=${BEAMLAB_NETNS_NET:-198.18.13}
ROLES=${BEAMLAB_NETNS_ROLES:-broker n1 n2}
BR="${P}br"

up() {
    down >/dev/null 2>&1 || true
    ip link add "$BR" type bridge
    ip addr add "$NET.1/24" dev "$BR"
    ip link set "$BR" up
    local i=0
    for role in $ROLES; do
        local ns="$P-$role" host="${P}h$i" peer="${P}p$i" addr="$NET.$((i + 2))"
        ip netns add "$ns"
        ip link add "$host" type veth peer name "$peer"
        ip link set "$peer" netns "$ns"
        ip link set "$host" master "$BR"
        ip link set "$host" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev "$peer"
        ip -n "$ns" link set "$peer" up
        echo "$ns $addr"
        i=$((i + 1))
    done
}

down() {
    local i=0
    for role in $ROLES; do
        ip netns pids "$P-$role" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
        ip netns del "$P-$role" 2>/dev/null || true
        ip link del "${P}h$i" 2>/dev/null || true
        i=$((i + 1))
    done
    ip link del "$BR" 2>/dev/null || true
}

status() {
    ip -br addr show dev "$BR" 2>/dev/null || { echo "no bridge $BR"; return 3; }
    for role in $ROLES; do
        echo "$P-$role: $(ip -n "$P-$role" -br -4 addr 2>/dev/null | grep -v '^lo' | tr -s ' ')"
    done
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
