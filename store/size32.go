//go:build 386 || arm || mips || mipsle

package store

const (
	defaultMaxSize  = 256 << 20
	maxMapSize      = 1 << 30 // well below bbolt's 2 GB cap, leaving address space to remap
	initialMmapSize = 8 << 20
)
