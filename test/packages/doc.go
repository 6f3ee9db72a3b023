// Package packages holds the integration tests (build tag integration) of
// the Debian packages that `make packages` builds (scripts/packages.sh,
// packaging/). They build every package once per run and then:
//
//   - read each package with dpkg-deb: the control fields, the
//     architecture, the file list with modes and owners, the conffiles
//     and the maintainer scripts;
//   - check the binaries inside with debug/elf and debug/buildinfo (machine,
//     class, EABI, static, stripped, GOARCH/GOARM, CGO_ENABLED=0,
//     -trimpath) and run the 32-bit ARM ones under qemu-user on an ARMv6
//     CPU (arm1176, a Pi Zero's), where the armel build must run and the
//     armhf build must not;
//   - check the systemd units' hardening, run systemd-analyze verify on
//     them and keep their systemd-analyze security exposure below a
//     bound;
//   - install the relay (amd64) and the agent (arm64, through binfmt) with
//     dpkg into a copy-on-write overlay of this machine's root, entered in a
//     private mount namespace, so their maintainer scripts really run:
//     users, grants, the key, enablement, a relay serving as its user, an
//     upgrade and a purge;
//   - run the preinst's CPU check against cpuinfo files of the boards
//     involved, and the version derivation against a scratch git
//     repository.
//
// Go's ELF header does not record a float ABI (e_flags is EABI version 5
// with neither EF_ARM_ABI_FLOAT_SOFT nor _HARD, and there is no
// .ARM.attributes section) because a static Go binary never calls C, so
// armel and armhf are told apart by the GOARM setting in the build
// information and by running them on an ARMv6 CPU.
package packages
