// Command sink is the application of the agent under test in the QEMU
// guest: torpor-agent's exec handler (runtime/deliver.Exec) runs it once
// per accepted object with the delivery as JSON on its standard input. It
// writes one line per delivery to the console,
//
//	DELIVERED {"objectId":"…","issuer":"did:key:…","purpose":"comms:message","text":"…","attempt":0}
//
// for the host to read, and prints a receipt on its standard output, which
// the agent keeps. The agent captures the handler's own output, so the line
// goes to /dev/console directly (-out names another file).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// delivery is the part of runtime/deliver.Delivery the sink reports.
type delivery struct {
	Object   json.RawMessage `json:"object"`
	ObjectID string          `json:"objectId"`
	Issuer   string          `json:"issuer"`
	Purpose  string          `json:"purpose"`
	Attempt  int             `json:"attempt"`
}

// Line is what a DELIVERED line carries.
type Line struct {
	ObjectID string `json:"objectId"`
	Issuer   string `json:"issuer"`
	Purpose  string `json:"purpose"`
	Text     string `json:"text"`
	Attempt  int    `json:"attempt"`
}

func main() {
	out := flag.String("out", "/dev/console", "Where to write the DELIVERED line.")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	var d delivery
	if err := json.NewDecoder(os.Stdin).Decode(&d); err != nil {
		return fmt.Errorf("reading the delivery: %w", err)
	}
	// The Governed Object's payload of the tests' messages: {"text": …}.
	var obj struct {
		Payload struct {
			Text string `json:"text"`
		} `json:"payload"`
	}
	json.Unmarshal(d.Object, &obj)
	b, err := json.Marshal(Line{ObjectID: d.ObjectID, Issuer: d.Issuer, Purpose: d.Purpose, Text: obj.Payload.Text, Attempt: d.Attempt})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	// One write, so that the line is not split by other console output.
	if _, err := f.Write(append(append([]byte("DELIVERED "), b...), '\n')); err != nil {
		f.Close()
		return err
	}
	// On a terminal, wait until the UART has sent the line (tcdrain), so
	// that a power cut after the hand-off cannot take it from the host;
	// on any other file the call fails and changes nothing.
	unix.IoctlSetInt(int(f.Fd()), unix.TCSBRK, 1)
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf(`{"effectId":"sink-%s"}`, d.ObjectID)
	return nil
}
