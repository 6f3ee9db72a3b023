//go:build race

package relay

// raceEnabled is set under -race, where sync.Pool drops what is put in
// it at random: the tests that count allocations skip.
const raceEnabled = true
