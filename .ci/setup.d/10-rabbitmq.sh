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
    # shellcheck source=../lib/apt.sh
    . "$(dirname "$0")/../lib/apt.sh"
    apt_install_missing_unstarted rabbitmq-server ||
        { echo "setup rabbitmq: could not install rabbitmq-server" >&2; exit 1; }
    # If the package started a system broker anyway (no policy-rc.d honoured), stop it.
    if command -v systemctl >/dev/null && systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
        $sudo systemctl stop rabbitmq-server || true
    fi
fi

# Enable the AMQP 1.0 plugin for the system configuration too (offline: no node needed). The
# tests' brokers do not depend on it: each writes its own enabled_plugins file.
if [ "$(id -u)" -eq 0 ] && ! grep -qs rabbitmq_amqp1_0 /etc/rabbitmq/enabled_plugins; then
    rabbitmq-plugins --offline enable rabbitmq_amqp1_0 >/dev/null
fi

have_server || { echo "setup rabbitmq: rabbitmq-server or its AMQP 1.0 plugin missing" >&2; exit 1; }
ls -d /usr/lib/rabbitmq/lib/rabbitmq_server-* | sed 's|.*/rabbitmq_server-|setup rabbitmq: rabbitmq-server |'
