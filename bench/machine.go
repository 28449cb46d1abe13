package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine is where the bench ran.
type Machine struct {
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Memory     string `json:"memory"`
	// Idle is how idle the CPUs were, in percent, over a second before the
	// first mode: other work on the machine shares them with every mode.
	Idle float64 `json:"cpu_idle_at_start_pct"`
}

func thisMachine() Machine {
	m := Machine{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), CPUModel: "unknown CPU", Memory: "unknown"}
	if v, ok := procField("/proc/cpuinfo", "model name"); ok {
		m.CPUModel = v
	}
	var kb int64
	if v, ok := procField("/proc/meminfo", "MemTotal"); ok {
		if _, err := fmt.Sscanf(v, "%d kB", &kb); err == nil {
			m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	m.Idle = idleCPU(time.Second)
	return m
}

// idleCPU is the share of the machine's CPU time, in percent, that was idle
// over the next d; -1 where /proc/stat cannot say.
func idleCPU(d time.Duration) float64 {
	read := func() (idle, total uint64, ok bool) {
		v, ok := procField("/proc/stat", "cpu")
		if !ok {
			return 0, 0, false
		}
		for i, f := range strings.Fields(v) {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
			total += n
		}
		return idle, total, true
	}
	i1, t1, ok1 := read()
	time.Sleep(d)
	i2, t2, ok2 := read()
	if !ok1 || !ok2 || t2 == t1 {
		return -1
	}
	return 100 * float64(i2-i1) / float64(t2-t1)
}

// procField is the value of the first "key: value" (or "key value") line of
// a /proc file.
func procField(file, key string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			k, v, ok = strings.Cut(line, " ")
		}
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
