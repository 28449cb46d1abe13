package replica

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a replica starts must be gone when its tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
