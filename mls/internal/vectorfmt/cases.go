package vectorfmt

// CryptoBasics is a case of crypto-basics: the labelled primitives of RFC
// 9420, Sections 5.1 and 5.2, DeriveTreeSecret (Section 9) and
// EncryptWithLabel (Section 5.1.3).
type CryptoBasics struct {
	CipherSuite uint16 `json:"cipher_suite"`
	RefHash     struct {
		Label      string
		Value, Out HexBytes
	} `json:"ref_hash"`
	ExpandWithLabel struct {
		Secret  HexBytes
		Label   string
		Context HexBytes
		Length  int
		Out     HexBytes
	} `json:"expand_with_label"`
	DeriveSecret struct {
		Secret HexBytes
		Label  string
		Out    HexBytes
	} `json:"derive_secret"`
	DeriveTreeSecret struct {
		Secret     HexBytes
		Label      string
		Generation uint32
		Length     int
		Out        HexBytes
	} `json:"derive_tree_secret"`
	SignWithLabel struct {
		Priv, Pub, Content HexBytes
		Label              string
		Signature          HexBytes
	} `json:"sign_with_label"`
	EncryptWithLabel struct {
		Priv, Pub          HexBytes
		Label              string
		Context, Plaintext HexBytes
		KEMOutput          HexBytes `json:"kem_output"`
		Ciphertext         HexBytes
	} `json:"encrypt_with_label"`
}

// Deserialization is a case of deserialization: a variable-length vector
// header and the length it encodes (RFC 9420, Section 2.1.2).
type Deserialization struct {
	Header HexBytes `json:"vlbytes_header"`
	Length uint64   `json:"length"`
}

// Messages is a case of messages: one encoded RFC 9420 structure per field
// (mls_welcome, mls_key_package, commit, ratchet_tree, ...), each to decode
// and re-encode byte for byte.
type Messages map[string]HexBytes

// KeySchedule is a case of key-schedule (RFC 9420, Sections 8, 8.1, 8.3
// and 8.5).
type KeySchedule struct {
	CipherSuite       uint16             `json:"cipher_suite"`
	GroupID           HexBytes           `json:"group_id"`
	InitialInitSecret HexBytes           `json:"initial_init_secret"`
	Epochs            []KeyScheduleEpoch `json:"epochs"`
}

// KeyScheduleEpoch is one epoch of a KeySchedule case.
type KeyScheduleEpoch struct {
	TreeHash                HexBytes `json:"tree_hash"`
	CommitSecret            HexBytes `json:"commit_secret"`
	PSKSecret               HexBytes `json:"psk_secret"`
	ConfirmedTranscriptHash HexBytes `json:"confirmed_transcript_hash"`
	GroupContext            HexBytes `json:"group_context"`
	JoinerSecret            HexBytes `json:"joiner_secret"`
	WelcomeSecret           HexBytes `json:"welcome_secret"`
	InitSecret              HexBytes `json:"init_secret"`
	SenderDataSecret        HexBytes `json:"sender_data_secret"`
	EncryptionSecret        HexBytes `json:"encryption_secret"`
	ExporterSecret          HexBytes `json:"exporter_secret"`
	EpochAuthenticator      HexBytes `json:"epoch_authenticator"`
	ExternalSecret          HexBytes `json:"external_secret"`
	ConfirmationKey         HexBytes `json:"confirmation_key"`
	MembershipKey           HexBytes `json:"membership_key"`
	ResumptionPSK           HexBytes `json:"resumption_psk"`
	ExternalPub             HexBytes `json:"external_pub"`
	Exporter                struct {
		Label   string   `json:"label"`
		Context HexBytes `json:"context"`
		Length  int      `json:"length"`
		Secret  HexBytes `json:"secret"`
	} `json:"exporter"`
}

