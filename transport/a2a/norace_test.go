//go:build !race

package a2a

const raceEnabled = false
