#!/bin/sh
# preinst of the 32-bit ARM packages: refuse a CPU the Go binaries cannot
# run on, rather than install a daemon that dies at every start. The armhf
# build (GOARM=7) needs VFPv3, which the ARMv6 CPU of a Raspberry Pi Zero,
# Zero W or 1 lacks although Raspberry Pi OS calls that system armhf too;
# the armel build (GOARM=6) needs VFP. Only a /proc/cpuinfo that describes
# a 32-bit ARM CPU is judged, so an image built in a chroot on another
# machine installs. TORPOR_SKIP_CPU_CHECK=1 skips the check;
# TORPOR_CPUINFO names another cpuinfo file (tests).
set -e
case "$1" in install | upgrade) ;; *) exit 0 ;; esac
[ "${TORPOR_SKIP_CPU_CHECK:-}" = 1 ] && exit 0
case "${DPKG_MAINTSCRIPT_ARCH:-}" in
armhf) need=vfpv3 ;;
armel) need=vfp ;;
*) exit 0 ;;
esac
features=$(sed -n 's/^Features[[:space:]]*:[[:space:]]*//p' "${TORPOR_CPUINFO:-/proc/cpuinfo}" 2>/dev/null | head -n 1)
case " $features " in
*" half "* | *" thumb "* | *" vfp "*) ;; # a 32-bit ARM feature list
*) exit 0 ;;
esac
case " $features " in *" $need "*) exit 0 ;; esac
pkg=${DPKG_MAINTSCRIPT_PACKAGE:-this package}
if [ "$need" = vfpv3 ]; then
	cat >&2 <<MSG
$pkg (armhf) is built for ARMv7 (GOARM=7) and needs VFPv3, which this CPU
lacks (Features: $features). This is an ARMv6 board such as a Raspberry Pi
Zero, Zero W or 1: install the armel packages instead, built for ARMv6:

  dpkg --add-architecture armel
  apt install ./torporctl_<version>_armel.deb ./torpor-agent_<version>_armel.deb

(TORPOR_SKIP_CPU_CHECK=1 skips this check.)
MSG
else
	cat >&2 <<MSG
$pkg (armel) is built for ARMv6 with VFP (GOARM=6), which this CPU lacks
(Features: $features). ARMv5 boards without a floating-point unit are not
supported. (TORPOR_SKIP_CPU_CHECK=1 skips this check.)
MSG
fi
exit 1
