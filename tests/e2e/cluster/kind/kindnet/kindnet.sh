#!/bin/bash
# A small stand-in for kind's kindnetd (whose module the Go module proxy does not serve): on
# each node, write the CNI config for the node's pod range (ptp + host-local + portmap, the
# plugins kind's base image ships), route every other node's pod range to that node, and
# masquerade pod traffic leaving the pod network. Runs as a DaemonSet with the host network.
set -u
: "${NODE_NAME:?}" "${POD_SUBNET:?}"
CONF=/etc/cni/net.d/10-kindnet.conflist
log() { echo "$(date -u +%H:%M:%S) $*"; }
sysctl -qw net.ipv4.ip_forward=1 || log "cannot set net.ipv4.ip_forward"
while true; do
    nodes=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>&1) \
        || { log "listing nodes: $nodes"; sleep 2; continue; }
    while read -r name cidr ip; do
        [ -n "$cidr" ] && [ -n "$ip" ] || continue
        if [ "$name" = "$NODE_NAME" ]; then
            want=$(printf '{"cniVersion":"0.3.1","name":"kindnet","plugins":[{"type":"ptp","ipMasq":false,"ipam":{"type":"host-local","dataDir":"/run/cni-ipam-state","routes":[{"dst":"0.0.0.0/0"}],"ranges":[[{"subnet":"%s"}]]},"mtu":1500},{"type":"portmap","capabilities":{"portMappings":true}}]}' "$cidr")
            if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
                echo "$want" > "$CONF.tmp" && mv "$CONF.tmp" "$CONF" && log "wrote $CONF for $cidr"
            fi
        elif ! ip route show "$cidr" | grep -q "via $ip "; then
            ip route replace "$cidr" via "$ip" && log "route $cidr via $ip ($name)"
        fi
    done <<<"$nodes"
    iptables -t nat -C POSTROUTING -s "$POD_SUBNET" ! -d "$POD_SUBNET" -m comment --comment kindnet -j MASQUERADE 2>/dev/null \
        || iptables -t nat -A POSTROUTING -s "$POD_SUBNET" ! -d "$POD_SUBNET" -m comment --comment kindnet -j MASQUERADE
    sleep 5
done
