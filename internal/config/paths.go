package config

import "path/filepath"

// resolvePaths makes every relative file or directory the file names
// relative to the file's own directory, not the working directory, so that
// `jetgate check-config --config jetgate/examples/push.yaml` reads the same
// files from anywhere. Flags, applied after, keep the working directory's.
func resolvePaths(c *Config, dir string) {
	for _, p := range paths(c) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// paths are the fields of c that name a file or directory.
func paths(c *Config) []*string {
	ps := []*string{&c.NATS.Creds, &c.NATS.TLS.CA, &c.NATS.TLS.Cert, &c.NATS.TLS.Key, &c.Embedded.DataDir,
		&c.Listen.TLS.Cert, &c.Listen.TLS.Key, &c.Listen.TLS.ClientCA}
	for i := range c.Tokens.KeyFiles {
		ps = append(ps, &c.Tokens.KeyFiles[i])
	}
	if c.Auth.JWT != nil {
		ps = append(ps, &c.Auth.JWT.JWKSFile)
	}
	for i := range c.Consumers {
		p := c.Consumers[i].Push
		if p == nil {
			continue
		}
		ps = append(ps, &p.SigningSecretFile, &p.BearerTokenFile)
		if p.TLS != nil {
			ps = append(ps, &p.TLS.CA, &p.TLS.Cert, &p.TLS.Key)
		}
	}
	return ps
}
