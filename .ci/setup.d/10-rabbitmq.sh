#!/usr/bin/env bash
# Install RabbitMQ (Debian's rabbitmq-server, with its bundled AMQP 1.0 plugin) for the tests in
# tests/broker. Idempotent: does nothing but check when it is already there. Never starts the
# system broker: the tests run private loopback-only instances of their own.
set -euo pipefail

have_server() {
    compgen -G '/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server' >/dev/null &&
        compgen -G '/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins/rabbitmq_amqp1_0-*' >/dev/null
}

if ! have_server; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo -n"
    fi
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d 101: the package must not start (or enable at boot) the system-wide broker.
    policy=/usr/sbin/policy-rc.d
    made_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod 755 "$policy"
        made_policy=yes
    fi
    status=0
    for attempt in 1 2 3; do
        if $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends rabbitmq-server; then
            status=0
            break
        else
            status=$?
        fi
        echo "setup rabbitmq: apt-get failed (attempt $attempt), retrying" >&2
        sleep $((attempt * 5))
    done
    if [ -n "$made_policy" ]; then
        $SUDO rm -f "$policy"
    fi
    if [ "$status" -ne 0 ]; then
        echo "setup rabbitmq: could not install rabbitmq-server" >&2
        exit "$status"
    fi
    # If the package started a system broker anyway (no policy-rc.d honoured), stop it.
    if command -v systemctl >/dev/null && systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
        $SUDO systemctl stop rabbitmq-server || true
    fi
fi

# Enable the AMQP 1.0 plugin for the system configuration too (offline: no node needed). The
# tests' brokers do not depend on it: each writes its own enabled_plugins file.
if [ "$(id -u)" -eq 0 ] && ! grep -qs rabbitmq_amqp1_0 /etc/rabbitmq/enabled_plugins; then
    rabbitmq-plugins --offline enable rabbitmq_amqp1_0 >/dev/null
fi

have_server || { echo "setup rabbitmq: rabbitmq-server or its AMQP 1.0 plugin missing" >&2; exit 1; }
ls -d /usr/lib/rabbitmq/lib/rabbitmq_server-* | sed 's|.*/rabbitmq_server-|setup rabbitmq: rabbitmq-server |'
