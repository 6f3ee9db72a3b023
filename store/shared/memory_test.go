package shared_test

import (
	"testing"

	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/shared/sharedtest"
)

// TestMemoryContract runs the contract against Memory: the stores one
// test opens are the same Memory, as one relay's memories are.
func TestMemoryContract(t *testing.T) {
	sharedtest.Run(t, func(t *testing.T) sharedtest.Opener {
		m := shared.NewMemory()
		return func(t *testing.T) shared.Store { return m }
	})
}
