// Package envelope holds the signed objects a Torpor device publishes on
// its MQTT topics and operators verify: replies, statuses (State, Status,
// with lifetimes that end what a retained status says once it may no
// longer be true) and events. Each is a Governed Object signed by the
// device's DID (package governed); VerifyObject, VerifyStatus and
// VerifyEvent check one as an operator received it. It also holds the
// payload encoding: JSON, or CBOR in the JSON data model when the MQTT 5
// Content Type says so (Encode, DecodePayload), bounded by MaxPayload.
//
// Package transport/mqtt publishes these objects over the device's
// connection; docs/mqtt.md documents every payload.
package envelope
