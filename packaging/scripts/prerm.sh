#!/bin/sh
# prerm of torpor-agent and torpor-relay: stop the service on removal. An
# upgrade leaves it running; the new postinst restarts it.
set -e
unit=${DPKG_MAINTSCRIPT_PACKAGE:?dpkg sets DPKG_MAINTSCRIPT_PACKAGE}.service
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop "$unit" || true
fi
exit 0
