package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the gateway starts must be gone when its tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
