package suspend

import "golang.org/x/sys/unix"

// powerOff flushes the file systems and powers the machine off. It needs
// CAP_SYS_BOOT and returns only on failure.
func powerOff() error {
	unix.Sync()
	return unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}
