// Package mqtt holds the integration tests of operator commands over MQTT
// (transport/mqtt, manage.Commands, torporctl device), behind the
// integration build tag. Every scenario runs against a real mosquitto
// (the Debian package, started by the test on loopback with its own
// configuration and data directory) and against the broker torpor-relay
// embeds (mochi-mqtt), and the relay scenarios run a real relay, a real
// agent and the broker together. See docs/mqtt.md.
package mqtt
