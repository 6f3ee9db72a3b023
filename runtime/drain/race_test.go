//go:build race

package drain_test

// raceEnabled is set under -race, which makes the memory-budget drain
// several times slower.
const raceEnabled = true