// MessageProtection is a case of message-protection (RFC 9420, Sections 6.2
// and 6.3).
type MessageProtection struct {
	CipherSuite             uint16   `json:"cipher_suite"`
	GroupID                 HexBytes `json:"group_id"`
	Epoch                   uint64   `json:"epoch"`
	TreeHash                HexBytes `json:"tree_hash"`
	ConfirmedTranscriptHash HexBytes `json:"confirmed_transcript_hash"`
	SignaturePriv           HexBytes `json:"signature_priv"`
	SignaturePub            HexBytes `json:"signature_pub"`
	EncryptionSecret        HexBytes `json:"encryption_secret"`
	SenderDataSecret        HexBytes `json:"sender_data_secret"`
	MembershipKey           HexBytes `json:"membership_key"`
	Proposal                HexBytes `json:"proposal"`
	ProposalPub             HexBytes `json:"proposal_pub"`
	ProposalPriv            HexBytes `json:"proposal_priv"`
	Commit                  HexBytes `json:"commit"`
	CommitPub               HexBytes `json:"commit_pub"`
	CommitPriv              HexBytes `json:"commit_priv"`
	Application             HexBytes `json:"application"`
	ApplicationPriv         HexBytes `json:"application_priv"`
}

// PassiveClient is a case of passive-client-welcome and
// passive-client-handling-commit: a client joins by Welcome and follows the
// group's Commits.
type PassiveClient struct {
	CipherSuite               uint16               `json:"cipher_suite"`
	ExternalPSKs              []ExternalPSK        `json:"external_psks"`
	KeyPackage                HexBytes             `json:"key_package"`
	SignaturePriv             HexBytes             `json:"signature_priv"`
	EncryptionPriv            HexBytes             `json:"encryption_priv"`
	InitPriv                  HexBytes             `json:"init_priv"`
	Welcome                   HexBytes             `json:"welcome"`
	RatchetTree               HexBytes             `json:"ratchet_tree"`
	InitialEpochAuthenticator HexBytes             `json:"initial_epoch_authenticator"`
	Epochs                    []PassiveClientEpoch `json:"epochs"`
}

// ExternalPSK is an external pre-shared key a PassiveClient has.
type ExternalPSK struct {
	PSKID HexBytes `json:"psk_id"`
	PSK   HexBytes `json:"psk"`
}

// PassiveClientEpoch is one epoch of a PassiveClient case: the proposals
// and the Commit that end it, and the next epoch's authenticator.
type PassiveClientEpoch struct {
	Proposals          []HexBytes `json:"proposals"`
	Commit             HexBytes   `json:"commit"`
	EpochAuthenticator HexBytes   `json:"epoch_authenticator"`
}

// PSKSecret is a case of psk_secret (RFC 9420, Section 8.4).
type PSKSecret struct {
	CipherSuite uint16 `json:"cipher_suite"`
	PSKs        []struct {
		PSKID    HexBytes `json:"psk_id"`
		PSK      HexBytes `json:"psk"`
		PSKNonce HexBytes `json:"psk_nonce"`
	} `json:"psks"`
	PSKSecret HexBytes `json:"psk_secret"`
}

// SecretTree is a case of secret-tree (RFC 9420, Sections 6.3.2 and 9).
type SecretTree struct {
	CipherSuite      uint16   `json:"cipher_suite"`
	EncryptionSecret HexBytes `json:"encryption_secret"`
	SenderData       struct {
		SenderDataSecret HexBytes `json:"sender_data_secret"`
		Ciphertext       HexBytes `json:"ciphertext"`
		Key              HexBytes `json:"key"`
		Nonce            HexBytes `json:"nonce"`
	} `json:"sender_data"`
	// Leaves holds, for each leaf, the keys of some generations.
	Leaves [][]SecretTreeGeneration `json:"leaves"`
}

// SecretTreeGeneration is the handshake and application key and nonce of
// one generation of a leaf's ratchets.
type SecretTreeGeneration struct {
	Generation       uint32   `json:"generation"`
	HandshakeKey     HexBytes `json:"handshake_key"`
	HandshakeNonce   HexBytes `json:"handshake_nonce"`
	ApplicationKey   HexBytes `json:"application_key"`
	ApplicationNonce HexBytes `json:"application_nonce"`
}

