package image

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Written is what WriteFile wrote.
type Written struct {
	Tag          string
	Digest       string // the manifest's
	ConfigDigest string // the image id docker load shows
}

// WriteFile builds the image and writes it to path, named tag
// ("jetgate:<version>" when empty).
func WriteFile(ctx context.Context, o Options, path, tag string) (Written, error) {
	st, err := fill(ctx, o.Src, o.Stamp)
	if err != nil {
		return Written{}, err
	}
	o.Stamp = st
	if tag == "" {
		tag = "jetgate:" + st.Version
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return Written{}, err
	}
	img, err := Build(ctx, o)
	if err != nil {
		return Written{}, err
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return Written{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return Written{}, err
	}
	c, err := img.ConfigName()
	if err != nil {
		return Written{}, err
	}
	return Written{Tag: ref.String(), Digest: d.String(), ConfigDigest: c.String()}, nil
}
