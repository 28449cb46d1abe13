// Command image builds jetgate's container image and writes it as a tarball
// in the form `docker save` writes, for `docker load` or `podman load`:
//
//	scripts/image --out jetgate.tar [--platform linux/arm64] [--tag jetgate:dev]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/jetgate/jetgate/deploy/image"
)

func main() {
	var o image.Options
	var out, tag string
	flag.StringVar(&out, "out", "", "the tarball to write (required)")
	flag.StringVar(&o.Platform, "platform", "", "linux/amd64 or linux/arm64; default: the host's architecture")
	flag.StringVar(&tag, "tag", "", "the image's name in the tarball; default: jetgate:<git describe>")
	flag.StringVar(&o.Src, "src", ".", "the root of the jetgate repository")
	flag.Parse()
	if out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: scripts/image --out FILE [--platform linux/arm64] [--tag NAME:TAG]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := image.WriteFile(ctx, o, out, tag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s %s (image id %s)\n", out, res.Tag, res.Digest, res.ConfigDigest)
}
