package boards

const dataDir = "/var/lib/torpor"

var (
	armv6 = Target{GOARCH: "arm", GOARM: "6"}
	armv7 = Target{GOARCH: "arm", GOARM: "7"}
	arm64 = Target{GOARCH: "arm64"}
)

// piNoRTC is the power note shared by the Raspberry Pi 0–4.
const piNoRTC = "No RTC on board. For timed wakes add an RTC HAT (DS3231 and similar, kernel driver rtc-ds1307 via " +
	"dtoverlay=i2c-rtc,ds3231; it becomes rtc0 and enables the rtc method), or halt and let an external power " +
	"controller restore power or pull GPIO3 low (a halted Pi 1-4 boots on GPIO3 low; GPIO3 is also I2C SCL, so " +
	"a HAT on I2C1 and a GPIO3 wake share the pin). Suspend-to-idle only: no deep suspend."

// piMethods are the Raspberry Pi 0–4 methods; rtc needs the RTC HAT.
var piMethods = []Method{Timer, GPIO, RTC, GPIOKeys, PowerOffGPIO}

// piWakeKey is the label docs/boards.md's gpio-key overlay gives the
// button.
const piWakeKey = "torpor-wake"

// piThrottled is the Raspberry Pi firmware driver's get_throttled file
// (Raspberry Pi OS kernels since 4.14; the flags of vcgencmd
// get_throttled, https://www.raspberrypi.com/documentation/computers/os.html#get_throttled).
const piThrottled = "/sys/devices/platform/soc/soc:firmware/get_throttled"

// piHealth is what a Raspberry Pi 0-4 can report: the SoC's thermal zone
// (cpu-thermal in the Pi device trees), the firmware's throttled flags
// and, on boards with on-board WiFi, wlan0. None has a supply voltage
// the kernel reads.
func piHealth(wifi string) Health {
	return Health{ThermalZone: "cpu-thermal", Throttled: piThrottled, WiFi: wifi}
}

func pi(name, title string, models []string, targets ...Target) Board {
	return Board{
		Name: name, Title: title, Models: models, Targets: targets,
		Methods: piMethods, Default: Timer, Sleep: "freeze",
		GPIOChip: "gpiochip0", WakeLine: "GPIO17", WakeLineNumber: 17, WakeKey: piWakeKey,
		DataDir: dataDir, Power: piNoRTC, Health: piHealth(piWiFi[name]),
	}
}

// piWiFi names the on-board WiFi interface of the Pi models with one (on
// a Compute Module 3 or 4 without WiFi, which share the rpi-3 and rpi-4
// profiles, the reading is simply absent).
var piWiFi = map[string]string{"rpi-zero-w": "wlan0", "rpi-zero-2-w": "wlan0", "rpi-3": "wlan0", "rpi-4": "wlan0"}

// Models are prefixes of the device tree's model string, as the Raspberry
// Pi kernels' device trees name the boards ("Raspberry Pi Model B Plus Rev
// 1.2", "Raspberry Pi Zero Rev 1.3", "Raspberry Pi 2 Model B Rev 1.1").
var profiles = []Board{
	pi("rpi-1", "Raspberry Pi 1 (A, B, A+, B+, Compute Module 1)", []string{"Raspberry Pi Model", "Raspberry Pi Compute Module Rev"}, armv6),
	pi("rpi-zero-w", "Raspberry Pi Zero W (and Zero)", []string{"Raspberry Pi Zero W", "Raspberry Pi Zero Rev"}, armv6),
	pi("rpi-zero-2-w", "Raspberry Pi Zero 2 W", []string{"Raspberry Pi Zero 2 W"}, arm64, armv7),
	pi("rpi-2", "Raspberry Pi 2", []string{"Raspberry Pi 2 Model"}, armv7),
	pi("rpi-3", "Raspberry Pi 3 (and Compute Module 3)", []string{"Raspberry Pi 3 Model", "Raspberry Pi Compute Module 3"}, arm64, armv7),
	pi("rpi-4", "Raspberry Pi 4", []string{"Raspberry Pi 4 Model", "Raspberry Pi 400", "Raspberry Pi Compute Module 4"}, arm64, armv7),
	{
		Name: "rpi-5", Title: "Raspberry Pi 5", Models: []string{"Raspberry Pi 5 Model", "Raspberry Pi Compute Module 5"},
		Targets: []Target{arm64},
		Methods: []Method{Timer, GPIO, RTC, RTCPowerOff, GPIOKeys}, Default: RTCPowerOff, Sleep: "freeze",
		RTC: "rtc0", GPIOChip: "gpiochip0", WakeLine: "GPIO17", WakeLineNumber: 17, WakeKey: piWakeKey,
		DataDir: dataDir,
		Power: "On-board RTC (rpi-rtc; battery connector for keeping time unpowered). Wakes from halt on the RTC alarm " +
			"when the bootloader has POWER_OFF_ON_HALT=1 (rpi-eeprom-config --edit), so the default powers off " +
			"between windows. The power button also boots it.",
		// The Pi 5's firmware node has another path; its get_throttled is
		// not named until checked on a board.
		Health: Health{ThermalZone: "cpu-thermal", WiFi: "wlan0"},
	},
	{
		Name: "generic-armv7", Title: "Generic ARMv7 board with an RTC", Targets: []Target{armv7},
		Methods: []Method{Timer, GPIO, RTC, GPIOKeys}, Default: RTC, Sleep: "freeze",
		RTC: "rtc0", GPIOChip: "gpiochip0", WakeLine: "", WakeLineNumber: 0, WakeKey: "torpor-wake",
		DataDir: dataDir,
		Power: "Any 32-bit ARMv7 Linux board whose kernel exposes an RTC with a wake alarm as rtc0 " +
			"(check /sys/class/rtc/rtc0/wakealarm and /sys/power/state). Boards without an FPU need GOARM=7,softfloat.",
	},
	{
		Name: "generic-arm64", Title: "Generic ARM64 board with an RTC", Targets: []Target{arm64},
		Methods: []Method{Timer, GPIO, RTC, GPIOKeys}, Default: RTC, Sleep: "freeze",
		RTC: "rtc0", GPIOChip: "gpiochip0", WakeLine: "", WakeLineNumber: 0, WakeKey: "torpor-wake",
		DataDir: dataDir,
		Power: "Any ARM64 Linux board whose kernel exposes an RTC with a wake alarm as rtc0 " +
			"(check /sys/class/rtc/rtc0/wakealarm and /sys/power/state). 32-bit armv7 binaries also run on " +
			"kernels with CONFIG_COMPAT.",
	},
	{
		Name: "qemu-virt", Title: "QEMU virt (aarch64, PL031 RTC, PL061 GPIO)", Models: []string{"linux,dummy-virt"},
		Targets: []Target{arm64},
		Methods: []Method{Timer, GPIO, RTC, GPIOKeys}, Default: RTC, Sleep: "freeze",
		RTC: "rtc0", GPIOChip: "gpiochip0", WakeLine: "WAKE_BTN", WakeLineNumber: 3, WakeKey: "GPIO Key Poweroff",
		DataDir: dataDir,
		Power: "The system-test board: qemu-system-aarch64 -M virt with Debian's arm64 kernel. PL031 RTC wakes it from " +
			"freeze; QMP system_powerdown pulses PL061 line 3, which wakes it only when the device tree marks the " +
			"gpio-keys node wakeup-source (test/qemu patches it) and gpio_keys.ko is loaded. mem is s2idle too " +
			"(QEMU's PSCI has no SYSTEM_SUSPEND).",
	},
}
