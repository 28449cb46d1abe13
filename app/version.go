package app

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version is the release, stamped at build time with
// -ldflags "-X github.com/jetgate/jetgate/app.version=v1.2.3"; unset, the
// module's version or the commit the binary was built from stands.
var version string

// Version is this binary's version: the stamped release, else the module
// version Go recorded (a `go install …@v1.2.3`), else "devel" with the
// commit and whether the tree had changes.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += "+" + rev[:min(12, len(rev))]
		if dirty {
			v += "-dirty"
		}
	}
	return v
}

// buildInfo is jetgate_build_info{version, go_version}, always 1.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "jetgate_build_info",
		Help:        "The version of jetgate and of Go it was built with; always 1.",
		ConstLabels: prometheus.Labels{"version": Version(), "go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}
