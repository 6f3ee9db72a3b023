package main

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// setupNet brings lo and ifname up and gives ifname the address prefix
// (e.g. 10.0.2.15/24). The prefix route the kernel adds makes QEMU's
// user-network host, 10.0.2.2, reachable without a gateway.
func setupNet(ifname, prefix string) error {
	pfx, err := netip.ParsePrefix(prefix)
	if err != nil || !pfx.Addr().Is4() {
		return fmt.Errorf("torpor.net=%q: want an IPv4 address/prefix", prefix)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := up(fd, "lo"); err != nil {
		return err
	}
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return err
	}
	if err := ifr.SetInet4Addr(pfx.Addr().AsSlice()); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, ifr); err != nil {
		return fmt.Errorf("SIOCSIFADDR %s: %w", ifname, err)
	}
	mask := netip.PrefixFrom(netip.AddrFrom4([4]byte{255, 255, 255, 255}), pfx.Bits()).Masked().Addr().AsSlice()
	if err := ifr.SetInet4Addr(mask); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFNETMASK, ifr); err != nil {
		return fmt.Errorf("SIOCSIFNETMASK %s: %w", ifname, err)
	}
	return up(fd, ifname)
}

func up(fd int, name string) error {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS %s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS %s: %w", name, err)
	}
	return nil
}
