#!/bin/sh
# postinst of torpor-agent: the system user, the state directory, the
# device key and the grants that let the agent sleep without root. The
# unit is not enabled here: /etc/torpor/agent.json needs the relay, the
# purposes and the handlers first (docs/packages.md).
set -e
[ "$1" = configure ] || exit 0
user=torpor-agent
unit=torpor-agent.service
state=/var/lib/torpor
key=$state/agent.key
conf=/etc/torpor/agent.json
booted() { [ -d /run/systemd/system ]; }

if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers torpor-agent.conf
else
	getent group gpio >/dev/null || addgroup --system gpio
	getent passwd $user >/dev/null ||
		adduser --system --group --home $state --no-create-home --gecos "Torpor agent" $user
fi
install -d -m 0750 -o $user -g $user $state

# dpkg unpacks the conffile as root:root 0640; the agent reads it as $user.
if [ "$(stat -c %G $conf)" = root ]; then
	chgrp $user $conf
fi

if [ ! -e $key ]; then
	did=$(umask 077 && torporctl keygen $key)
	chown $user:$user $key
	echo "torpor-agent: generated the device key $key: this device is $did"
fi

# The sysfs and device grants (tmpfiles.d and udev apply them at every
# boot) take effect now only on a booted system, never in an image build's
# chroot, where /sys and /dev may be the build host's.
if booted; then
	systemd-tmpfiles --create torpor-agent.conf || echo "torpor-agent: systemd-tmpfiles could not apply every line" >&2
	for a in /sys/class/rtc/rtc*/wakealarm; do
		if [ -e "$a" ]; then chgrp $user "$a" && chmod g+w "$a"; fi
	done
	for c in /dev/gpiochip*; do
		if [ -c "$c" ] && [ "$(stat -c %G "$c")" = root ]; then chgrp gpio "$c" && chmod 0660 "$c"; fi
	done
	udevadm control --reload-rules 2>/dev/null || true
	systemctl daemon-reload
fi

if [ -z "$2" ]; then
	cat <<MSG
torpor-agent: fill in $conf (relay, purposes, handlers), then
  systemctl enable --now $unit
MSG
elif booted && systemctl is-enabled --quiet $unit; then
	systemctl restart $unit || echo "torpor-agent: restart failed: journalctl -u $unit" >&2
fi
exit 0
