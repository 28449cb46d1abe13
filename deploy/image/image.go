// Package image builds jetgate's container image with Go alone: the static
// binary on an empty base, user 65532, no shell. The same commit gives the
// same image, byte for byte: the binary is built with -trimpath and no build
// id, and every time in the image is the commit's.
package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// What the image is made of; the chart and the tests rely on these.
const (
	Binary  = "/usr/local/bin/jetgate"
	User    = "65532:65532"
	WorkDir = "/var/lib/jetgate" // the user's, for the embedded server's default data_dir
	GRPC    = "9090/tcp"
	HTTP    = "8080/tcp"
)

// Env listens on every address of the container, at the ports above: an
// explicit --grpc-addr or --http-addr still wins. jetgate refuses such
// addresses without authentication (configure auth, or pass
// --allow-unauthenticated knowingly).
var Env = []string{"PATH=/usr/local/bin", "JETGATE_GRPC_ADDR=:9090", "JETGATE_HTTP_ADDR=:8080"}

// Options say what to build.
type Options struct {
	// Src is the root of the jetgate repository.
	Src string
	// Platform is os/arch, linux/amd64 or linux/arm64; "" is linux and the
	// host's architecture.
	Platform string
	// Stamp is the version, commit and time; zero fields come from git
	// (GitStamp).
	Stamp Stamp
}

// Stamp names what was built.
type Stamp struct {
	Version  string
	Revision string
	Created  time.Time
}

// Build compiles jetgate for the platform and makes the image.
func Build(ctx context.Context, o Options) (v1.Image, error) {
	osName, arch, err := platform(o.Platform)
	if err != nil {
		return nil, err
	}
	st, err := fill(ctx, o.Src, o.Stamp)
	if err != nil {
		return nil, err
	}
	bin, err := compile(ctx, o.Src, osName, arch, st.Version)
	if err != nil {
		return nil, err
	}
	rootfs, err := rootFS(bin, st.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rootfs)), nil })
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		OS: osName, Architecture: arch, Created: v1.Time{Time: st.Created},
		Config: v1.Config{
			Entrypoint:   []string{Binary},
			Env:          Env,
			User:         User,
			WorkingDir:   WorkDir,
			ExposedPorts: map[string]struct{}{GRPC: {}, HTTP: {}},
			Labels:       Labels(st),
			StopSignal:   "SIGTERM",
		},
	}
	if arch == "arm64" {
		cfg.Variant = "v8"
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: st.Created}, CreatedBy: "scripts/image", Comment: "jetgate " + st.Version,
	}})
}

// Labels are the image's OCI annotations.
func Labels(st Stamp) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "jetgate",
		"org.opencontainers.image.description": "gRPC and REST gateway for NATS JetStream durable pull consumers",
		"org.opencontainers.image.version":     st.Version,
		"org.opencontainers.image.revision":    st.Revision,
		"org.opencontainers.image.created":     st.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/jetgate/jetgate",
	}
}

// platform splits os/arch; jetgate's image is for linux only.
func platform(p string) (osName, arch string, err error) {
	if p == "" {
		return "linux", runtime.GOARCH, nil
	}
	osName, arch, _ = strings.Cut(p, "/")
	arch, _, _ = strings.Cut(arch, "/") // a variant (arm64/v8) is implied
	if osName != "linux" || (arch != "amd64" && arch != "arm64") {
		return "", "", fmt.Errorf("platform %q: linux/amd64 or linux/arm64", p)
	}
	return osName, arch, nil
}

// fill completes st from git where it is zero.
func fill(ctx context.Context, src string, st Stamp) (Stamp, error) {
	if st.Version != "" && st.Revision != "" && !st.Created.IsZero() {
		return st, nil
	}
	g, err := GitStamp(ctx, src)
	if err != nil {
		return st, err
	}
	if st.Version == "" {
		st.Version = g.Version
	}
	if st.Revision == "" {
		st.Revision = g.Revision
	}
	if st.Created.IsZero() {
		st.Created = g.Created
	}
	return st, nil
}

// GitStamp is the commit checked out in src: git describe, the hash, and the
// commit time (SOURCE_DATE_EPOCH, if set, instead).
func GitStamp(ctx context.Context, src string) (Stamp, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", src}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var st Stamp
	var err error
	if st.Revision, err = git("rev-parse", "HEAD"); err != nil {
		return st, err
	}
	if st.Version, err = git("describe", "--tags", "--always", "--dirty"); err != nil {
		return st, err
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = git("log", "-1", "--format=%ct"); err != nil {
			return st, err
		}
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return st, fmt.Errorf("commit time %q: %w", epoch, err)
	}
	st.Created = time.Unix(sec, 0).UTC()
	return st, nil
}

// versionVar is the variable -X stamps, when the source has it.
const versionVar = "github.com/jetgate/jetgate/app.version"

var declaresVersion = regexp.MustCompile(`(?m)^var version string`)

// ldflags strip the binary and stamp the version, if app/version.go
// declares the variable for it.
func ldflags(src, version string) string {
	flags := "-s -w -buildid="
	if b, err := os.ReadFile(filepath.Join(src, "app", "version.go")); err == nil && declaresVersion.Match(b) {
		flags += " -X " + versionVar + "=" + version
	}
	return flags
}

// compile builds the static binary and returns its bytes.
func compile(ctx context.Context, src, osName, arch, version string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "jetgate-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "jetgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags="+ldflags(src, version), "-o", out, "./cmd/jetgate")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch, "GOFLAGS=-mod=readonly", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/jetgate for %s/%s: %w\n%s", osName, arch, err, stderr.String())
	}
	return os.ReadFile(out)
}
