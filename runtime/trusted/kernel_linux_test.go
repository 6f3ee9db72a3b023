package trusted

import "testing"

// TestSystemKernel reads the running kernel: adjtimex answers in read-only
// mode without privileges, CLOCK_BOOTTIME never goes back within one
// boot id, and an RTC name that could leave /sys/class/rtc is refused.
func TestSystemKernel(t *testing.T) {
	st, err := System.NTP()
	if err != nil {
		t.Fatalf("NTP: %v", err)
	}
	t.Logf("kernel NTP state: synced %v, maximum error %v", st.Synced, st.MaxError)
	a, err := System.Boot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := System.Boot()
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.ID != b.ID || b.Since < a.Since || a.Since <= 0 {
		t.Errorf("boot readings %+v then %+v, want one boot id and CLOCK_BOOTTIME positive, never going back", a, b)
	}
	for _, name := range []string{"", "../../etc", "rtc0/../x"} {
		if _, err := System.RTC(name); err == nil {
			t.Errorf("RTC(%q) read something", name)
		}
	}
}
