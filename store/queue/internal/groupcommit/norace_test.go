//go:build !race

package groupcommit

const raceEnabled = false
