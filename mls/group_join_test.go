package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// passiveJoin is the decoded input of a passive-client case.
type passiveJoin struct {
	cfg     *Config
	welcome *Welcome
	kp      *KeyPackage
	keys    joinKeys
	tree    *RatchetTree
	auth    []byte
	// epochs are the Commits to follow after the join (only in
	// passive-client-handling-commit).
	epochs []vectorfmt.PassiveClientEpoch
}

// loadPassiveJoins decodes the passive-client vector file name.
func loadPassiveJoins(t testing.TB, name string) []*passiveJoin {
	t.Helper()
	cases := vectorCases[vectorfmt.PassiveClient](t, name)
	var out []*passiveJoin
	for _, c := range cases {
		psks := map[string][]byte{}
		for _, p := range c.ExternalPSKs {
			psks[string(p.PSKID)] = p.PSK
		}
		kpMsg, err := ParseMLSMessage(c.KeyPackage)
		if err != nil {
			t.Fatal(err)
		}
		wMsg, err := ParseMLSMessage(c.Welcome)
		if err != nil {
			t.Fatal(err)
		}
		j := &passiveJoin{
			cfg:     &Config{PSKs: ExternalPSKs(psks)},
			welcome: wMsg.Welcome,
			kp:      kpMsg.KeyPackage,
			keys: joinKeys{
				initPriv:       c.InitPriv,
				encryptionPriv: c.EncryptionPriv,
				sigPriv:        ed25519.NewKeyFromSeed(c.SignaturePriv),
			},
			auth:   c.InitialEpochAuthenticator,
			epochs: c.Epochs,
		}
		if c.RatchetTree != nil {
			if j.tree, err = ParseRatchetTree(c.RatchetTree); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, j)
	}
	return out
}

func (j *passiveJoin) join(t testing.TB) *Group {
	t.Helper()
	g, err := join(j.cfg, j.welcome, j.kp, j.keys, j.tree)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	return g
}

// TestPassiveClientWelcome joins with each case of
// passive-client-welcome.cs1.json: tree in the Welcome or out of band, with
// and without path secret and external PSK.
func TestPassiveClientWelcome(t *testing.T) {
	joins := loadPassiveJoins(t, "passive-client-welcome.cs1.json")
	if len(joins) != 8 {
		t.Fatalf("%d cases, want 8", len(joins))
	}
	for i, j := range joins {
		g := j.join(t)
		if !bytes.Equal(g.EpochAuthenticator(), j.auth) {
			t.Errorf("case %d: epoch_authenticator = %x, want %x", i, g.EpochAuthenticator(), j.auth)
		}
		if g.Member(g.LeafIndex()) == nil || !bytes.Equal(g.Member(g.LeafIndex()).SignatureKey, j.kp.LeafNode.SignatureKey) {
			t.Errorf("case %d: our leaf %d does not hold our KeyPackage", i, g.LeafIndex())
		}
		if s, _ := OpenWelcome(j.welcome, j.kp, j.keys.initPriv, j.cfg.PSKs); s.Secrets.PathSecret != nil && len(g.nodeKeys) < 2 {
			t.Errorf("case %d: a path secret gave no parent keys", i)
		}
	}
}

