//go:build !unix

package bench

import "time"

// processCPU is not measured here: the report shows no CPU figures.
func processCPU() time.Duration { return 0 }
