// Command wakeprobe runs inside the QEMU guest of the system tests: it
// sleeps through Torpor's own wake code (wake/rtc on the guest's PL031
// RTC, suspend-to-idle through /sys/power/state) and prints what woke it
// as "RESULT <json>" lines on the console, for the host to assert on.
//
//	wakeprobe -method sysfs|ioctl -after 4s [-keys "GPIO Key Poweroff"] [-url URL]
//	wakeprobe -method gpio
//
// With -keys, a gpio-keys button with that label is a wakeup source too
// (the test's device tree marks it wakeup-source); the RTC alarm then is
// the fallback that ends the test if the GPIO wake does not come. Before
// suspending it turns on the kernel's PM debug messages, so the host sees
// "PM: suspend-to-idle" on the console when the guest is frozen and can
// press the button then. After the wake, -url is fetched from the host
// (QEMU user networking) and its status and body reported: the path a
// woken agent takes to drain its relay.
//
// -method gpio waits in process, without suspending, for an edge on the
// qemu-virt profile's wake line through wake/board, which opens it with
// periph's gpioioctl driver (the GPIO character device), as the agent
// does on a Pi.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/board"
	"github.com/torpor-dev/torpor/wake/rtc"
	"github.com/torpor-dev/torpor/wake/suspend"
)

func main() {
	method := flag.String("method", "sysfs", "RTC interface: sysfs or ioctl.")
	after := flag.Duration("after", 4*time.Second, "Arm the RTC alarm this far ahead.")
	keys := flag.String("keys", "", "Label of a gpio-keys wakeup source, reported as a GPIO wake.")
	url := flag.String("url", "", "Fetch this URL after the wake.")
	flag.Parse()
	if os.Getenv("TORPOR_GUEST") != "1" {
		// It suspends the machine it runs on: only inside the test guest.
		fmt.Fprintln(os.Stderr, "wakeprobe: TORPOR_GUEST=1 not set; run it only in the QEMU test guest")
		os.Exit(2)
	}
	r := probe(*method, *after, *keys, *url)
	report.Print(r)
	if r.Error != "" {
		os.Exit(1)
	}
}

func probe(method string, after time.Duration, keys, url string) report.Wakeprobe {
	if method == "gpio" {
		return probeGPIO()
	}
	r := report.Wakeprobe{Method: method}
	m, err := parseMethod(method)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	src := &rtc.Source{Alarm: &rtc.Alarm{Method: m}, State: suspend.Freeze}
	if keys != "" {
		src.Keys = []string{keys}
	}
	r.RTCName = src.Alarm.Label()
	_, err = os.Stat("/sys/power/pm_wakeup_irq")
	r.WakeupIRQOK = err == nil
	// Make the kernel say "PM: suspend-to-idle" on the console while the
	// console stays up (no_console_suspend), so the host can tell when the
	// guest is frozen.
	os.WriteFile("/sys/power/pm_debug_messages", []byte("1"), 0)
	os.WriteFile("/proc/sys/kernel/printk", []byte("8"), 0)
	until := time.Now().Add(after)
	r.BeforeSecond = until.Unix()
	fmt.Println("MARK suspending")
	w, err := src.Wait(context.Background(), until)
	os.WriteFile("/proc/sys/kernel/printk", []byte("4"), 0)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	fill(&r, w)
	if b, err := os.ReadFile("/sys/power/suspend_stats/success"); err == nil {
		r.SuspendOK = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/sys/class/rtc/rtc0/wakealarm"); err == nil {
		r.AlarmAfter = strings.TrimSpace(string(b))
	}
	if url != "" {
		fetch(&r, url)
	}
	return r
}

func parseMethod(s string) (rtc.Method, error) {
	switch m := rtc.Method(s); m {
	case rtc.Sysfs, rtc.Ioctl:
		return m, nil
	}
	return "", fmt.Errorf("unknown method %q", s)
}

func fill(r *report.Wakeprobe, w wake.Wake) {
	r.Reason, r.Source, r.IRQ, r.Detail = w.Reason.String(), w.Source, w.IRQ, w.Detail
	r.SleptBootMS = w.Slept.Boot.Milliseconds()
	r.SleptMonoMS = w.Slept.Mono.Milliseconds()
	r.SleptWallMS = w.Slept.Wall.Milliseconds()
}

func fetch(r *report.Wakeprobe, url string) {
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		r.Error = "fetch: " + err.Error()
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	r.HTTPStatus, r.HTTPBody = resp.StatusCode, string(b)
}

func probeGPIO() report.Wakeprobe {
	r := report.Wakeprobe{Method: "gpio"}
	b, err := boards.ByName("qemu-virt")
	if err == nil {
		var src wake.Source
		src, err = board.New(b, board.Config{Methods: []boards.Method{boards.GPIO}})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			fmt.Println("MARK waiting")
			var w wake.Wake
			w, err = src.Wait(ctx, time.Time{})
			fill(&r, w)
		}
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}