func TestJoinRejects(t *testing.T) {
	joins := loadPassiveJoins(t, "passive-client-welcome.cs1.json")
	withPSK, outOfBand := joins[2], joins[4]
	otherKP := *joins[0].kp
	otherKP.InitKey = bytes.Clone(joins[0].kp.InitKey)
	otherKP.InitKey[0] ^= 1
	tests := []struct {
		name string
		j    passiveJoin
		want error
	}{
		{"wrong init key", func() passiveJoin {
			j := *joins[0]
			j.keys.initPriv = bytes.Repeat([]byte{9}, 32)
			return j
		}(), ErrDecryption},
		{"not for this key package", func() passiveJoin { j := *joins[0]; j.kp = &otherKP; return j }(), ErrNotForUs},
		{"missing PSK", func() passiveJoin { j := *withPSK; j.cfg = &Config{}; return j }(), ErrMissingPSK},
		{"wrong PSK", func() passiveJoin {
			j := *withPSK
			j.cfg = &Config{PSKs: func(*PreSharedKeyID) ([]byte, error) { return []byte("wrong"), nil }}
			return j
		}(), ErrDecryption},
		{"no tree at all", func() passiveJoin { j := *outOfBand; j.tree = nil; return j }(), ErrInvalidWelcome},
		{"tree of another group", func() passiveJoin {
			j := *outOfBand
			j.tree = joins[0].join(t).RatchetTree()
			j.tree.nodes[0], j.tree.nodes[2] = j.tree.nodes[2], j.tree.nodes[0]
			return j
		}(), ErrInvalidWelcome},
		{"encryption key of someone else", func() passiveJoin {
			j := *joins[0]
			j.keys.encryptionPriv = bytes.Repeat([]byte{9}, 32)
			return j
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := join(tt.j.cfg, tt.j.welcome, tt.j.kp, tt.j.keys, tt.j.tree)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("join = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestApplicationMessages runs application messages between two copies of
// one joined member (the receiver's ratchet for that leaf is untouched).
func TestApplicationMessages(t *testing.T) {
	j := loadPassiveJoins(t, "passive-client-welcome.cs1.json")[0]
	alice, bob := j.join(t), j.join(t)
	var msgs []*MLSMessage
	for _, s := range []string{"m0", "m1", "m2", "m3"} {
		m, err := alice.EncryptApplication([]byte(s), []byte("ad-"+s))
		if err != nil {
			t.Fatal(err)
		}
		// Through the wire encoding, as a peer would see it.
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if m, err = ParseMLSMessage(b); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	steps := []struct {
		msg     int
		want    string
		wantErr error
	}{
		{2, "m2", nil}, {0, "m0", nil}, {0, "", ErrGenerationUsed}, {3, "m3", nil}, {1, "m1", nil}, {3, "", ErrGenerationUsed},
	}
	for _, s := range steps {
		am, err := bob.DecryptApplication(msgs[s.msg])
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("DecryptApplication(m%d) = %v, want %v", s.msg, err, s.wantErr)
		}
		if err == nil && (string(am.Data) != s.want || string(am.AuthenticatedData) != "ad-"+s.want || am.Sender != alice.LeafIndex()) {
			t.Errorf("DecryptApplication(m%d) = %+v", s.msg, am)
		}
	}
	// The sender cannot decrypt its own message: its key is gone.
	if _, err := alice.DecryptApplication(msgs[0]); !errors.Is(err, ErrGenerationUsed) {
		t.Errorf("sender decrypting its own message: %v, want ErrGenerationUsed", err)
	}
	// Another epoch is refused before any key is touched.
	m, _ := alice.EncryptApplication([]byte("x"), nil)
	m.PrivateMessage.Epoch++
	if _, err := bob.DecryptApplication(m); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("wrong epoch: %v, want ErrEpochMismatch", err)
	}
	m.PrivateMessage.Epoch--
	m.PrivateMessage.Ciphertext[len(m.PrivateMessage.Ciphertext)-1] ^= 1
	if _, err := bob.DecryptApplication(m); !errors.Is(err, ErrDecryption) {
		t.Errorf("tampered ciphertext: %v, want ErrDecryption", err)
	}
}

func TestDecryptApplicationRefusesHandshakes(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	alice, bob := cs[0], cs[1]
	prop, err := alice.g.Propose(&RemoveProposal{Removed: bob.g.LeafIndex()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.g.DecryptApplication(roundTrip(t, prop)); !errors.Is(err, errNotApplication) {
		t.Errorf("DecryptApplication(private proposal) = %v, want errNotApplication", err)
	}
	// The proposal was not consumed: ProcessMessage still accepts it.
	process(t, prop, bob)
	pub, err := alice.g.Propose(&RemoveProposal{Removed: bob.g.LeafIndex()}, &SendOptions{Public: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.g.DecryptApplication(pub); !errors.Is(err, errNotApplication) {
		t.Errorf("DecryptApplication(public proposal) = %v, want errNotApplication", err)
	}
	pub.PublicMessage.Content.ContentType = ContentTypeApplication
	if _, err := bob.g.DecryptApplication(pub); !errors.Is(err, errApplicationInPublic) {
		t.Errorf("DecryptApplication(public application) = %v, want errApplicationInPublic", err)
	}
}

func TestPSKRules(t *testing.T) {
	nonce := bytes.Repeat([]byte{1}, 32)
	reinit := PreSharedKeyID{Type: PSKTypeResumption, Usage: ResumptionPSKUsageReInit, PSKGroupID: []byte("g"), PSKEpoch: 3, Nonce: nonce}
	branch := reinit
	branch.Usage = ResumptionPSKUsageBranch
	ext := PreSharedKeyID{Type: PSKTypeExternal, PSKID: []byte("x"), Nonce: nonce}
	short := ext
	short.Nonce = nonce[:16]
	tests := []struct {
		name string
		ids  []PreSharedKeyID
		ok   bool
	}{
		{"none", nil, true},
		{"external and reinit", []PreSharedKeyID{ext, reinit}, true},
		{"reinit and branch", []PreSharedKeyID{reinit, branch}, false},
		{"short nonce", []PreSharedKeyID{short}, false},
	}
	for _, tt := range tests {
		if err := checkPSKIDs(tt.ids); (err == nil) != tt.ok {
			t.Errorf("checkPSKIDs(%s) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	if err := checkResumptionEpoch([]PreSharedKeyID{reinit}, 1); err != nil {
		t.Errorf("reinit PSK joining epoch 1: %v", err)
	}
	if err := checkResumptionEpoch([]PreSharedKeyID{branch}, 2); !errors.Is(err, ErrInvalidWelcome) {
		t.Errorf("branch PSK joining epoch 2: %v, want ErrInvalidWelcome", err)
	}
	lookup := ExternalPSKs(map[string][]byte{"x": []byte("secret")})
	if s, err := lookup(&ext); err != nil || string(s) != "secret" {
		t.Errorf("ExternalPSKs(x) = %q, %v", s, err)
	}
	if _, err := lookup(&reinit); !errors.Is(err, ErrMissingPSK) {
		t.Errorf("ExternalPSKs(resumption) = %v, want ErrMissingPSK", err)
	}
}

func TestOpenWelcomeSuiteChecks(t *testing.T) {
	j := loadPassiveJoins(t, "passive-client-welcome.cs1.json")[0]
	w := *j.welcome
	w.CipherSuite = 2
	if _, err := OpenWelcome(&w, j.kp, j.keys.initPriv, j.cfg.PSKs); !errors.Is(err, ErrUnsupportedCipherSuite) {
		t.Errorf("Welcome of suite 2: %v, want ErrUnsupportedCipherSuite", err)
	}
	o, err := OpenWelcome(j.welcome, j.kp, j.keys.initPriv, j.cfg.PSKs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.EpochAuthenticator(), j.auth) {
		t.Errorf("OpenedWelcome.EpochAuthenticator = %x, want %x", o.EpochAuthenticator(), j.auth)
	}
}
