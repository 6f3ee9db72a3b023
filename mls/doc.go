// Package mls implements the Messaging Layer Security protocol, RFC 9420,
// for the one cipher suite Torpor speaks: 0x0001,
// MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519. It rests on the standard
// library (crypto/hpke, crypto/hkdf, crypto/hmac, crypto/ed25519,
// crypto/aes) and golang.org/x/crypto/cryptobyte, and is proved against the
// MLS working group's test vectors in mls/testdata (see mls/vectors and
// "torporctl mls-vectors").
//
// # Wire format
//
// Every structure of the RFC has a strict codec (RFC 9420, Section 2.1):
// non-minimal variable-size length headers, the reserved 0b11 prefix,
// truncated input, trailing bytes, unknown enum values in a select and
// duplicate extension types are rejected with a *ParseError ("mls: parsing
// Welcome: …"), which matches ErrMalformed. Unknown extension, credential and
// proposal types, and GREASE values (Section 13.5), round-trip byte for
// byte; the bodies of unknown credentials and proposals are carried as
// opaque<V>, as other implementations do.
//
// # Implemented, by RFC 9420 section
//
//   - 2.1 presentation language and variable-size vectors (mls/internal/wire)
//   - 4.2 and Appendix C tree math (mls/internal/treemath)
//   - 6 message framing structures: MLSMessage, PublicMessage, PrivateMessage,
//     FramedContent, AuthenticatedContent, FramedContentTBS, SenderData
//   - 7.1, 7.2 ParentNode, LeafNode, Capabilities, Lifetime, Extension
//   - 8.1 GroupContext; 8.4 PreSharedKeyID
//   - 10 KeyPackage; 12.1 all proposals; 12.4 Commit, ProposalOrRef;
//     7.6 UpdatePath, HPKECiphertext; 12.4.3 GroupInfo, Welcome,
//     GroupSecrets, EncryptedGroupSecrets, PathSecret
//   - 12.1.8.1 external_senders (a vector of ExternalSender);
//     11.1 required_capabilities; 12.4.3.2 external_pub;
//     12.4.3.3 ratchet_tree
package mls
