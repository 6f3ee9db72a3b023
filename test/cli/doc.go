// Package cli holds the scripted end-to-end test of torporctl, behind the
// integration build tag: testscript scripts in testdata drive the real
// torporctl binary against a real relay, the embedded MQTT broker and a
// real agent (runtime with operator commands) running in the test process
// on the real clock.
package cli
