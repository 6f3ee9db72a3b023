//go:build race

package queue

// raceEnabled is set under -race, where sync.Pool drops what is put in
// it at random: the tests that count allocations skip.
const raceEnabled = true
