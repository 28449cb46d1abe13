//go:build !linux

package bench

import "time"

// pidCPU is not measured here: the report shows no NATS or gateway CPU.
func pidCPU(int) time.Duration { return 0 }
