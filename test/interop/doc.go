// Package interop holds Torpor's live interop tests and benchmarks against
// independent implementations, behind the integration build tag. ts-mls
// 1.6.4 runs as a peer process through test/interop/tsmls; the Node program
// it drives is in test/interop/node. See docs/interop.md.
package interop
