//go:build race

package sessions_test

// raceEnabled is set under -race, whose instrumentation allocates on its
// own: TestDrainAllocsPerRecord does not count under it.
const raceEnabled = true
