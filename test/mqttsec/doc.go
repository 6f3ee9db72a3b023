// Package mqttsec holds the integration tests of the MQTT control plane's
// authentication, behind the integration build tag: the
// embedded broker refuses anonymous clients, made-up credentials and a
// device using another's client id; a 5 MiB command never reaches the
// device's store; and torporctl, on a broker that authenticates nobody
// (mosquitto with allow_anonymous), refuses forged, copied and expired
// statuses instead of signing commands for whoever published them.
package mqttsec
