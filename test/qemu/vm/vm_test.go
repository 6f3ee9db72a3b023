package vm

import "testing"

func TestCmdline(t *testing.T) {
	m := Machine{Run: "/bin/agent", Args: []string{"--config", "/etc/torpor/agent.json", "two words"},
		Env: []string{"TZ=UTC"}, Writes: []string{"/proc/sys/kernel/printk=8"}, Net: true, TimeSync: "http://10.0.2.2:8123/", Append: []string{"quiet"}}
	want := `console=ttyAMA0 panic=-1 loglevel=4 no_console_suspend torpor.net=10.0.2.15/24 torpor.run=/bin/agent ` +
		`torpor.arg=--config torpor.arg=/etc/torpor/agent.json torpor.arg="two words" torpor.env=TZ=UTC torpor.write=/proc/sys/kernel/printk=8 torpor.timesync=http://10.0.2.2:8123/ quiet`
	if got := m.cmdline(); got != want {
		t.Errorf("cmdline() =\n%s\nwant\n%s", got, want)
	}
}
