//go:build !(386 || arm || mips || mipsle)

package store

const (
	defaultMaxSize  = 4 << 30
	maxMapSize      = 1 << 40
	initialMmapSize = 16 << 20
)