// TranscriptHashes is a case of transcript-hashes (RFC 9420, Section 8.2).
type TranscriptHashes struct {
	CipherSuite                  uint16   `json:"cipher_suite"`
	ConfirmationKey              HexBytes `json:"confirmation_key"`
	AuthenticatedContent         HexBytes `json:"authenticated_content"`
	InterimTranscriptHashBefore  HexBytes `json:"interim_transcript_hash_before"`
	ConfirmedTranscriptHashAfter HexBytes `json:"confirmed_transcript_hash_after"`
	InterimTranscriptHashAfter   HexBytes `json:"interim_transcript_hash_after"`
}

// TreeMath is a case of tree-math (RFC 9420, Section 4.2 and Appendix C);
// a nil entry is a node without that relative.
type TreeMath struct {
	NLeaves uint32    `json:"n_leaves"`
	NNodes  uint32    `json:"n_nodes"`
	Root    uint32    `json:"root"`
	Left    []*uint32 `json:"left"`
	Right   []*uint32 `json:"right"`
	Parent  []*uint32 `json:"parent"`
	Sibling []*uint32 `json:"sibling"`
}

// TreeOperations is a case of tree-operations: a proposal applied to a
// ratchet tree (RFC 9420, Section 12.1).
type TreeOperations struct {
	CipherSuite    uint16   `json:"cipher_suite"`
	TreeBefore     HexBytes `json:"tree_before"`
	Proposal       HexBytes `json:"proposal"`
	ProposalSender uint32   `json:"proposal_sender"`
	TreeHashBefore HexBytes `json:"tree_hash_before"`
	TreeAfter      HexBytes `json:"tree_after"`
	TreeHashAfter  HexBytes `json:"tree_hash_after"`
}

// TreeValidation is a case of tree-validation: resolutions and tree hashes
// of every node (RFC 9420, Sections 4.1.2 and 7.8).
type TreeValidation struct {
	CipherSuite uint16     `json:"cipher_suite"`
	Tree        HexBytes   `json:"tree"`
	GroupID     HexBytes   `json:"group_id"`
	Resolutions [][]uint32 `json:"resolutions"`
	TreeHashes  []HexBytes `json:"tree_hashes"`
}

// TreeKEM is a case of treekem (RFC 9420, Sections 7.4 to 7.6).
type TreeKEM struct {
	CipherSuite             uint16              `json:"cipher_suite"`
	GroupID                 HexBytes            `json:"group_id"`
	Epoch                   uint64              `json:"epoch"`
	ConfirmedTranscriptHash HexBytes            `json:"confirmed_transcript_hash"`
	RatchetTree             HexBytes            `json:"ratchet_tree"`
	LeavesPrivate           []TreeKEMLeaf       `json:"leaves_private"`
	UpdatePaths             []TreeKEMUpdatePath `json:"update_paths"`
}

// TreeKEMLeaf is the private state of one leaf of a TreeKEM case.
type TreeKEMLeaf struct {
	Index          uint32   `json:"index"`
	EncryptionPriv HexBytes `json:"encryption_priv"`
	SignaturePriv  HexBytes `json:"signature_priv"`
	PathSecrets    []struct {
		Node       uint32   `json:"node"`
		PathSecret HexBytes `json:"path_secret"`
	} `json:"path_secrets"`
}

// TreeKEMUpdatePath is an UpdatePath of a TreeKEM case with what each leaf
// must derive from it.
type TreeKEMUpdatePath struct {
	Sender        uint32     `json:"sender"`
	UpdatePath    HexBytes   `json:"update_path"`
	PathSecrets   []HexBytes `json:"path_secrets"`
	CommitSecret  HexBytes   `json:"commit_secret"`
	TreeHashAfter HexBytes   `json:"tree_hash_after"`
}

// Welcome is a case of welcome (RFC 9420, Section 12.4.3.1).
type Welcome struct {
	CipherSuite uint16   `json:"cipher_suite"`
	InitPriv    HexBytes `json:"init_priv"`
	SignerPub   HexBytes `json:"signer_pub"`
	KeyPackage  HexBytes `json:"key_package"`
	Welcome     HexBytes `json:"welcome"`
}
