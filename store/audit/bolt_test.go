package audit_test

import (
	"testing"

	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/audit/audittest"
	"github.com/torpor-dev/torpor/store/storetest"
)

func TestBoltContract(t *testing.T) {
	audittest.Run(t, storetest.InDir("audit.db", func(path string) (audit.Store, error) {
		return audit.OpenBolt(path, audittest.Max)
	}))
}
