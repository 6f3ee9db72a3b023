#!/bin/sh
# postrm of torpor-agent and torpor-relay. Removal keeps the enablement, so
# a reinstallation runs as before; purge forgets it. dpkg deletes the
# conffiles on purge; the state directory (the agent's key and MLS state,
# the relay's queue) is kept: deleting an identity is the operator's call.
set -e
pkg=${DPKG_MAINTSCRIPT_PACKAGE:?dpkg sets DPKG_MAINTSCRIPT_PACKAGE}
case "$1" in
purge)
	rm -f "/etc/systemd/system/multi-user.target.wants/$pkg.service"
	rmdir /etc/torpor 2>/dev/null || true
	case $pkg in
	torpor-agent) state=/var/lib/torpor ;;
	*) state=/var/lib/$pkg ;;
	esac
	if [ -d "$state" ]; then echo "$pkg: kept $state; delete it to forget this installation's keys and data"; fi
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
