package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine started in these tests must be gone when they end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
