package mqtt

import (
	"fmt"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// MaxPacketSize is the Maximum Packet Size every Torpor client announces
// in its CONNECT (MQTT 5.0 Section 3.1.2.11.4): MaxPayload and 4 KiB for
// the fixed header, topic and properties. The broker must not send a
// larger packet (it drops it instead); the embedded broker refuses larger
// ones too (broker.DefaultMaxPacketSize is the same).
const MaxPacketSize = MaxPayload + 4<<10

// TokenTTL is the lifetime of the DID Bearer token a client presents as
// its MQTT password: it is only checked at CONNECT, and a fresh one is
// made for every connection.
const TokenTTL = 2 * time.Minute

// Authenticate completes a CONNECT packet for a broker that authenticates
// DIDs (transport/broker): the User Name is key's DID and the Password a
// DID Bearer token (transport/bearer) issued now for the broker's URL as
// the client dials it (bearer.MQTTAudience) (MQTT 5.0 Sections 3.1.3.5 and
// 3.1.3.6). It also sets the Maximum Packet Size property (MaxPacketSize).
// Brokers that authenticate otherwise (mosquitto with a password file)
// see the DID as the user name and ignore or refuse the token.
func Authenticate(cp *paho.Connect, key *did.PrivateKey, brokerURL string, now time.Time) error {
	aud, err := bearer.MQTTAudience(brokerURL)
	if err != nil {
		return err
	}
	tok, err := bearer.Issue(key, aud, now, TokenTTL)
	if err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	cp.Username, cp.UsernameFlag = key.DID().String(), true
	cp.Password, cp.PasswordFlag = []byte(tok), true
	if cp.Properties == nil {
		cp.Properties = &paho.ConnectProperties{}
	}
	max := uint32(MaxPacketSize)
	cp.Properties.MaximumPacketSize = &max
	return nil
}
