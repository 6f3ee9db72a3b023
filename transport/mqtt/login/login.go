// Package login is what a Torpor MQTT client presents at CONNECT: its DID
// as the User Name and a fresh DID Bearer token as the Password
// (Authenticate), or a static password under StaticUser for a broker that
// cannot check tokens; the Maximum Packet Size it accepts (MaxPacketSize);
// and the User Property that carries a key handover after a rotation
// (HandoverProperty). Package transport/mqtt's Client and torporctl both log
// in this way; transport/broker checks it.
package login

import (
	"fmt"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// MaxPacketSize is the Maximum Packet Size every Torpor client announces
// in its CONNECT (MQTT 5.0 Section 3.1.2.11.4): envelope.MaxPayload and 4 KiB for
// the fixed header, topic and properties. The broker must not send a
// larger packet (it drops it instead); the embedded broker refuses larger
// ones too (broker.DefaultMaxPacketSize is the same).
const MaxPacketSize = envelope.MaxPayload + 4<<10

// TokenTTL is the lifetime of the DID Bearer token a client presents as
// its MQTT password: it is only checked at CONNECT, and a fresh one is
// made for every connection.
const TokenTTL = 2 * time.Minute

// Authenticate completes a CONNECT packet for a broker that authenticates
// DIDs (transport/broker): the User Name is key's DID and the Password a
// DID Bearer token (transport/bearer) issued now for the broker's URL as
// the client dials it (bearer.MQTTAudience) (MQTT 5.0 Sections 3.1.3.5 and
// 3.1.3.6). It also sets the Maximum Packet Size property (MaxPacketSize).
// A broker that cannot check tokens (mosquitto with a password file,
// torporctl mqtt acl) gets password instead, when it is not empty: a static
// secret of this client's.
// Its User Name is then StaticUser.
func Authenticate(cp *paho.Connect, key *did.PrivateKey, brokerURL string, now time.Time, password []byte) error {
	cp.Username, cp.UsernameFlag = key.DID().String(), true
	if len(password) > 0 {
		cp.Username = StaticUser(key.DID())
		cp.Password, cp.PasswordFlag = password, true
	} else {
		aud, err := bearer.MQTTAudience(brokerURL)
		if err != nil {
			return err
		}
		tok, err := bearer.Issue(key, aud, now, TokenTTL)
		if err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		cp.Password, cp.PasswordFlag = []byte(tok), true
	}
	if cp.Properties == nil {
		cp.Properties = &paho.ConnectProperties{}
	}
	max := uint32(MaxPacketSize)
	cp.Properties.MaximumPacketSize = &max
	return nil
}

// StaticUser is the MQTT User Name of a client authenticating with a
// static password: its DID without the "did:key:" prefix (the multibase
// key), since mosquitto's password file cannot hold ':' in a user name.
func StaticUser(d did.DID) string {
	return strings.TrimPrefix(d.String(), "did:key:")
}

// HandoverProperty is the CONNECT User Property that carries the key
// handover (broker.HandoverProperty).
const HandoverProperty = "torpor-key-handover"
