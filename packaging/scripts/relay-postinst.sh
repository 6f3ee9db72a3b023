#!/bin/sh
# postinst of torpor-relay: the system user and the state directory, then
# the unit: enabled and started on the first installation (the relay with
# no flags is a complete deployment on loopback), restarted on upgrades
# when enabled, left alone when the operator disabled it.
set -e
[ "$1" = configure ] || exit 0
user=torpor-relay
unit=torpor-relay.service
booted() { [ -d /run/systemd/system ]; }

if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers torpor-relay.conf
else
	getent passwd $user >/dev/null ||
		adduser --system --group --home /var/lib/torpor-relay --no-create-home --gecos "Torpor relay" $user
fi
install -d -m 0750 -o $user -g $user /var/lib/torpor-relay
if booted; then systemctl daemon-reload; fi

if [ -z "$2" ]; then
	systemctl enable $unit
	if booted; then
		systemctl start $unit || echo "torpor-relay: start failed: journalctl -u $unit" >&2
	fi
elif booted && systemctl is-enabled --quiet $unit; then
	systemctl restart $unit || echo "torpor-relay: restart failed: journalctl -u $unit" >&2
fi
exit 0
