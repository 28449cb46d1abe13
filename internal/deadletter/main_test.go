package deadletter

import (
	"testing"

	"go.uber.org/goleak"
)

// The worker's consume loop must be gone when its tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
