package vm

import (
	"strings"
	"testing"
)

const virtDTS = `	gpio-keys {
		compatible = "gpio-keys";

		poweroff {
			gpios = <0x8004 0x03 0x00>;
			linux,code = <0x74>;
			label = "GPIO Key Poweroff";
		};
	};

	pl061@9030000 {
		phandle = <0x8004>;
		gpio-controller;
		#gpio-cells = <0x02>;
		compatible = "arm,pl061\0arm,primecell";
	};
`

func TestPatchDTS(t *testing.T) {
	got, err := PatchDTS(virtDTS)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"label = \"GPIO Key Poweroff\";\n\t\t\twakeup-source;\n\t\t};",
		"#gpio-cells = <0x02>;\n\t\tgpio-line-names = \"\", \"\", \"\", \"WAKE_BTN\",",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("patched DTS lacks %q:\n%s", want, got)
		}
	}
	if _, err := PatchDTS("/ { };"); err == nil {
		t.Error("PatchDTS of a tree without gpio-keys succeeded")
	}
}
